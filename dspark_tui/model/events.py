"""The one event stream: the runner emits these; the TUI, the headless printer and
`events.jsonl` consume them. Each is one JSON object on one line, told apart by `kind`."""

from __future__ import annotations

import time
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from dspark_tui.model.cell import CellKey, CellResult
from dspark_tui.model.greedy import GreedyVerdict
from dspark_tui.model.statistics import StatisticsSettings

ServerState = Literal[
    "starting", "loading", "warming_up", "ready", "stopping", "stopped", "failed", "restarting"
]
RunStatus = Literal["running", "completed", "failed", "aborted", "interrupted"]


class _Event(BaseModel):
    model_config = ConfigDict(extra="ignore")

    t: float = Field(default_factory=time.time)


class RunStarted(_Event):
    kind: Literal["run_started"] = "run_started"
    run_dir: str
    name: str
    arms: list[str]
    total_cells: int
    resumed_cells: int = 0
    # The plan's statistics keys (model/statistics.py): a watcher's live verdicts use the run's
    # own settings. None: a run from before the key (RunState.settings gives the old defaults).
    statistics: StatisticsSettings | None = None


class RunFinished(_Event):
    kind: Literal["run_finished"] = "run_finished"
    status: RunStatus
    done: int
    failed: int
    total: int
    message: str = ""


class OnLane(_Event):
    """An event of one server session. `lane` (1 … bench.parallel) tells apart the rounds that
    run at once on nodes of their own; None when rounds run one at a time (every run before)."""

    lane: int | None = None


class ServerStateChanged(OnLane):
    kind: Literal["server_state"] = "server_state"
    arm: str
    state: ServerState
    message: str = ""
    pid: int | None = None
    round: int | None = None  # with a lane: the round the server serves (a lane moves on)


class ServerLog(OnLane):
    kind: Literal["server_log"] = "server_log"
    arm: str
    line: str


class CellStarted(OnLane):
    """One measurement of a cell begins: round and repeat say which (1, 1 for single-shot runs);
    index/total count measurements (cell runs) planned so far, adaptive rounds included."""

    kind: Literal["cell_started"] = "cell_started"
    key: CellKey
    num_prompts: int
    index: int
    total: int
    round: int = 1
    repeat: int = 1


class CellProgress(OnLane):
    """Live client-side numbers for the running cell; a newer one supersedes an older one."""

    kind: Literal["cell_progress"] = "cell_progress"
    key: CellKey
    completed: int
    total: int
    failed: int = 0
    output_tok_s: float | None = None
    ttft_p50_ms: float | None = None
    ttft_p99_ms: float | None = None
    tpot_p50_ms: float | None = None
    tpot_p99_ms: float | None = None
    # The native client's health so far (model/client_health.py): its event loop's lag p99 over
    # the last seconds, and the share of token gaps read together with the previous token.
    client_lag_p99_ms: float | None = None
    same_read_fraction: float | None = None
    mean_itl_ms: float | None = None  # the mean inter-token gap so far, the lag's scale


class MetricsSample(OnLane):
    """One /metrics scrape turned into rates and gauges (None: not exported, or a gap)."""

    kind: Literal["metrics_sample"] = "metrics_sample"
    arm: str
    key: CellKey | None = None
    running: float | None = None
    waiting: float | None = None
    kv_usage: float | None = None
    generation_tok_s: float | None = None
    prompt_tok_s: float | None = None
    preemptions: float | None = None
    acceptance_length: float | None = None
    acceptance_rate: float | None = None
    gpu_util: float | None = None
    gpu_memory_mib: float | None = None
    gpu_power_w: float | None = None
    gap: bool = False


class CellFinished(_Event):
    kind: Literal["cell_finished"] = "cell_finished"
    result: CellResult


class _CellUnmeasured(_Event):
    """A measurement of a cell that ended without a result, and why. `kind` is declared here so
    that it stays the second key of the line, after `t`, as it was before this base."""

    kind: str
    key: CellKey
    reason: str
    round: int = 1
    repeat: int = 1


class CellFailed(_CellUnmeasured):
    kind: Literal["cell_failed"] = "cell_failed"


class CellSkipped(_CellUnmeasured):
    kind: Literal["cell_skipped"] = "cell_skipped"


class RoundPlanned(_Event):
    """The runner decided to measure a round: the planned ones at the start, and each adaptive
    one (only the cells still unsure). A resume replays these to continue the same schedule."""

    kind: Literal["round_planned"] = "round_planned"
    round: int
    arms: list[str]  # in the order this round runs them (alternating from round to round)
    cells: list[tuple[str, int]]  # (scenario, concurrency); every arm measures each
    reason: Literal["planned", "adaptive"] = "planned"
    repeats: int = 1
    # An arm with `cells` in the plan (model/plan.Arm.cells) measures only these of the round's
    # cells; the other arms measure all of them. Empty: every arm measures every cell.
    arm_cells: dict[str, list[tuple[str, int]]] = Field(default_factory=dict)
    message: str = ""


class SessionStarted(OnLane):
    """A server session began serving measurements (one per server start of an arm)."""

    kind: Literal["session_started"] = "session_started"
    arm: str
    round: int
    session: str
    node: str | None = None


class RunControl(_Event):
    """The runner acknowledging a control request (pause, resume, skip, abort, retry)."""

    kind: Literal["run_control"] = "run_control"
    action: str
    message: str = ""


class GreedyChecked(_Event):
    """An arm answered the greedy check's prompts in a session (docs/greedy.md); `verdicts`, once
    every arm has answered, compare each arm with the reference arm."""

    kind: Literal["greedy_checked"] = "greedy_checked"
    arm: str
    session: str
    prompts: int
    seconds: float
    control_differs: int = 0  # prompts whose two answers in this session differ
    failed: int = 0  # prompts that got no answer
    verdicts: list[GreedyVerdict] | None = None


class Notice(_Event):
    kind: Literal["notice"] = "notice"
    level: Literal["info", "warning", "error"] = "info"
    message: str


Event = Annotated[
    RunStarted
    | RunFinished
    | ServerStateChanged
    | ServerLog
    | CellStarted
    | CellProgress
    | MetricsSample
    | CellFinished
    | CellFailed
    | CellSkipped
    | RoundPlanned
    | SessionStarted
    | RunControl
    | GreedyChecked
    | Notice,
    Field(discriminator="kind"),
]

_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


def parse_event(line: str | bytes) -> Event:
    return _ADAPTER.validate_json(line)


def event_json(event: Event) -> str:
    return event.model_dump_json(exclude_none=True)


# events.jsonl keeps the live numbers of CellProgress and MetricsSample to the decimals the
# screens print them with (tui/widgets/cell_panel.py: the panel's TTFT and TPOT, each sparkline's
# latest value): a number rounded to the decimals it is printed with prints the same digits.
# output_tok_s is printed with 1 decimal and with none (the tok/s sparkline, printer.py), and a
# number rounded for one could print otherwise with the other, so it is kept whole. Those no
# screen prints: a tenth of a token a second, 4 decimals of a fraction. Times to the millisecond;
# a field at its default (failed 0, gap false) is left out, as None is: readers take the default.
# Every other kind is written whole (event_json).
_FILE_DECIMALS: dict[str, dict[str, int]] = {
    "cell_progress": {"ttft_p50_ms": 1, "ttft_p99_ms": 1, "tpot_p50_ms": 2, "tpot_p99_ms": 2,
                      "client_lag_p99_ms": 1, "same_read_fraction": 2,
                      "mean_itl_ms": 2},
    "metrics_sample": {"running": 0, "waiting": 0, "kv_usage": 2, "acceptance_length": 2,
                       "gpu_util": 0, "gpu_memory_mib": 0, "gpu_power_w": 0,
                       "generation_tok_s": 1, "prompt_tok_s": 1, "preemptions": 0,
                       "acceptance_rate": 4},
}
_FILE_DEFAULTS: dict[str, dict[str, object]] = {
    "cell_progress": {"failed": 0},
    "metrics_sample": {"gap": False},
}


def file_json(event: Event) -> str:
    """The line events.jsonl keeps of `event`: event_json, live numbers shortened (above)."""
    decimals = _FILE_DECIMALS.get(event.kind)
    if decimals is None:
        return event_json(event)
    update: dict[str, object] = {"t": round(event.t, 3)}
    for name, digits in decimals.items():
        value = getattr(event, name)
        if value is not None:
            update[name] = round(value, digits)
    left_out = {name for name, default in _FILE_DEFAULTS[event.kind].items()
                if getattr(event, name) == default}
    return event.model_copy(update=update).model_dump_json(exclude_none=True, exclude=left_out)
