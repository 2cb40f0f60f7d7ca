"""The run's cells counted across rounds (model/outcome.py's rule) from what its directory
holds: the measurements planned (the plan's rounds x repeats, plus the adaptive rounds its
runner announced) against the measurement records saved."""

from __future__ import annotations

import contextlib

from dspark_tui.analysis.layout import RunLayout, layout_of, plan_snapshot
from dspark_tui.analysis.measurements import measurements_of
from dspark_tui.model import CellKey
from dspark_tui.model.events import RoundPlanned, parse_event
from dspark_tui.model.outcome import CellCounts, CellOutcome, cell_outcome
from dspark_tui.results.jsonl import read_complete_lines
from dspark_tui.results.store import LoadedRun, RunStore

_ADAPTIVE_MARK = b'"round_planned"'


def cell_outcomes(run: LoadedRun, layout: RunLayout | None = None) -> dict[CellKey, CellOutcome]:
    """Every cell of the grid (and any other cell a record names) with its outcome."""
    layout = layout if layout is not None else layout_of(run)
    announced, planned = _adaptive_per_cell(run)
    base = _base_slots(run) if announced else 1
    statuses: dict[CellKey, list[str]] = {}
    for m in measurements_of(run):
        statuses.setdefault(m.key, []).append(m.status)
    keys = list(dict.fromkeys([*layout.expected, *statuses]))
    return {key: cell_outcome(base + planned.get(key, 0), statuses.get(key, []))
            for key in keys}


def cell_counts(run: LoadedRun, layout: RunLayout | None = None) -> CellCounts:
    return CellCounts.of(cell_outcomes(run, layout).values())


def _base_slots(run: LoadedRun) -> int:
    """Measurements the plan itself asks of every cell: rounds x repeats (1 without a plan).
    Only for runs our runner made: an imported or transcribed run (sample_results/) carries
    today's plan, not the one its numbers were measured under, and is one measurement a cell."""
    plan = plan_snapshot(run.manifest.plan)
    return plan.bench.rounds * plan.bench.repeats if plan is not None else 1


def _adaptive_per_cell(run: LoadedRun) -> tuple[bool, dict[CellKey, int]]:
    """Whether a runner announced rounds, and the measurements its adaptive rounds added per
    cell. Only the round_planned lines of events.jsonl are parsed: the file is mostly metrics
    samples."""
    announced = False
    added: dict[CellKey, int] = {}
    rounds_seen: set[int] = set()  # a resume announces a round again
    lines: list[bytes] = []
    with contextlib.suppress(OSError):
        lines, _ = read_complete_lines(RunStore(run.path).events_path, 0)
    for line in lines:
        if _ADAPTIVE_MARK not in line:
            continue
        try:
            event = parse_event(line.strip())
        except ValueError:
            continue
        if not isinstance(event, RoundPlanned):
            continue
        announced = True
        if event.reason != "adaptive" or event.round in rounds_seen:
            continue
        rounds_seen.add(event.round)
        for arm in event.arms:
            for scenario, concurrency in event.cells:
                key = CellKey(arm=arm, scenario=scenario, concurrency=concurrency)
                added[key] = added.get(key, 0) + event.repeats
    return announced, added


def start_failure(run: LoadedRun) -> str | None:
    """Why the server never started, when no measurement of the run got a server: the reason
    of the first measurement the runner failed for it (`failure` "server_start"); None
    otherwise."""
    measurements = measurements_of(run)
    if any(m.ok or m.server is not None for m in measurements):
        return None
    return next((m.failure_reason for m in measurements if m.failure == "server_start"), None)
