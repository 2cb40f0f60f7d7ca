"""What History says about a run beyond run.json: its best arm, and its ok cells counted the
way the runner counts them (a cell is ok when every measurement planned for it is ok).

Read in History's background worker, one run at a time, newest first: the list is usable first.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dspark_tui.model import Plan
from dspark_tui.model.events import RoundPlanned, parse_event
from dspark_tui.model.run_state import RunState
from dspark_tui.results import load_run
from dspark_tui.results.jsonl import read_complete_lines
from dspark_tui.results.store import LoadedRun

try:  # the one wording of a run's end (the live screens' helper, in model/)
    from dspark_tui.model.run_status import run_status_label
except ImportError:  # until that helper is merged: the same rule, here
    def run_status_label(status: str, *, skipped: int = 0) -> str:
        return f"completed, {skipped} skipped" if status == "completed" and skipped > 0 else status


@dataclass(frozen=True)
class RunFacts:
    best: str  # `st=5 10/18`, `tie 4/5`, `—`
    cells_ok: int
    skipped: int  # cells the user skipped (and none of whose measurements failed)


def run_facts(path: Path) -> RunFacts:
    from dspark_tui.report.outputs import run_verdicts
    from dspark_tui.report.verdicts import best_arm_line

    run = load_run(path)
    state = folded(run)
    return RunFacts(best=best_arm_line(run_verdicts(run)), cells_ok=state.cells_done,
                    skipped=skipped_cells(state))


def ok_cells(run: LoadedRun) -> int:
    """Cells whose every planned measurement is ok."""
    return folded(run).cells_done


def skipped_cells(state: RunState) -> int:
    """Cells with a measurement the user skipped and none failed (the live screens' rule)."""
    return sum(1 for cell in state.cells.values()
               if not cell.failed_count
               and any(m.phase == "skipped" for m in cell.measurements.values()))


def folded(run: LoadedRun) -> RunState:
    """The plan's cells, the rounds the runner announced (adaptive ones included) and the saved
    measurements, folded as the run screen folds them."""
    state = RunState()
    try:
        state.expect_cells(cell.key for cell in Plan.model_validate(run.manifest.plan).cells())
    except ValueError:
        pass
    for event in _round_events(run.path):
        state.apply(event)
    for measurement in run.measurements:
        state.add_saved(measurement)
    return state


def _round_events(path: Path) -> list[RoundPlanned]:
    """Only the rounds: a long run's log is mostly samples and log lines, not parsed here."""
    try:
        lines, _ = read_complete_lines(path / "events.jsonl", 0)
    except OSError:
        return []
    rounds: list[RoundPlanned] = []
    for line in lines:
        if b"\"round_planned\"" not in line:
            continue
        try:
            event = parse_event(line.strip())
        except ValueError:
            continue
        if isinstance(event, RoundPlanned):
            rounds.append(event)
    return rounds


def status_label(status: str, skipped: int = 0) -> str:
    """`completed, 1 skipped` for a completed run with user skips; other statuses as they are."""
    return run_status_label(status, skipped=skipped)
