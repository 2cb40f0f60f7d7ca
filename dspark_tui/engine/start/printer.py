"""The headless view of the event stream: one line per thing that matters, and the growing
comparison at each change of arm. Used live by `run --headless` and on replay by `attach
--headless`.

Every number it prints (positions, ETA, the final tally, the comparison) comes from the one
reducer, RunState, that the TUI folds the same events through; the printer only decides what
to say and when. It never reads the disk: a resume hands it what happened before (`seed`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from rich.box import HEAVY_HEAD
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from dspark_tui.analysis.live import (
    ComparisonRow,
    baseline_text,
    comparison_rows,
    interval_text,
    verdict_text,
)
from dspark_tui.analysis.verdicts import Settings
from dspark_tui.engine.servers.server import is_progress_line
from dspark_tui.model import CellKey, CellResult
from dspark_tui.model.events import (
    CellFailed,
    CellFinished,
    CellProgress,
    CellSkipped,
    CellStarted,
    Event,
    Notice,
    RoundPlanned,
    RunControl,
    RunFinished,
    RunStarted,
    ServerLog,
    ServerStateChanged,
)
from dspark_tui.model.lane_board import without_superseded
from dspark_tui.model.run_state import RunState

_QUIET_STATES = {"loading"}
PROGRESS_LINE_EVERY_S = 15.0


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def _num(value: float | None, fmt: str = "{:,.1f}") -> str:
    return "-" if value is None else fmt.format(value)


class HeadlessPrinter:
    """Folds each event into `state`, then prints what it means."""

    def __init__(self, console: Console | None = None, *, show_server_log: bool = False,
                 state: RunState | None = None, baseline: str | None = None,
                 plain: bool = False) -> None:
        self.console = console or Console(highlight=False)
        self.plain = plain  # a log file: tables without box drawing (headless.headless_console)
        self.baseline = baseline  # the K = 0 arm of a K sweep (report.live.baseline_arm)
        self.show_server_log = show_server_log
        self.state = state or RunState()
        self._progress_t = 0.0
        self._shown_arm: str | None = None
        self.broken = False

    def seed(self, events: Iterable[Event], saved: Iterable[CellResult] = ()) -> None:
        """Fold, without printing, what happened before this printer started: the run's earlier
        events and its saved measurements (a resume continues from them)."""
        self.state.apply_all(without_superseded(list(events)))
        for result in saved:
            self.state.add_saved(result)

    def __call__(self, event: Event) -> None:
        self.state.apply(event)
        handler = getattr(self, f"_on_{event.kind}", None)
        if handler is not None:
            handler(event)

    def runner_gone(self, now: float, run_dir: Path) -> None:
        """The runner died without finishing: the state says so too, then one line."""
        self.state.runner_gone(now)
        where = escape(str(run_dir))
        self._print(f"the runner of {where} is not alive; resume with: "
                    f"dspark-tui run --resume {where} --headless")

    def _print(self, text: str) -> None:
        self._safely(lambda: self.console.print(text, soft_wrap=True))

    def _safely(self, write: Callable[[], None]) -> None:
        """A closed terminal (`| head`, a dropped SSH session) silences the printer, nothing more."""
        if self.broken:
            return
        try:
            write()
        except (OSError, SystemExit):
            self.broken = True

    # -- one handler per event kind, called after the state has folded the event ---------

    def _on_run_started(self, event: RunStarted) -> None:
        resumed = f", {event.resumed_cells} already done" if event.resumed_cells else ""
        self._print(f"[bold]run[/] {event.name}: {event.total_cells} cell runs, arms "
                    f"{', '.join(event.arms)}{resumed}\n  {event.run_dir}")

    def _on_round_planned(self, event: RoundPlanned) -> None:
        repeats = f" x {event.repeats} repeats" if event.repeats > 1 else ""
        why = f" — {event.message}" if event.message else ""
        self._print(f"[cyan]round {event.round} ({event.reason}): {len(event.cells)} cells x "
                    f"{len(event.arms)} arms{repeats}, order {' → '.join(event.arms)}; "
                    f"{self.state.total} cell runs planned{why}[/]")

    def _on_server_state(self, event: ServerStateChanged) -> None:
        if event.state in _QUIET_STATES:
            return
        # At each change of arm; lanes in parallel change arms all the time: at the end only.
        if self._shown_arm is not None and event.arm != self._shown_arm and self.state.parallel == 1:
            self.print_comparison()
        self._shown_arm = event.arm
        style = {"failed": "red", "ready": "green", "restarting": "yellow"}.get(event.state, "dim")
        message = f" — {event.message}" if event.message else ""
        lane = self.state.board.lanes.get(event.lane) if event.lane is not None else None
        where = f" ({lane.where()})" if lane is not None else ""  # rounds in parallel
        self._print(f"[{style}]server {event.arm}{where}: {event.state}{message}[/]")

    def _on_server_log(self, event: ServerLog) -> None:
        if self.show_server_log or is_progress_line(event.line):
            self._print(f"[dim]  {event.arm}| {event.line[:160]}[/]")

    def _on_cell_started(self, event: CellStarted) -> None:
        self._progress_t = event.t

    def _on_cell_progress(self, event: CellProgress) -> None:
        """A line now and then inside a long cell, so a quiet terminal never looks hung."""
        if event.t - self._progress_t < PROGRESS_LINE_EVERY_S:
            return
        self._progress_t = event.t
        rate = f", {event.output_tok_s:,.0f} output tok/s" if event.output_tok_s else ""
        self._print(f"[dim]     {event.key.id}: {event.completed}/{event.total} requests"
                    f"{rate}[/]")

    def _on_cell_finished(self, event: CellFinished) -> None:
        result = event.result
        cell = self._cell(result.key, result.round, result.repeat)
        if not result.ok:
            self._print(f"[red]FAIL[/] {self._position()} {cell} "
                        f"{result.error or result.status.value}{self._eta(event.t)}")
            return
        m = result.metrics
        accept = result.server.mean_acceptance_length if result.server else None
        kv = result.server.kv_usage_peak if result.server else None
        if self.state.parallel > 1 and result.node:
            cell += f" @{result.node}"
        self._print(
            f"[green]ok[/]   {self._position()} {cell} total "
            f"{_num(m.total_throughput)} tok/s  TTFT p99 {_num(m.p99_ttft_ms)} ms  TPOT "
            f"{_num(m.mean_tpot_ms, '{:.2f}')} ms  accept {_num(accept, '{:.2f}')}  KV peak "
            f"{_num(None if kv is None else kv * 100, '{:.0f}%')}{self._eta(event.t)}"
        )

    def _on_cell_failed(self, event: CellFailed) -> None:
        self._print(f"[red]FAIL[/] {self._position()} {self._cell(event.key, event.round, event.repeat)} "
                    f"{event.reason}{self._eta(event.t)}")

    def _on_cell_skipped(self, event: CellSkipped) -> None:
        self._print(f"[yellow]skip[/] {self._position()} "
                    f"{self._cell(event.key, event.round, event.repeat)} {event.reason}")

    def _on_notice(self, event: Notice) -> None:
        style = {"error": "red", "warning": "yellow"}.get(event.level, "cyan")
        self._print(f"[{style}]{event.level}: {event.message}[/]")

    def _on_run_control(self, event: RunControl) -> None:
        self._print(f"[cyan]control {event.action}: {event.message}[/]")

    def _on_run_finished(self, event: RunFinished) -> None:
        self.print_comparison()
        state = self.state
        style = "green" if event.status == "completed" else "red"
        # A completed run's message only counts its skips, which the label already says.
        message = f" — {event.message}" if event.message and event.status != "completed" else ""
        if state.repeated:
            tally = (f"{state.done}/{state.total} cell runs ok ({state.cells_done}/"
                     f"{len(state.cells)} cells complete)")
        else:
            tally = f"{state.done}/{state.total} cells ok"
        label = escape(state.status_label)  # `completed, 1 skipped`: a skip is no failure
        self._print(f"[bold {style}]run {label}[/]: {tally}, {state.failed} failed{message}")

    # -- pieces of lines -------------------------------------------------------------------

    def _cell(self, key: CellKey, round_: int, repeat: int) -> str:
        """The cell's id, with round and repeat when the run measures cells more than once."""
        if not self.state.repeated:
            return f"{key.id:<32}"
        return f"{key.id + f' r{round_} p{repeat}':<38}"

    def _position(self) -> str:
        total = self.state.total
        return f"[{self.state.ended:>{len(str(total))}}/{total}]"

    def _eta(self, now: float) -> str:
        eta = self.state.eta(now)
        if eta is None or self.state.ended >= self.state.total:
            return ""
        return f"  ETA {_duration(eta)}"

    def print_comparison(self) -> None:
        state = self.state
        arms = list(state.arms)
        results = state.results()
        if not any(result.ok for result in results) or len(arms) < 2:
            return
        rows = comparison_rows(state.table_measurements(), arms, state.scenarios(),
                               settings=Settings.of(state.settings), baseline=self.baseline)
        table = comparison_table(rows, arms, plain=self.plain)
        if len(arms) > 2 and _width(self.console, table) > self.console.width:
            # A K sweep's eight arms do not fit 80 columns: rich would cut every cell to "…".
            # What decides stays whole; each arm's figures are in results.csv and the report.
            table = comparison_table(rows, arms, per_arm=False, plain=self.plain)
        self._safely(lambda: self.console.print(table))


def _width(console: Console, table: Table) -> int:
    """Its natural width, unbounded by the terminal (which would clamp it)."""
    return Measurement.get(console, console.options.update_width(10_000), table).maximum


def comparison_table(rows: list[ComparisonRow], arms: list[str], *, per_arm: bool = True,
                     plain: bool = False) -> Table:
    """Two arms: each arm's Total tok/s, then the winner, margin, interval and verdict. More
    arms (a K sweep): the leader, the verdict, its margin over the runner-up (and interval) and
    over K = 0 first, the arms' Total tok/s after — the columns of the TUI's table; without
    them (`per_arm=False`) when they would not fit the terminal, which the caption says.
    `plain`: columns without box drawing, for a log file."""
    many = len(arms) > 2
    baseline = next((row.baseline for row in rows if row.baseline), None) if many else None
    if many:
        title = "Total tok/s by arm (best arm, verdict, margin over the runner-up and its interval"
        title += f", over {baseline})" if baseline else ")"
    else:
        title = "Total tok/s by arm (winner, margin, its interval, verdict)"
    caption = None if per_arm else "each arm's Total tok/s: results.csv, the report, a wider terminal"
    table = Table(title=title, title_justify="left", caption=caption, caption_justify="left",
                  box=None if plain else HEAVY_HEAD)
    table.add_column("scenario")
    table.add_column("c", justify="right")
    if many:
        summary = ["best", "verdict", "margin", "interval", *([f"vs {baseline}"] if baseline else [])]
    else:
        summary = ["winner", "margin", "interval", "verdict"]
    if not many:
        for arm in arms:
            table.add_column(arm, justify="right")
    for name in summary:
        table.add_column(name, justify="left" if name in ("best", "winner", "verdict") else "right")
    if many and per_arm:
        for arm in arms:
            table.add_column(arm, justify="right")
    for row in rows:
        figures = [row.arms.get(arm) for arm in arms]
        totals = [_num(f.total_tok_s) if f and f.total_tok_s is not None
                  else (f.status or "…") if f else "…" for f in figures]
        margin = "" if row.margin is None else f"{row.margin * 100:+.1f}%"
        if many:
            decided = [row.leader or "", verdict_text(row), margin, interval_text(row),
                       *([baseline_text(row)] if baseline else [])]
        else:
            decided = [row.winner or "", margin, interval_text(row), verdict_text(row)]
        if many:
            table.add_row(row.scenario, str(row.concurrency), *decided, *(totals if per_arm else []))
        else:
            table.add_row(row.scenario, str(row.concurrency), *totals, *decided)
    return table


def summary_lines(run_dir: Path, state: RunState, status: str) -> list[str]:
    lines = [f"run directory: {run_dir}"]
    for cell in state.failed_cells:
        for measurement in cell.failed_measurements:
            which = f" {measurement.label}" if state.repeated else ""
            lines.append(f"failed: {cell.key.id}{which}: {measurement.reason}")
    if status != "completed":
        lines.append(f"not every cell succeeded ({status}); resume with: "
                     f"dspark-tui run --resume {run_dir} --headless")
    return lines
