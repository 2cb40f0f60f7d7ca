"""The run's cells counted across rounds (model/outcome.py's rule) from what its directory
holds: the measurements planned (model/planned.py's fold of the plan and the rounds its runner
announced) against the measurement records saved."""

from __future__ import annotations

from collections.abc import Callable

from dspark_tui.analysis.layout import RunLayout, layout_of, plan_snapshot
from dspark_tui.analysis.measurements import measurements_of
from dspark_tui.model import CellKey
from dspark_tui.model.outcome import CellCounts, CellOutcome, cell_outcome
from dspark_tui.model.planned import PlannedMeasurements, RoundPlan, rounds_of
from dspark_tui.results.store import LoadedRun, RunStore


def cell_outcomes(run: LoadedRun, layout: RunLayout | None = None) -> dict[CellKey, CellOutcome]:
    """Every cell of the grid (and any other cell a record names) with its outcome."""
    layout = layout if layout is not None else layout_of(run)
    planned = planned_per_cell(run)
    statuses: dict[CellKey, list[str]] = {}
    for m in measurements_of(run):
        statuses.setdefault(m.key, []).append(m.status)
    keys = list(dict.fromkeys([*layout.expected, *statuses]))
    return {key: cell_outcome(planned(key), statuses.get(key, [])) for key in keys}


def cell_counts(run: LoadedRun, layout: RunLayout | None = None) -> CellCounts:
    return CellCounts.of(cell_outcomes(run, layout).values())


def planned_per_cell(run: LoadedRun) -> Callable[[CellKey], int]:
    """Measurements planned per cell: the plan snapshot's rounds x repeats and the adaptive
    rounds its runner announced. Only for runs our runner made (it announces its rounds): an
    imported or transcribed run (sample_results/) carries today's plan, not the one its numbers
    were measured under, and is one measurement a cell (plus any adaptive round announced)."""
    announced = RunStore(run.path).read_round_plans()
    plan = plan_snapshot(run.manifest.plan) if announced else None
    if plan is None:
        added = PlannedMeasurements.of_rounds(
            RoundPlan.of_event(e) for e in announced if e.reason == "adaptive")
        return lambda key: 1 + added.count(key)
    planned = PlannedMeasurements.of_rounds(rounds_of(plan, announced))
    base = plan.bench.rounds * plan.bench.repeats  # a cell the plan does not name
    return lambda key: planned.count(key) if key in planned.slots else base



def start_failure(run: LoadedRun) -> str | None:
    """Why the server never started, when no measurement of the run got a server: the reason
    of the first measurement the runner failed for it (`failure` "server_start"); None
    otherwise."""
    measurements = measurements_of(run)
    if any(m.ok or m.server is not None for m in measurements):
        return None
    return next((m.failure_reason for m in measurements if m.failure == "server_start"), None)
