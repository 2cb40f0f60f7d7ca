"""The box's session-to-session noise, pooled from earlier runs, as a prior for the next plan.

An A-vs-A run (two identical arms, several rounds) is the cleanest source: every difference
between its sessions is noise. Runs of real comparisons work too — the session term is
estimated after the arms' own differences are fitted away — as long as they ran on the same box.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from dspark_tui.analysis.verdicts import run_verdicts
from dspark_tui.model import UserError
from dspark_tui.results.store import LoadedRun


@dataclass(frozen=True)
class PooledNoise:
    sd: float
    df: int
    source: str

    def toml_line(self) -> str:
        return (f'session_noise_prior = {{ sd = {self.sd:.4f}, df = {self.df}, '
                f'source = "{self.source}" }}')


def pooled_session_noise(runs: Sequence[LoadedRun]) -> PooledNoise:
    """Session variance of the paired log ratio, each pair of each run weighted by its R - 1
    degrees of freedom (a prior's own contribution is left out, so no prior counts twice)."""
    total, df, names = 0.0, 0, []
    for run in runs:
        verdicts = run_verdicts(run)
        used = False
        for noise in verdicts.noise:
            # A server never restarted has no session spread to lend (its rounds are not sessions).
            if (noise.session_sd is None or noise.rounds < 2 or noise.prior
                    or not noise.session_replication):
                continue
            total += (noise.rounds - 1) * noise.session_sd**2
            df += noise.rounds - 1
            used = True
        if used:
            names.append(run.path.name)
    if df == 0:
        raise UserError("none of these runs has two or more rounds of both arms; run a plan with "
                        "rounds >= 2 (an A-vs-A plan of two identical arms is best) first")
    return PooledNoise(math.sqrt(total / df), df, "pooled from " + ", ".join(names))
