"""The headless view of the event stream: one line per thing that matters, and the growing
comparison after each arm. Used live by `run --headless` and on replay by `attach --headless`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

from dspark_tui.engine.server import is_progress_line
from dspark_tui.model import CellResult
from dspark_tui.model.events import (
    CellFailed,
    CellFinished,
    CellProgress,
    CellSkipped,
    CellStarted,
    Event,
    Notice,
    RunControl,
    RunFinished,
    RunStarted,
    ServerLog,
    ServerStateChanged,
)
from dspark_tui.report import comparison_rows
from dspark_tui.results import RunStore

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
    """Consumes events; keeps just enough state for ETA and the comparison table."""

    def __init__(self, console: Console | None = None, *, show_server_log: bool = False) -> None:
        self.console = console or Console(highlight=False)
        self.show_server_log = show_server_log
        self.arms: list[str] = []
        self.scenarios: list[str] = []
        self.cells: dict[tuple[str, str, int], CellResult] = {}
        self.total = 0
        self.finished = 0
        self.failed = 0
        self.started_cells = 0
        self._run_t0: float | None = None
        self._finished_this_session = 0
        self._current_arm: str | None = None
        self.final: RunFinished | None = None
        self.failures: dict[str, str] = {}
        self._progress_t = 0.0
        self.broken = False

    def __call__(self, event: Event) -> None:
        handler = getattr(self, f"_on_{event.kind}", None)
        if handler is not None:
            handler(event)

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

    def _on_run_started(self, event: RunStarted) -> None:
        self.arms = list(event.arms)
        self.total = event.total_cells
        self.finished = max(self.finished, event.resumed_cells)
        self._run_t0 = event.t
        self._finished_this_session = 0
        self.final = None
        if event.resumed_cells:  # the comparison shows the cells kept from earlier sessions too
            cells, _ = RunStore(event.run_dir).load_cells()
            for result in cells.values():
                if result.ok:
                    self._record(result)
        resumed = f", {event.resumed_cells} already done" if event.resumed_cells else ""
        self._print(f"[bold]run[/] {event.name}: {event.total_cells} cells, arms "
                    f"{', '.join(event.arms)}{resumed}\n  {event.run_dir}")

    def _on_server_state(self, event: ServerStateChanged) -> None:
        if event.state in _QUIET_STATES:
            return
        if self._current_arm is not None and event.arm != self._current_arm:
            self.print_comparison()
        self._current_arm = event.arm
        style = {"failed": "red", "ready": "green", "restarting": "yellow"}.get(event.state, "dim")
        message = f" — {event.message}" if event.message else ""
        self._print(f"[{style}]server {event.arm}: {event.state}{message}[/]")

    def _on_server_log(self, event: ServerLog) -> None:
        if self.show_server_log or is_progress_line(event.line):
            self._print(f"[dim]  {event.arm}| {event.line[:160]}[/]")

    def _on_cell_started(self, event: CellStarted) -> None:
        self.started_cells += 1
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
        self.failures.pop(result.key.id, None)
        self._record(result)
        self.finished += 1
        self._finished_this_session += 1
        m = result.metrics
        accept = result.server.mean_acceptance_length if result.server else None
        kv = result.server.kv_usage_peak if result.server else None
        self._print(
            f"[green]ok[/]   {self._position()} {result.key.id:<32} total "
            f"{_num(m.total_throughput)} tok/s  TTFT p99 {_num(m.p99_ttft_ms)} ms  TPOT "
            f"{_num(m.mean_tpot_ms, '{:.2f}')} ms  accept {_num(accept, '{:.2f}')}  KV peak "
            f"{_num(None if kv is None else kv * 100, '{:.0f}%')}{self._eta(event.t)}"
        )

    def _on_cell_failed(self, event: CellFailed) -> None:
        self.failures[event.key.id] = event.reason
        self.failed += 1
        self.finished += 1
        self._finished_this_session += 1
        self._print(f"[red]FAIL[/] {self._position()} {event.key.id:<32} {event.reason}"
                    f"{self._eta(event.t)}")

    def _on_cell_skipped(self, event: CellSkipped) -> None:
        self.finished += 1
        self._print(f"[yellow]skip[/] {self._position()} {event.key.id:<32} {event.reason}")

    def _on_notice(self, event: Notice) -> None:
        style = {"error": "red", "warning": "yellow"}.get(event.level, "cyan")
        self._print(f"[{style}]{event.level}: {event.message}[/]")

    def _on_run_control(self, event: RunControl) -> None:
        self._print(f"[cyan]control {event.action}: {event.message}[/]")

    def _on_run_finished(self, event: RunFinished) -> None:
        self.final = event
        self.print_comparison()
        style = "green" if event.status == "completed" else "red"
        message = f" — {event.message}" if event.message else ""
        self._print(f"[bold {style}]run {event.status}[/]: {event.done}/{event.total} cells ok, "
                    f"{event.failed} failed{message}")

    def _record(self, result: CellResult) -> None:
        self.cells[(result.arm, result.scenario, result.concurrency)] = result
        if result.scenario not in self.scenarios:
            self.scenarios.append(result.scenario)

    def _position(self) -> str:
        width = len(str(self.total or 0))
        return f"[{self.finished:>{width}}/{self.total}]"

    def _eta(self, now: float) -> str:
        if self._run_t0 is None or self._finished_this_session == 0 or not self.total:
            return ""
        remaining = max(0, self.total - self.finished)
        if remaining == 0:
            return ""
        per_cell = (now - self._run_t0) / self._finished_this_session
        return f"  ETA {_duration(per_cell * remaining)}"

    def print_comparison(self) -> None:
        if not self.cells or len(self.arms) < 2:
            return
        rows = comparison_rows(self.cells.values(), self.arms, self.scenarios)
        table = Table(title="Total tok/s by arm (winner, margin)", title_justify="left")
        table.add_column("scenario")
        table.add_column("c", justify="right")
        for arm in self.arms:
            table.add_column(arm, justify="right")
        table.add_column("winner")
        table.add_column("margin", justify="right")
        for row in rows:
            figures = [row.arms.get(arm) for arm in self.arms]
            table.add_row(
                row.scenario, str(row.concurrency),
                *[_num(f.total_tok_s) if f and f.total_tok_s is not None
                  else (f.status or "…") if f else "…" for f in figures],
                row.winner or "", "" if row.margin is None else f"{row.margin * 100:+.1f}%",
            )
        self._safely(lambda: self.console.print(table))


def summary_lines(run_dir: Path, printer: HeadlessPrinter, status: str) -> list[str]:
    lines = [f"run directory: {run_dir}"]
    for cell_id, reason in printer.failures.items():
        lines.append(f"failed: {cell_id}: {reason}")
    if status != "completed":
        lines.append(f"not every cell succeeded ({status}); resume with: "
                     f"dspark-tui run --resume {run_dir} --headless")
    return lines
