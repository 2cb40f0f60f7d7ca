"""What History says about a run beyond run.json: its best arm, and its cells counted by the one
rule every view that counts from files uses (analysis/counting.py: a cell is ok when every
measurement planned for it is ok, skipped when the user skipped one and none failed).

Read in History's background worker, one run at a time, newest first: the list is usable first.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dspark_tui.results import load_run
from dspark_tui.results.store import LoadedRun

# History's best-arm column for a run that stopped early or lacks arms: no arm is "best" of a
# comparison that did not happen. A whole run with failed cells keeps its best arm, marked.
INCOMPLETE = "incomplete"
FAILED_MARK = " !"


@dataclass(frozen=True)
class RunFacts:
    best: str  # `st=5 10/18`, `tie 4/5`, `—`, `incomplete`, `st=5 9/18 !` (failed cells)
    cells_ok: int
    skipped: int  # cells the user skipped (and none of whose measurements failed)
    # Cells measured ok in some of their planned measurements, not all (a sweep aborted in its
    # second round: 0 cells ok, yet every cell has its first): the plan tree's ◐.
    partial: int = 0


def run_facts(path: Path) -> RunFacts:
    from dspark_tui.analysis.counting import cell_outcomes
    from dspark_tui.analysis.measurements import measurements_of
    from dspark_tui.model.outcome import CellCounts

    run = load_run(path)
    outcomes = cell_outcomes(run)
    counts = CellCounts.of(outcomes.values())
    measured = {m.key for m in measurements_of(run) if m.ok}
    partial = sum(1 for key, outcome in outcomes.items() if outcome != "ok" and key in measured)
    return RunFacts(best=best_column(run), cells_ok=counts.ok, skipped=counts.skipped,
                    partial=partial)


def best_column(run: LoadedRun) -> str:
    """The best arm by the verdicts, unless the run is incomplete (analysis/completeness.py):
    aborted, interrupted or failed, or finished without an arm → `incomplete`; failed cells
    in an otherwise whole run → the best arm marked ` !` (which cells: the report's first
    line)."""
    from dspark_tui.analysis.completeness import completeness
    from dspark_tui.analysis.verdicts import best_arm_line
    from dspark_tui.report.outputs import run_verdicts

    found = completeness(run)
    if found.stopped or (found.status == "completed" and found.missing_arms):
        return INCOMPLETE
    best = best_arm_line(run_verdicts(run))
    return best + FAILED_MARK if found.failed else best
