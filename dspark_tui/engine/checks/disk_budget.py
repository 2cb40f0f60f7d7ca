"""Will the plan's output fit on the disk? An estimate from the scenario sizes, checked before a run.

A measurement leaves its cell file, a results.csv row, its raw client output (sized by its
requests and their tokens, per driver: docs/results-format.md "The native raw file"), its /metrics series
and the events it adds to events.jsonl; the last two grow with its duration, which nothing knows
before the server runs, so it is estimated at a slow decode pace (the requests in waves of
`concurrency`, each wave as long as its mean output at DECODE_TOKENS_PER_S), which errs on the
large side. Each server session adds its log, counted at its cap (`server.log_max_bytes`: a
flooding server fills it, and the cap is what bounds it) plus the server_log events its stats
lines add to events.jsonl. The constants were measured on the demo run and on
bench/raw_size.py's cells (2026-12-01). A resume is checked on what is left to measure.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Sequence
from pathlib import Path

from dspark_tui.engine.schedule import Schedule, SlotState, rounds_from_events
from dspark_tui.model import CellSpec, Plan, UserError
from dspark_tui.model.planned import PlannedMeasurements, planned_rounds
from dspark_tui.results import RunStore
from dspark_tui.results.run_size import format_size

DECODE_TOKENS_PER_S = 20.0  # per stream: slower than any served model we measured, so more bytes
RUN_FIXED_BYTES = 200_000  # run.json, reports, analysis.json, schedule.json
MEASUREMENT_FIXED_BYTES = 4_000 + 1_000 + 2_500  # cell file, results.csv row, its start/finish events
PROGRESS_BYTES_PER_S = 2 * 300  # cell_progress lines: at most 2 a second (event_sink.FILE_PROGRESS_EVERY_S)
SAMPLE_BYTES = 300 + 150  # a metrics_sample event and a series row, per scrape
LOG_CUT_LINE_BYTES = 1_000  # the line a cut log says it was cut with (log_relay.marker)
SESSION_LOG_BYTES_PER_S = 50  # vLLM's periodic stats lines, as server_log events
NATIVE_BYTES_PER_REQUEST = 200  # one raw line (~170 B measured)
NATIVE_BYTES_PER_KEPT_ITL = 2.5  # keep_itl: compressed microseconds (~2 B measured)
SGLANG_BYTES_PER_REQUEST = 500  # its per-request lists...
SGLANG_BYTES_PER_TOKEN = 25  # ...with every ITL as JSON text and the generated text
VLLM_BYTES_PER_REQUEST = 100  # latencies and queue times
CLI_FIXED_BYTES = 30_000  # the result's summary and the CLI's own log


def _mean_length(full_len: int, range_ratio: float) -> float:
    """The mean of sglang's draw, uniform in [max(1, int(L * r)), L]."""
    return (max(int(full_len * range_ratio), 1) + full_len) / 2


def measurement_seconds(cell: CellSpec) -> float:
    """The measurement's wall time at the slow pace this estimate assumes."""
    waves = math.ceil(cell.num_prompts / cell.key.concurrency)
    return waves * _mean_length(cell.output_len, cell.range_ratio) / DECODE_TOKENS_PER_S


def raw_bytes(cell: CellSpec, driver: str, keep_itl: bool) -> float:
    """The bench client's own output for one measurement of `cell`."""
    requests = cell.num_prompts
    tokens = requests * _mean_length(cell.output_len, cell.range_ratio)
    if driver == "native":
        # at most a chunk (so a kept gap) per token: a K=0 arm's worst case
        kept = tokens * NATIVE_BYTES_PER_KEPT_ITL if keep_itl else 0.0
        return 1_000 + requests * NATIVE_BYTES_PER_REQUEST + kept
    if driver == "sglang":
        return CLI_FIXED_BYTES + requests * SGLANG_BYTES_PER_REQUEST + tokens * SGLANG_BYTES_PER_TOKEN
    return CLI_FIXED_BYTES + requests * VLLM_BYTES_PER_REQUEST


def measurement_bytes(cell: CellSpec, plan: Plan) -> float:
    bench = plan.bench
    seconds = measurement_seconds(cell)
    return (MEASUREMENT_FIXED_BYTES + raw_bytes(cell, bench.driver, bench.keep_itl)
            + seconds * (PROGRESS_BYTES_PER_S + SAMPLE_BYTES / bench.scrape_interval_s))


def _planned(plan: Plan) -> PlannedMeasurements:
    """What the plan measures before any adaptive round (model/planned.py)."""
    return PlannedMeasurements.of_rounds(planned_rounds(plan))


def planned_measurements(plan: Plan) -> int:
    """Cells x rounds x repeats: what the plan measures before any adaptive round."""
    return _planned(plan).total


def expected_output_bytes(plan: Plan, measurements: Sequence[CellSpec] | None = None,
                          sessions: int | None = None) -> int:
    """The bytes a run of `plan` writes as planned (adaptive rounds not counted), or, given,
    for these measurements (a cell once per measurement) in that many server sessions."""
    bench = plan.bench
    if measurements is None:
        specs = {cell.key: cell for cell in plan.cells()}
        measurements = [specs[key] for key, slots in _planned(plan).slots.items()
                        for _ in slots]
        sessions = len(plan.arms) * bench.rounds
    written = sum(measurement_bytes(cell, plan) for cell in measurements)
    serving_seconds = sum(measurement_seconds(cell) for cell in measurements)  # every session
    per_log = plan.server.log_max_bytes + LOG_CUT_LINE_BYTES
    logs = (sessions or 0) * per_log + serving_seconds * SESSION_LOG_BYTES_PER_S
    return math.ceil(RUN_FIXED_BYTES + written + logs)


def measurements_left(plan: Plan, store: RunStore) -> tuple[list[CellSpec], int]:
    """What a resume of the run in `store` still measures (every slot not saved ok, adaptive
    rounds already planned included), and in how many server sessions."""
    schedule = Schedule(plan, rounds_from_events(plan, store.read_events()), store.done_slots())
    specs = {cell.key: cell for cell in plan.cells()}
    left = [slot for slot, state in schedule.state.items() if state != SlotState.OK]
    return [specs[key] for key, _, _ in left], len({(rnd, key.arm) for key, rnd, _ in left})


def free_bytes(results_root: Path) -> tuple[Path, int]:
    """The free bytes where `results_root` is (or will be created), and the folder measured."""
    folder = results_root.expanduser().absolute()
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder, shutil.disk_usage(folder).free


def check_disk(plan: Plan, results_root: str | Path) -> list[str]:
    """One line when the plan's expected output does not fit in the free space; else none."""
    needed = expected_output_bytes(plan)
    try:
        folder, free = free_bytes(Path(results_root))
    except OSError as exc:
        return [f"results folder {results_root}: cannot tell the free space ({exc.strerror or exc})"]
    if needed <= free:
        return []
    return [f"not enough disk space: the plan writes about {format_size(needed)} "
            f"({planned_measurements(plan)} measurements, logs included) and {folder} has "
            f"{format_size(free)} free"]


def check_disk_to_resume(plan: Plan, store: RunStore) -> list[str]:
    """check_disk for a run directory that exists (a resume, or a new run's runner): what is
    left to measure against the free space of the run's own folder."""
    cells, sessions = measurements_left(plan, store)
    if not cells:
        return []
    needed = expected_output_bytes(plan, cells, sessions)
    try:
        folder, free = free_bytes(store.path)
    except OSError as exc:
        return [f"run folder {store.path}: cannot tell the free space ({exc.strerror or exc})"]
    if needed <= free:
        return []
    return [f"not enough disk space for the {len(cells)} measurements left: they write about "
            f"{format_size(needed)} (logs included) and {folder} has {format_size(free)} free"]


def refuse_resume_without_room(store: RunStore, plan: Plan | None = None) -> None:
    """Raise UserError (one line) when what is left of the run does not fit; nothing is started.
    Without `plan`, the run.json snapshot's (its masked secrets do not change any size)."""
    if plan is None:
        try:
            plan = Plan.model_validate(store.read_manifest().plan)
        except ValueError:
            return  # the runner says in one line what is wrong with the snapshot
    if problems := check_disk_to_resume(plan, store):
        raise UserError(f"{problems[0]} — free some space, then resume the run")
