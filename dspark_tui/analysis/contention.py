"""Whether the box was busy during a run (issue 22: "contention is in the noise model or
flagged"). Two records a run keeps say so:

- the benchmark client's own health in every native measurement (model/client_health.py): a
  measurement marked `behind` had its client starved (a late event loop and merged reads);
- the simulator's server log: it writes "the simulator fell N s behind its model" when the CPU
  could not keep its modelled clock (sim/engine.py), so that session served less than modelled.

What the intervals already hold: a busy spell that slows whole sessions moves one arm's
session offset in that round, and the session term measures that spread (docs/statistics.md).
What they do not: a spell inside one session that slows some cells and not others of the same
arm is not modelled as session noise (its cells' residuals absorb part of it). The summary
names the records, so a reader knows the box was contended while the run measured.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dspark_tui.analysis.completeness import is_simulated
from dspark_tui.analysis.measurements import measurements_of
from dspark_tui.results.store import LoadedRun

SIM_BEHIND = re.compile(r"the simulator fell ([0-9.]+) s behind its model")
_MARK = "behind its model"


@dataclass(frozen=True)
class Contention:
    client_behind: int  # ok measurements whose client fell behind
    client_measured: int  # ok measurements with the client's health
    sim_sessions_behind: int  # server logs in which the simulator fell behind its model
    sim_sessions: int  # server logs read
    sim_behind_s: float  # the largest lag one session reported

    @property
    def contended(self) -> bool:
        return self.client_behind > 0 or self.sim_sessions_behind > 0


def contention(run: LoadedRun) -> Contention:
    measured = [m for m in measurements_of(run) if m.ok and m.client is not None]
    behind = sum(1 for m in measured if m.client_behind)
    logs_dir = run.path / "logs"
    # Only the simulator writes the line looked for: a real server's logs are not read.
    simulated = is_simulated(run.manifest) and logs_dir.is_dir()
    logs = sorted(logs_dir.glob("server-*.log")) if simulated else []
    sessions_behind, worst = 0, 0.0
    for path in logs:
        lags = []
        try:
            with path.open(encoding="utf-8", errors="replace") as lines:
                lags = [float(m.group(1)) for line in lines if _MARK in line
                        if (m := SIM_BEHIND.search(line)) is not None]
        except OSError:
            continue
        if lags:
            sessions_behind += 1
            worst = max(worst, max(lags))
    return Contention(behind, len(measured), sessions_behind, len(logs), worst)
