"""Every past run in the results folders: the app's home when nothing is running.

The list comes from scan_runs (run.json and a file count per run, nothing parsed deeply), so
hundreds of runs open at once; a run's cells are read only when it is opened.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Footer, Input, Label
from textual.worker import Worker, get_current_worker

from dspark_tui.results import RunSummary, scan_runs
from dspark_tui.tui import colours
from dspark_tui.tui.screens.loading import LoadingScreen

LIVE_STATUSES = ("running",)
BEST_ARM_RUNS = 100


class HistoryScreen(LoadingScreen):
    DEFAULT_CSS = """
    HistoryScreen #history-title {
        background: $panel; padding: 0 1; width: 1fr; height: 1;
        text-wrap: nowrap; text-overflow: ellipsis;
    }
    HistoryScreen #history-filter { height: 3; }
    HistoryScreen DataTable { height: 1fr; }
    """
    AUTO_FOCUS = "#history-table"  # keys act on the list; `/` moves to the filter
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Open", id="history.open", show=True),
        Binding("space", "mark", "Mark", id="history.mark", tooltip="mark up to two runs"),
        Binding("c", "compare", "Compare", id="history.compare", tooltip="compare the two marked runs"),
        Binding("r", "report", "Report", id="history.report"),
        Binding("a", "attach", "Attach", id="history.attach",
                tooltip="watch and control a running run"),
        Binding("u", "resume", "Resume", id="history.resume",
                tooltip="resume an interrupted run (failed and missing cells run again)"),
        Binding("slash", "filter", "Filter", id="history.filter", show=False,
                tooltip="type words to narrow the list"),
        Binding("f5", "rescan", "Rescan", id="history.rescan", show=False,
                tooltip="look for new runs now"),
    ]
    ERROR_LINE = "#history-title"

    def __init__(self, roots: list[Path]) -> None:
        super().__init__()
        self.roots = roots
        self.runs: list[RunSummary] = []
        self.marked: list[Path] = []
        self._scanned = False
        self.prefer: Path | None = None  # the run to put the cursor on at the next fill
        self.best: dict[Path, str] = {}  # "st=5 11/18": filled in the background, newest first

    def compose(self) -> ComposeResult:
        yield Label("History", id="history-title")
        yield Input(placeholder="filter: type / then words (name, model, arm, status)",
                    id="history-filter")
        table: DataTable[Text | str] = DataTable(cursor_type="row", zebra_stripes=True,
                                                 id="history-table")
        yield table
        yield Footer(compact=True)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        # Fixed widths: measuring every cell of hundreds of rows on each change is what made a
        # long history slow to open (1.4 s for 500 runs, most of it in column-width updates).
        for label, key, width in (("", "mark", 1), ("Name", "name", 28), ("Status", "status", 12),
                                  ("Cells", "cells", 9), ("Best arm", "best", 11),
                                  ("Started", "date", 16), ("Arms", "arms", 14),
                                  ("Model", "model", 26)):
            table.add_column(label, key=key, width=width)
        table.focus()
        # Status colours are theme variables resolved as rows are filled: refill on a switch.
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._fill())
        self.rescan()

    def on_screen_resume(self) -> None:
        """Back from a run or a detail view: runs may have started, finished or appeared."""
        if self._scanned:
            self.rescan()

    def rescan(self) -> Worker[list[RunSummary]]:
        return self.load(partial(scan_runs, self.roots), self._show_runs, "scanning for runs")

    def _show_runs(self, runs: list[RunSummary]) -> None:
        self.runs = runs
        self._scanned = True
        self._fill()
        self._summarize_best()

    @work(thread=True, exclusive=True, group="best-arm", exit_on_error=False,
          description="reading runs for the best-arm column")
    def _summarize_best(self) -> None:
        """Reads cells of the newest runs only, off the UI thread: the list is usable at once."""
        worker = get_current_worker()
        for run in self.runs[:BEST_ARM_RUNS]:
            if worker.is_cancelled:
                return
            if run.problem or (run.path in self.best and run.status != "running"):
                continue
            summary = best_arm_summary(run.path)
            self.app.call_from_thread(self._show_best, run.path, summary)

    def _show_best(self, path: Path, summary: str) -> None:
        self.best[path] = summary
        table = self.query_one(DataTable)
        if str(path) in {str(key.value) for key in table.rows}:
            table.update_cell(str(path), "best", summary)

    def _fill(self) -> None:
        table = self.query_one(DataTable)
        words = self.query_one(Input).value.lower().split()
        shown = [run for run in self.runs if _matches(run, words)]
        styles = {status: colours.rich_style(spec) for status, spec in colours.RUN_STATUS.items()}
        chosen = self.selected()
        wanted = str(self.prefer) if self.prefer is not None else str(chosen.path) if chosen else ""
        with self.app.batch_update():
            table.clear()
            for run in shown:
                status = f"problem: {run.problem}" if run.problem else run.status
                table.add_row(
                    "*" if run.path in self.marked else " ",
                    _short(run.name, 28),
                    Text(status, style=styles.get(run.status, "")),
                    f"{run.cells_done}/{run.cells_total}",
                    self.best.get(run.path, "…"),
                    run.started_at[:16].replace("T", " "),
                    ",".join(run.arms),
                    _short(Path(run.model).name or run.model, 26),
                    key=str(run.path),
                )
            if wanted in {str(r.path) for r in shown}:
                table.move_cursor(row=table.get_row_index(wanted))
                self.prefer = None
        total = len(self.runs)
        count = f"{len(shown)} of {total}" if len(shown) != total else f"{total}"
        noun = "run" if total == 1 else "runs"
        self.query_one("#history-title", Label).update(
            f"History — {count} {noun} in " + ", ".join(str(r) for r in self.roots))

    @on(Input.Changed, "#history-filter")
    def _filter_changed(self) -> None:
        self._fill()

    @on(Input.Submitted, "#history-filter")
    def _filter_done(self) -> None:
        self.query_one(DataTable).focus()

    @on(DataTable.RowSelected)
    def _row_selected(self) -> None:
        self.action_open()

    def selected(self) -> RunSummary | None:
        table = self.query_one(DataTable)
        if table.row_count == 0:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return next((run for run in self.runs if str(run.path) == key), None)

    def action_filter(self) -> None:
        self.query_one(Input).focus()

    def action_rescan(self) -> None:
        self.rescan()

    def action_open(self) -> None:
        run = self.selected()
        if run is None:
            return
        if run.status in LIVE_STATUSES:
            self.app.open_live(run.path, read_only=True)  # type: ignore[attr-defined]
            return
        from dspark_tui.tui.screens.run_detail import RunDetailScreen

        self.app.push_screen(RunDetailScreen(run.path))

    def action_attach(self) -> None:
        run = self.selected()
        if run is None:
            return
        if run.status not in LIVE_STATUSES:
            self.notify(f"{run.name} is {run.status}, not running: enter opens it", severity="warning")
            return
        self.app.open_live(run.path, read_only=False)  # type: ignore[attr-defined]

    def action_resume(self) -> None:
        run = self.selected()
        if run is None:
            return
        if run.status in LIVE_STATUSES:
            self.notify(f"{run.name} is still running: a attaches to it", severity="warning")
            return
        if run.status == "completed" and run.cells_done >= run.cells_total:
            self.notify(f"{run.name} is complete: nothing to resume")
            return
        self.app.resume_run(run.path)  # type: ignore[attr-defined]

    def action_report(self) -> None:
        run = self.selected()
        if run is None:
            return
        from dspark_tui.tui.screens.report import ReportScreen

        self.app.push_screen(ReportScreen(run.path))

    def action_mark(self) -> None:
        run = self.selected()
        if run is None:
            return
        if run.path in self.marked:
            self.marked.remove(run.path)
        else:
            self.marked.append(run.path)
            self.marked = self.marked[-2:]
        table = self.query_one(DataTable)
        for row_key in table.rows:
            mark = "*" if Path(str(row_key.value)) in self.marked else " "
            table.update_cell(row_key, "mark", mark)
        self.notify(f"{len(self.marked)} marked" + (": c compares them" if len(self.marked) == 2 else ""))

    def action_compare(self) -> None:
        if len(self.marked) != 2:
            self.notify("mark two runs with space first", severity="warning")
            return
        from dspark_tui.tui.screens.compare import CompareScreen

        self.app.push_screen(CompareScreen(self.marked[0], self.marked[1]))


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _matches(run: RunSummary, words: list[str]) -> bool:
    haystack = " ".join([run.name, run.model, run.status, run.started_at, *run.arms,
                         run.path.name]).lower()
    return all(word in haystack for word in words)


def best_arm_summary(path: Path) -> str:
    """History's best-arm column: the verdicts' answer (`st=5 3/5`, `tie 4/5`), the same
    analysis as the report's; `—` when nothing is compared yet."""
    from dspark_tui.report.outputs import run_verdicts
    from dspark_tui.report.verdicts import best_arm_line
    from dspark_tui.results import load_run

    return best_arm_line(run_verdicts(load_run(path)))
