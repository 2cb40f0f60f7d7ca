"""What History says about a run beyond run.json: its best arm, and its cells counted by the one
rule every view that counts from files uses (analysis/counting.py: a cell is ok when every
measurement planned for it is ok, skipped when the user skipped one and none failed).

Read in History's background worker, one run at a time, newest first: the list is usable first.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dspark_tui.results import load_run


@dataclass(frozen=True)
class RunFacts:
    best: str  # `st=5 10/18`, `tie 4/5`, `—`
    cells_ok: int
    skipped: int  # cells the user skipped (and none of whose measurements failed)


def run_facts(path: Path) -> RunFacts:
    from dspark_tui.analysis.counting import cell_counts
    from dspark_tui.analysis.verdicts import best_arm_line
    from dspark_tui.report.outputs import run_verdicts

    run = load_run(path)
    counts = cell_counts(run)
    return RunFacts(best=best_arm_line(run_verdicts(run)), cells_ok=counts.ok,
                    skipped=counts.skipped)
