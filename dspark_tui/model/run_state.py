"""What a watcher knows about a run, folded from its event stream: the one reducer.

A pure reducer with no UI or I/O, so the live TUI, an attached TUI, a replay, `attach
--headless` and the headless printer all count, time and compare from the same events. Buffers
are bounded: a run of many hours must not grow the watcher's memory. The measurements it keeps
(every ok CellResult, for the verdicts) are bounded by the plan: cells x rounds x repeats.

Counts are of measurements (cell runs): a cell is measured once per repeat of each round; the
total is what the RoundPlanned events say, or RunStarted.total_cells when a run has none (one
round, or a log written before rounds existed, which replays exactly as it did).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from dspark_tui.model import events as ev
from dspark_tui.model.cell import CellKey, CellResult, CellStatus
from dspark_tui.model.greedy import GreedyVerdict
from dspark_tui.model.lane_board import CurrentCell, LaneBoard
from dspark_tui.model.measurements import (
    CellPhase,
    CellState,
    Measurement,
    MeasurementPhase,
    RoundSchedule,
    Tally,
)
from dspark_tui.model.run_status import run_status_label
from dspark_tui.model.statistics import StatisticsSettings

SERIES_LENGTH = 120
LOG_TAIL_LENGTH = 400
NOTICE_LENGTH = 50
RUNNER_GONE = "the runner is gone without finishing"

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
    # Each server start of this arm: seconds from starting to its last `ready` (warmup included,
    # since the cells wait for it too).
    startups: list[float] = field(default_factory=list)

    @property
    def startup_s(self) -> float | None:
        """How long its first server took to be ready for cells."""
        return self.startups[0] if self.startups else None


@dataclass
class _Start:
    """One arm's server start on one lane: when it began, and its entry in ArmState.startups."""

    starting_t: float | None = None
    index: int | None = None


@dataclass
class LogLine:
    arm: str
    line: str


@dataclass
class RunState:
    """Everything the run screen and the printer show. `version` grows on every change so views
    redraw lazily; `measured` grows whenever a measurement ends, so a table redraws then."""

    run_dir: str = ""
    name: str = ""
    status: str = "waiting"
    message: str = ""
    paused: bool = False
    arms: dict[str, ArmState] = field(default_factory=dict)
    cells: dict[CellKey, CellState] = field(default_factory=dict)
    board: LaneBoard = field(default_factory=LaneBoard)  # in flight; each lane of a parallel run
    resumed: int = 0
    statistics: StatisticsSettings | None = None  # the plan's statistics keys (ev.RunStarted)
    started_t: float | None = None
    finished_t: float | None = None
    last_t: float | None = None
    schedule: RoundSchedule = field(default_factory=RoundSchedule)
    series: dict[str, deque[float]] = field(
        default_factory=lambda: {name: deque(maxlen=SERIES_LENGTH) for name in SERIES_NAMES}
    )
    log_tail: deque[LogLine] = field(default_factory=lambda: deque(maxlen=LOG_TAIL_LENGTH))
    notices: deque[ev.Notice] = field(default_factory=lambda: deque(maxlen=NOTICE_LENGTH))
    # The greedy equivalence check's latest verdicts (ev.GreedyChecked), once every arm answered.
    greedy: list[GreedyVerdict] = field(default_factory=list)
    log_count: int = 0  # lines ever seen, so a view can tell how many of the tail are new
    version: int = 0
    measured: int = 0
    tally: Tally = field(default_factory=Tally)
    _cell_phases: Counter[CellPhase] = field(default_factory=Counter)
    _planned_repeats: bool = False  # a cell is planned more than one measurement
    _rounds: dict[int, str] = field(default_factory=dict)  # round -> "planned" / "adaptive"
    _total_hint: int = 0  # ev.RunStarted.total_cells, ev.CellStarted.total: used without a schedule
    _seq: int = 0
    _starts: dict[tuple[str, int | None], _Start] = field(default_factory=dict)

    @property
    def settings(self) -> StatisticsSettings:
        """The run's statistics settings; an old run's defaults (model/statistics.py) when its
        RunStarted carried none."""
        return self.statistics if self.statistics is not None else StatisticsSettings()

    @property
    def current(self) -> CurrentCell | None:
        """The measurement in flight that started last (None: nothing runs)."""
        return self.board.latest

    @property
    def in_flight(self) -> int:
        return len(self.board.cells)

    # -- seeding ---------------------------------------------------------------------------

    def expect_cells(self, keys: Iterable[CellKey]) -> None:
        """Cells the plan will run, so the tree can show them pending before they start."""
        for key in keys:
            self._cell(key)
        self.version += 1

    def add_saved(self, result: CellResult) -> None:
        """A measurement already on disk (a resumed or attached run) counts as ended."""
        self._end(result.key, result.round, result.repeat, _phase_of(result), t=None,
                  reason=result.error or "", result=result)
        self.version += 1

    def runner_gone(self, t: float) -> bool:
        """A watcher found the runner dead without a ev.RunFinished: fold it as an interrupted end,
        so every view shows the same thing. False when the run was not running."""
        if self.status != "running":
            return False
        self.apply(ev.RunFinished(t=t, status="interrupted", done=self.done, failed=self.failed,
                               total=self.total, message=RUNNER_GONE))
        return True

    # -- folding ---------------------------------------------------------------------------

    def apply_all(self, events: Iterable[ev.Event]) -> None:
        for event in events:
            self.apply(event)

    def apply(self, event: ev.Event) -> None:
        self.last_t = event.t
        self.board.apply(event)
        if isinstance(event, ev.RunStarted):
            self._on_run_started(event)
        elif isinstance(event, ev.ServerStateChanged):
            self._on_server_state(event)
        elif isinstance(event, ev.ServerLog):
            self.log_tail.append(LogLine(event.arm, event.line))
            self.log_count += 1
            arm = self._arm(event.arm)
            if arm.server_state in _LOADING_STATES and event.line.strip():
                arm.progress_line = event.line.strip()
        elif isinstance(event, ev.RoundPlanned):
            self._on_round_planned(event)
        elif isinstance(event, ev.SessionStarted):
            self.schedule.begin_session(event.arm, event.round)
        elif isinstance(event, ev.CellStarted):
            self._on_cell_started(event)
        elif isinstance(event, ev.CellProgress):
            self._on_progress(event)
        elif isinstance(event, ev.MetricsSample):
            self._on_sample(event)
        elif isinstance(event, ev.CellFinished):
            result = event.result
            self._end(result.key, result.round, result.repeat, _phase_of(result), event.t,
                      reason=result.error or "", result=result)
        elif isinstance(event, ev.CellFailed):
            self._on_failed(event)
        elif isinstance(event, ev.CellSkipped):
            self._end(event.key, event.round, event.repeat, "skipped", event.t, reason=event.reason)
        elif isinstance(event, ev.RunControl):
            if event.action == "pause":
                self.paused = True
            elif event.action in ("resume", "abort"):
                self.paused = False
            self.message = event.message or event.action
        elif isinstance(event, ev.Notice):
            self.notices.append(event)
        elif isinstance(event, ev.GreedyChecked):
            if event.verdicts is not None:
                self.greedy = event.verdicts
        elif isinstance(event, ev.RunFinished):
            self.status = event.status
            self.finished_t = event.t
            self.message = event.message
            self.paused = False
            self._drop_running()
        self.version += 1

    def _on_run_started(self, event: ev.RunStarted) -> None:
        self.run_dir = event.run_dir
        self.name = event.name
        self.status = "running"
        self.finished_t = None
        if self.started_t is None:
            self.started_t = event.t
        self._total_hint = max(self._total_hint, event.total_cells)
        self.resumed = event.resumed_cells
        if event.statistics is not None:
            self.statistics = event.statistics
        self._drop_running()  # a new runner: what an earlier one left running will not end
        for name in event.arms:
            self._arm(name)

    def _on_round_planned(self, event: ev.RoundPlanned) -> None:
        self._rounds[event.round] = event.reason
        touched: dict[CellKey, CellState] = {}
        for key, slot in self.schedule.plan(event):
            cell = touched[key] = self._cell(key)
            measurement = cell.measurements.get(slot)
            if measurement is None or not measurement.ended:
                self.schedule.open[(key.arm, slot[0])] += 1
        for cell in touched.values():
            self._refresh(cell)
            self._planned_repeats = self._planned_repeats or cell.planned > 1

    def _on_server_state(self, event: ev.ServerStateChanged) -> None:
        arm = self._arm(event.arm)
        arm.server_state = event.state
        arm.message = event.message
        arm.pid = event.pid if event.pid is not None else arm.pid
        # Timed per arm and lane: two lanes may start the same arm at once (rounds in parallel).
        start = self._starts.setdefault((event.arm, event.lane), _Start())
        if event.state == "starting":
            arm.starting_t = start.starting_t = event.t
            start.index = None
        if event.state == "ready":
            arm.progress_line = ""
            if start.starting_t is not None:
                seconds = event.t - start.starting_t
                if start.index is None:
                    start.index = len(arm.startups)
                    arm.startups.append(seconds)
                else:  # ready again after warming up: the same start, now longer
                    arm.startups[start.index] = seconds

    def _on_cell_started(self, event: ev.CellStarted) -> None:
        self._put(Measurement(key=event.key, round=event.round, repeat=event.repeat,
                              phase="running", started_t=event.t))
        self.schedule.begin_session(event.key.arm, event.round)
        self._total_hint = max(self._total_hint, event.total)
        for samples in self.series.values():
            samples.clear()

    def _on_failed(self, event: ev.CellFailed) -> None:
        cell = self.cells.get(event.key)
        earlier = cell.measurements.get((event.round, event.repeat)) if cell is not None else None
        result = earlier.result if earlier is not None and earlier.result is not None else None
        if result is None or result.ok:
            # Not saved with numbers: a result that says why, for the table and the reason key.
            result = CellResult(arm=event.key.arm, scenario=event.key.scenario,
                                concurrency=event.key.concurrency, round=event.round,
                                repeat=event.repeat, status=CellStatus.FAILED, error=event.reason)
        self._end(event.key, event.round, event.repeat, "failed", event.t, reason=event.reason,
                  result=result)

    def _on_progress(self, event: ev.CellProgress) -> None:
        current = self.current  # the board took the numbers; the sparkline follows this one
        if current is not None and current.key == event.key and event.output_tok_s is not None \
                and self.board.shown(event):
            self.series["tok_s"].append(event.output_tok_s)

    def _on_sample(self, event: ev.MetricsSample) -> None:
        if event.gap or not self.board.shown(event):
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

    def _end(self, key: CellKey, round_: int, repeat: int, phase: MeasurementPhase,
             t: float | None, *, reason: str = "", result: CellResult | None = None) -> None:
        """A measurement ended (finished, failed, skipped) or was found saved; it replaces any
        earlier record of the same (round, repeat): a retry measures the same thing again."""
        cell = self.cells.get(key)
        earlier = cell.measurements.get((round_, repeat)) if cell is not None else None
        started = earlier.started_t if earlier is not None and earlier.phase == "running" else None
        self._put(Measurement(key=key, round=round_, repeat=repeat, phase=phase, reason=reason,
                              result=result, started_t=started, finished_t=t))
        self.measured += 1
        self.board.ended(key, round_, repeat)

    def _drop_running(self) -> None:
        """Measurements that were running when their runner stopped never ended: forget them."""
        self.board.clear()
        if not self.tally.phases["running"]:
            return
        for cell in self.cells.values():
            running = [m for m in cell.measurements.values() if m.phase == "running"]
            for measurement in running:
                self._count(measurement, -1)
                del cell.measurements[measurement.slot]
            if running:
                self._refresh(cell)

    def _put(self, measurement: Measurement) -> None:
        """The one place a record is added or replaced, so that the running counts stay true."""
        cell = self._cell(measurement.key)
        earlier = cell.measurements.get(measurement.slot)
        if earlier is not None:
            self._count(earlier, -1)
        self._seq += 1
        measurement.seq = self._seq
        cell.measurements[measurement.slot] = measurement
        self._count(measurement, 1)
        self._refresh(cell)

    def _count(self, measurement: Measurement, sign: int) -> None:
        self.tally.add(measurement, sign)
        if measurement.ended:
            self.schedule.settle(measurement.key, measurement.slot, sign)

    def _refresh(self, cell: CellState) -> None:
        before = cell.phase
        cell.planned = max(1, self.schedule.planned_for(cell.key))
        cell.refresh()
        if cell.phase != before:
            self._cell_phases[before] -= 1
            self._cell_phases[cell.phase] += 1

    def _arm(self, name: str) -> ArmState:
        arm = self.arms.get(name)
        if arm is None:
            arm = self.arms[name] = ArmState(name=name)
        return arm

    def _cell(self, key: CellKey) -> CellState:
        cell = self.cells.get(key)
        if cell is None:
            cell = self.cells[key] = CellState(key=key)
            cell.planned = max(1, self.schedule.planned_for(key))
            self._cell_phases[cell.phase] += 1
            self._arm(key.arm)
        return cell

    # -- derived ---------------------------------------------------------------------------

    def count(self, phase: CellPhase) -> int:
        """Cells (not measurements) in a phase."""
        return self._cell_phases[phase]

    @property
    def total(self) -> int:
        """Measurements planned: the schedule's, else the runner's cell count; never fewer than
        the measurements seen."""
        planned = self.schedule.total if self.schedule.known else max(self._total_hint,
                                                                       len(self.cells))
        return max(planned, self.tally.records)

    @property
    def done(self) -> int:
        """Ok measurements."""
        return self.tally.phases["done"]

    @property
    def failed(self) -> int:
        """Measurements whose latest attempt failed (a retry that succeeds takes it back)."""
        return self.tally.phases["failed"]

    @property
    def skipped(self) -> int:
        return self.tally.phases["skipped"]

    @property
    def skipped_cells(self) -> int:
        """Cells with a measurement the user skipped (and none failed): what the end line counts."""
        return sum(1 for cell in self.cells.values()
                   if not cell.failed_count and any(m.phase == "skipped"
                                                    for m in cell.measurements.values()))

    @property
    def status_label(self) -> str:
        """`paused`, `running`, `completed, 1 skipped`: the run's state as every view words it."""
        if self.paused and not self.finished:
            return "paused"
        # Counted only when a measurement is skipped: the header asks every tick, and the count
        # walks every cell (3,600 in a big sweep) on the UI thread.
        return run_status_label(self.status, skipped=self.skipped_cells if self.skipped else 0)

    @property
    def ended(self) -> int:
        return self.done + self.failed + self.skipped

    @property
    def cells_done(self) -> int:
        """Cells whose every planned measurement is ok."""
        return self.count("done")

    @property
    def repeated(self) -> bool:
        """True when a cell is measured more than once: views then name rounds and repeats."""
        return self._planned_repeats or self.tally.repeated

    @property
    def finished(self) -> bool:
        return self.status not in ("waiting", "running")

    @property
    def failed_cells(self) -> list[CellState]:
        return [cell for cell in self.cells.values() if cell.failed_count]

    def results(self) -> list[CellResult]:
        """One result per cell (its latest ok measurement, else its latest), in cell order."""
        return [cell.result for cell in self.cells.values() if cell.result is not None]

    def ok_measurements(self) -> list[CellResult]:
        """Every ok measurement of every cell: what the verdicts are computed from."""
        return [result for cell in self.cells.values() for result in cell.ok_results]

    def table_measurements(self) -> list[CellResult]:
        """What the live table shows: every ok measurement, and for a cell with none its latest
        (failed or skipped) result, so the table can say why it has no number."""
        out = []
        for cell in self.cells.values():
            if cell.ok_results:
                out.extend(cell.ok_results)
            elif cell.result is not None:
                out.append(cell.result)
        return out

    def greedy_line(self) -> str:
        """The check in a few words for a header: the worst verdict; empty before any."""
        if not self.greedy:
            return ""
        order = ("diverges", "not_compared", "no_answers", "within_control", "same")
        worst = min(self.greedy, key=lambda v: order.index(v.verdict))
        more = f" (+{len(self.greedy) - 1} arms)" if len(self.greedy) > 1 else ""
        return worst.short() + more

    def scenarios(self) -> list[str]:
        """Scenario names in the order their cells became known (the plan's, for a run)."""
        return list(dict.fromkeys(key.scenario for key in self.cells))

    def elapsed(self, now: float) -> float:
        if self.started_t is None:
            return 0.0
        end = self.finished_t if self.finished_t is not None else now
        return max(0.0, end - self.started_t)

    def eta(self, now: float) -> float | None:
        """Seconds left: each measurement still to end at the pace its own workload (scenario
        and concurrency, any arm) has shown, else the mean of all; then the adaptive rounds the
        plan allows and has not announced yet, each as large as the last round, at that pace;
        plus the server starts still ahead at the pace seen. None until a measurement was
        timed. The one ETA of every view. Rounds in parallel share the work over their lanes."""
        if self.finished:
            return 0.0
        mean = self.tally.mean_wall_s
        if mean is None:
            return None
        eta = 0.0
        left = max(0, self.total - self.ended)
        if self.schedule.known:
            for key, cell in self.cells.items():
                open_here = max(0, self.schedule.planned_for(key) - sum(
                    1 for m in cell.measurements.values() if m.ended))
                if open_here:
                    eta += open_here * (self.tally.wall_s_of(key) or mean)
                    left -= open_here
        eta += max(0, left) * mean  # measurements no cell of the schedule accounts for
        for running in self.board.cells.values():
            pace = self.tally.wall_s_of(running.key) or mean
            eta -= min(pace, max(0.0, now - running.started_t))
        eta = max(0.0, eta) + self._adaptive_left(mean)
        return (eta + self._startups_left()) / self._lanes_busy()

    def _adaptive_left(self, mean: float) -> float:
        """The adaptive rounds still allowed and not announced, each as large as the last
        round announced (the most it can be: it measures only the cells still unsure, so this
        falls as they are decided), at the pace of those cells; 0 once the run has used them
        all or has none."""
        allowed = self.settings.adaptive_rounds
        if allowed <= 0 or not self.schedule.known or not self._rounds:
            return 0.0
        announced = sum(1 for reason in self._rounds.values() if reason == "adaptive")
        still = max(0, allowed - announced)
        if not still:
            return 0.0
        last = max(self._rounds)
        seconds = sum(self.tally.wall_s_of(key) or mean for key, cell in self.cells.items()
                      for slot in self.schedule.planned.slots.get(key, ()) if slot[0] == last)
        return still * seconds

    def _lanes_busy(self) -> int:
        """Lanes the work left keeps busy: bench.parallel, fewer once fewer rounds are left."""
        if self.parallel == 1 or not self.schedule.known:
            return self.parallel
        rounds = {r for _, r in self.schedule.sessions_ahead()}
        rounds |= {cell.round for cell in self.board.cells.values()}
        return max(1, min(self.parallel, len(rounds)))

    @property
    def parallel(self) -> int:
        """Rounds the run measures at once (bench.parallel, from ev.RunStarted)."""
        return max(self.settings.parallel, 1)

    def _startups_left(self) -> float:
        seen = [seconds for arm in self.arms.values() for seconds in arm.startups]
        if not seen:
            return 0.0
        pace = sum(seen) / len(seen)
        return self._sessions_left() * pace

    def _sessions_left(self) -> int:
        if not self.schedule.known:
            # One session per arm: arms with pending cells whose server never started.
            waiting = {cell.key.arm for cell in self.cells.values() if cell.phase == "pending"}
            return sum(1 for name in waiting
                       if name in self.arms and self.arms[name].starting_t is None)
        ahead = self.schedule.sessions_ahead()
        loading = {name for name, arm in self.arms.items() if arm.server_state in _LOADING_STATES}
        for name in loading:  # a server starting now is the first of its arm's sessions ahead
            rounds = sorted(r for arm, r in ahead if arm == name)
            if rounds:
                ahead.discard((name, rounds[0]))
        return len(ahead)


def _phase_of(result: CellResult) -> MeasurementPhase:
    if result.status == CellStatus.OK:
        return "done"
    return "skipped" if result.status == CellStatus.SKIPPED else "failed"
