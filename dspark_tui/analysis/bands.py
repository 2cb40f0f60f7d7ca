"""What each concurrency band may be said to favour, counting every compared cell of the band,
decided or not: one false win among unsure cells must not become "deploy".

An arm is a band's answer only when it wins more than half of the band's cells (not only of its
decided ones) AND the band's own interval shows it faster than every other arm (issue 22:
`verdicts.group_verdict`, the interval of the band's mean log ratio, which holds at one cell's
level however many cells the band has; counting cells cannot, a run's few false winners can
make a majority of a small band). A majority the band's interval does not confirm is
NOT_SHOWN, and the summary says so with that interval. "even" only when more than half are
ties; with half or fewer of the cells decided the band is "not decided", and the unsure cells'
leaders say which way it leans. With single measurements every cell counts as decided and
there is no interval (the seed's rule, one measurement a cell). The summary, the findings'
heading and the recommendations all read this one rule.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

from dspark_tui.analysis import frames as fr
from dspark_tui.analysis.verdicts import (
    SINGLE,
    WINS,
    GroupVerdict,
    RunVerdicts,
    family_alpha,
    group_verdict,
)

UNDECIDED = "undecided"
# Whether an arm was planned at a cell (scenario, concurrency): RunLayout.plans.
Planned = Callable[[str, tuple[str, int]], bool]
NOT_SHOWN = "not shown"  # a majority of the band's cells, not confirmed by the band's interval


@dataclass(frozen=True)
class BandAnswer:
    band: str  # frames.BANDS id
    concurrencies: list[int]  # every compared concurrency of the band
    cells: int  # compared cells, decided or not
    decided: int
    ties: int
    wins: dict[str, int]  # decided wins per arm
    verdict: str  # an arm, frames.EVEN, frames.MIXED or UNDECIDED
    lean: dict[str, int] = field(default_factory=dict)  # unsure cells per point leader
    lean_margins: dict[str, tuple[float, float]] = field(default_factory=dict)  # their range
    # NOT_SHOWN: the majority arm and the band's interval of it over the arm it was least shown
    # faster than (GroupVerdict.b is the majority arm, a the other).
    majority: str | None = None
    band_interval: GroupVerdict | None = None

    @property
    def unsure(self) -> int:
        return self.cells - self.decided


def band_answers(winners: pd.DataFrame, decided: pd.DataFrame, unsure: pd.DataFrame,
                 arms: list[str], verdicts: RunVerdicts | None = None,
                 planned: Planned | None = None) -> list[BandAnswer]:
    """One answer per band with compared cells, in band order. `winners` holds every compared
    cell, `decided` and `unsure` split it by verdict (RunAnalysis); `verdicts` gives the band's
    own interval (none: the majority rule alone, as for single measurements)."""
    out = []
    for band in fr.BANDS:
        every = winners[winners["band"] == band.id] if not winners.empty else winners
        if every.empty:
            continue
        sure = decided[decided["band"] == band.id] if not decided.empty else decided
        open_cells = unsure[unsure["band"] == band.id] if not unsure.empty else unsure
        ties, wins = fr.ties_and_wins(sure, arms)
        cells, count = len(every), len(sure)
        lean: dict[str, int] = {}
        margins: dict[str, tuple[float, float]] = {}
        for leader, margin in zip(open_cells["winner"].tolist(), open_cells["margin"].tolist(),
                                  strict=True):
            lean[leader] = lean.get(leader, 0) + 1
            low, high = margins.get(leader, (margin, margin))
            margins[leader] = (min(low, margin), max(high, margin))
        verdict = majority_verdict(cells, count, ties, wins)
        majority, weakest = None, None
        if verdict in arms and verdicts is not None:
            keys = list(zip(every["scenario"], every["concurrency"].astype(int), strict=True))
            weakest = band_interval_against(verdicts, keys, verdict, arms, planned)
            if weakest is not None:
                majority, verdict = verdict, NOT_SHOWN
        out.append(BandAnswer(
            band=band.id,
            concurrencies=sorted(int(c) for c in every["concurrency"].unique()),
            cells=cells, decided=count, ties=ties, wins=wins, verdict=verdict,
            lean=dict(sorted(lean.items(), key=lambda kv: -kv[1])), lean_margins=margins,
            majority=majority, band_interval=weakest))
    return out


def band_interval_against(verdicts: RunVerdicts, keys: list[tuple[str, int]], arm: str,
                          arms: list[str], planned: Planned | None = None) -> GroupVerdict | None:
    """None when the band's interval shows `arm` faster than every other arm over `keys` (or
    the band has single measurements only: no interval to ask); else the band's interval of
    `arm` / the other (GroupVerdict b = arm) against the arm it is least shown faster than.

    `arm` was picked for leading the band among `arms`, so its comparisons with the others are
    a family: each cell's interval at decision.family_alpha (the look's level with two arms),
    as every other "best" among K arms (issue 22)."""
    weakest: GroupVerdict | None = None
    alpha = family_alpha(verdicts.settings.look_alpha, len(arms)) if len(arms) > 2 else None
    for other in arms:
        if other == arm:
            continue
        # Over the cells the other arm was planned at: one that plans a few (`cells`) is
        # compared there, not found missing everywhere else (a failed cell still counts).
        keys_of = [key for key in keys if planned is None or planned(other, key)]
        pairs = [p for key in keys_of if (p := verdicts.pair(key[0], key[1], arm, other)) is not None]
        if not pairs or all(p.verdict == SINGLE for p in pairs):
            continue
        group = group_verdict(verdicts, keys_of, other, arm, alpha=alpha)  # ratio arm / other
        if group is None or (group.verdict == WINS and group.winner == arm):
            continue
        if weakest is None or (group.ci_low or 0.0) < (weakest.ci_low or 0.0):
            weakest = group
    return weakest


def majority_verdict(cells: int, decided: int, ties: int, wins: dict[str, int]) -> str:
    """The rule of this module for any group of `cells` compared cells, `decided` of them
    decided with `ties` ties and `wins` per arm (a band, a workload group)."""
    among_decided = fr.verdict(decided, ties, wins)
    if among_decided in wins and wins[among_decided] * 2 > cells:
        return among_decided
    if among_decided == fr.EVEN and ties * 2 > cells:
        return fr.EVEN
    if decided * 2 <= cells or among_decided != fr.MIXED:
        return UNDECIDED
    return fr.MIXED


def uniform_arm(answers: list[BandAnswer], arms: list[str]) -> str | None:
    """The arm that is the answer of every band (more than one band), else None: only then may
    a sentence say it "wins in every concurrency band"."""
    verdicts = {a.verdict for a in answers}
    if len(answers) > 1 and len(verdicts) == 1:
        (only,) = verdicts
        return only if only in arms else None
    return None
