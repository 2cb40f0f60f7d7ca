"""What a watcher knows about a run, folded from its event stream.

A pure reducer with no UI or I/O, so the live TUI, an attached TUI, a replay and the headless
printer all see the same state from the same events. Buffers are bounded: a run of many hours
must not grow the watcher's memory.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from dspark_tui.model.cell import CellKey, CellResult, CellStatus
from dspark_tui.model.events import (
    CellFailed,
    CellFinished,
    CellProgress,
    CellSkipped,
    CellStarted,
    Event,
    MetricsSample,
    Notice,
    RunControl,
    RunFinished,
    RunStarted,
    ServerLog,
    ServerStateChanged,
)

CellPhase = Literal["pending", "running", "done", "failed", "skipped"]

SERIES_LENGTH = 120
LOG_TAIL_LENGTH = 400
NOTICE_LENGTH = 50

# Sparkline series, in display order.
SERIES_NAMES = (
    "tok_s",
    "kv_usage",
    "running",
    "waiting",
    "acceptance_length",
    "gpu_util",
    "gpu_memory_mib",
    "gpu_power_w",
)

# Server states in which the log's last line is the thing to watch (weights loading, graphs).
_LOADING_STATES = {"starting", "loading", "warming_up", "restarting"}


@dataclass
class ArmState:
    name: str
    server_state: str = "pending"
    message: str = ""
    progress_line: str = ""
    pid: int | None = None
    starting_t: float | None = None
    startup_s: float | None = None  # how long its server took from start to ready


@dataclass
class CellState:
    key: CellKey
    phase: CellPhase = "pending"
    total_tok_s: float | None = None
    reason: str = ""
    result: CellResult | None = None
    started_t: float | None = None
    finished_t: float | None = None


@dataclass
class CurrentCell:
    """The running cell's live client numbers; a newer progress event replaces the older one."""

    key: CellKey
    num_prompts: int
    index: int
    total: int
    started_t: float
    completed: int = 0
    failed: int = 0
    output_tok_s: float | None = None
    ttft_p50_ms: float | None = None
    ttft_p99_ms: float | None = None
    tpot_p50_ms: float | None = None
    tpot_p99_ms: float | None = None

    @property
    def fraction(self) -> float:
        return self.completed / self.num_prompts if self.num_prompts else 0.0


@dataclass
class LogLine:
    arm: str
    line: str


@dataclass
class RunState:
    """Everything the run screen shows. `version` grows on every change so views redraw lazily."""

    run_dir: str = ""
    name: str = ""
    status: str = "waiting"
    message: str = ""
    paused: bool = False
    arms: dict[str, ArmState] = field(default_factory=dict)
    cells: dict[CellKey, CellState] = field(default_factory=dict)
    current: CurrentCell | None = None
    total: int = 0
    resumed: int = 0
    started_t: float | None = None
    finished_t: float | None = None
    last_t: float | None = None
    series: dict[str, deque[float]] = field(
        default_factory=lambda: {name: deque(maxlen=SERIES_LENGTH) for name in SERIES_NAMES}
    )
    log_tail: deque[LogLine] = field(default_factory=lambda: deque(maxlen=LOG_TAIL_LENGTH))
    notices: deque[Notice] = field(default_factory=lambda: deque(maxlen=NOTICE_LENGTH))
    log_count: int = 0  # lines ever seen, so a view can tell how many of the tail are new
    version: int = 0

    # -- seeding ---------------------------------------------------------------------------

    def expect_cells(self, keys: Iterable[CellKey]) -> None:
        """Cells the plan will run, so the tree can show them pending before they start."""
        for key in keys:
            if key not in self.cells:
                self.cells[key] = CellState(key=key)
            if key.arm not in self.arms:
                self.arms[key.arm] = ArmState(name=key.arm)
        self.total = max(self.total, len(self.cells))
        self.version += 1

    def add_saved(self, result: CellResult) -> None:
        """A cell file already on disk (a resumed or attached run) counts as finished."""
        self._finish(result, t=None)
        self.version += 1

    # -- folding ---------------------------------------------------------------------------

    def apply_all(self, events: Iterable[Event]) -> None:
        for event in events:
            self.apply(event)

    def apply(self, event: Event) -> None:
        self.last_t = event.t
        if isinstance(event, RunStarted):
            self._on_run_started(event)
        elif isinstance(event, ServerStateChanged):
            arm = self._arm(event.arm)
            arm.server_state = event.state
            arm.message = event.message
            arm.pid = event.pid if event.pid is not None else arm.pid
            if event.state == "starting":
                arm.starting_t = event.t
            if event.state == "ready":
                arm.progress_line = ""
                if arm.starting_t is not None and arm.startup_s is None:
                    arm.startup_s = event.t - arm.starting_t
        elif isinstance(event, ServerLog):
            self.log_tail.append(LogLine(event.arm, event.line))
            self.log_count += 1
            arm = self._arm(event.arm)
            if arm.server_state in _LOADING_STATES and event.line.strip():
                arm.progress_line = event.line.strip()
        elif isinstance(event, CellStarted):
            self._on_cell_started(event)
        elif isinstance(event, CellProgress):
            self._on_progress(event)
        elif isinstance(event, MetricsSample):
            self._on_sample(event)
        elif isinstance(event, CellFinished):
            self._finish(event.result, t=event.t)
        elif isinstance(event, CellFailed):
            self._end_cell(event.key, "failed", event.reason, event.t)
            cell = self.cells[event.key]
            if cell.result is None:
                cell.result = CellResult(arm=event.key.arm, scenario=event.key.scenario,
                                         concurrency=event.key.concurrency,
                                         status=CellStatus.FAILED, error=event.reason)
        elif isinstance(event, CellSkipped):
            self._end_cell(event.key, "skipped", event.reason, event.t)
        elif isinstance(event, RunControl):
            if event.action == "pause":
                self.paused = True
            elif event.action in ("resume", "abort"):
                self.paused = False
            self.message = event.message or event.action
        elif isinstance(event, Notice):
            self.notices.append(event)
        elif isinstance(event, RunFinished):
            self.status = event.status
            self.finished_t = event.t
            self.message = event.message
            self.paused = False
            self.current = None
            for cell in self.cells.values():
                if cell.phase == "running":
                    cell.phase = "pending"
        self.version += 1

    def _on_run_started(self, event: RunStarted) -> None:
        self.run_dir = event.run_dir
        self.name = event.name
        self.status = "running"
        self.finished_t = None
        if self.started_t is None:
            self.started_t = event.t
        self.total = max(event.total_cells, len(self.cells))
        self.resumed = event.resumed_cells
        for name in event.arms:
            self._arm(name)

    def _on_cell_started(self, event: CellStarted) -> None:
        cell = self._cell(event.key)
        cell.phase = "running"
        cell.reason = ""
        cell.started_t = event.t
        self.current = CurrentCell(
            key=event.key,
            num_prompts=event.num_prompts,
            index=event.index,
            total=event.total,
            started_t=event.t,
        )
        self.total = max(self.total, event.total)
        for samples in self.series.values():
            samples.clear()

    def _on_progress(self, event: CellProgress) -> None:
        current = self.current
        if current is None or current.key != event.key:
            return
        current.completed = event.completed
        current.num_prompts = event.total or current.num_prompts
        current.failed = event.failed
        for name in ("output_tok_s", "ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms"):
            value = getattr(event, name)
            if value is not None:
                setattr(current, name, value)
        if event.output_tok_s is not None:
            self.series["tok_s"].append(event.output_tok_s)

    def _on_sample(self, event: MetricsSample) -> None:
        if event.gap:
            return
        pairs = (
            ("kv_usage", event.kv_usage),
            ("running", event.running),
            ("waiting", event.waiting),
            ("acceptance_length", event.acceptance_length),
            ("gpu_util", event.gpu_util),
            ("gpu_memory_mib", event.gpu_memory_mib),
            ("gpu_power_w", event.gpu_power_w),
        )
        for name, value in pairs:
            if value is not None:
                self.series[name].append(value)

    def _finish(self, result: CellResult, t: float | None) -> None:
        cell = self._cell(result.key)
        cell.result = result
        cell.finished_t = t
        cell.total_tok_s = result.total_throughput
        if result.status == CellStatus.OK:
            cell.phase = "done"
            cell.reason = ""
        elif result.status == CellStatus.SKIPPED:
            cell.phase = "skipped"
            cell.reason = result.error or "skipped"
        else:
            cell.phase = "failed"
            cell.reason = result.error or "failed"
        self._clear_current(result.key)

    def _end_cell(self, key: CellKey, phase: CellPhase, reason: str, t: float) -> None:
        cell = self._cell(key)
        cell.phase = phase
        cell.reason = reason
        cell.finished_t = t
        self._clear_current(key)

    def _clear_current(self, key: CellKey) -> None:
        if self.current is not None and self.current.key == key:
            self.current = None

    def _arm(self, name: str) -> ArmState:
        arm = self.arms.get(name)
        if arm is None:
            arm = self.arms[name] = ArmState(name=name)
        return arm

    def _cell(self, key: CellKey) -> CellState:
        cell = self.cells.get(key)
        if cell is None:
            cell = self.cells[key] = CellState(key=key)
            self._arm(key.arm)
            self.total = max(self.total, len(self.cells))
        return cell

    # -- derived ---------------------------------------------------------------------------

    def count(self, phase: CellPhase) -> int:
        return sum(1 for cell in self.cells.values() if cell.phase == phase)

    @property
    def done(self) -> int:
        return self.count("done")

    @property
    def failed(self) -> int:
        return self.count("failed")

    @property
    def skipped(self) -> int:
        return self.count("skipped")

    @property
    def finished(self) -> bool:
        return self.status not in ("waiting", "running")

    @property
    def failed_cells(self) -> list[CellState]:
        return [cell for cell in self.cells.values() if cell.phase == "failed"]

    def results(self) -> list[CellResult]:
        return [cell.result for cell in self.cells.values() if cell.result is not None]

    def elapsed(self, now: float) -> float:
        if self.started_t is None:
            return 0.0
        end = self.finished_t if self.finished_t is not None else now
        return max(0.0, end - self.started_t)

    def eta(self, now: float) -> float | None:
        """Seconds left, from the mean wall time of cells this watcher saw run; None until one did."""
        if self.finished:
            return 0.0
        timed = [
            cell.finished_t - cell.started_t
            for cell in self.cells.values()
            if cell.started_t is not None and cell.finished_t is not None
        ]
        if not timed:
            return None
        per_cell = sum(timed) / len(timed)
        ended = self.done + self.failed + self.skipped
        remaining = max(0, self.total - ended)
        eta = remaining * per_cell
        if self.current is not None:
            eta -= min(per_cell, max(0.0, now - self.current.started_t))
        return max(0.0, eta) + self._startups_left()

    def _startups_left(self) -> float:
        """Servers still to start (arms with pending cells and no server yet), at the seen pace."""
        seen = [arm.startup_s for arm in self.arms.values() if arm.startup_s is not None]
        if not seen:
            return 0.0
        waiting = {cell.key.arm for cell in self.cells.values() if cell.phase == "pending"}
        unstarted = [name for name in waiting
                     if name in self.arms and self.arms[name].starting_t is None]
        return len(unstarted) * sum(seen) / len(seen)
