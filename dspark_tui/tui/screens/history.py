"""Every past run in the results folders: the app's home when nothing is running.

The list comes from scan_runs (run.json and a file count per run, nothing parsed deeply), so
hundreds of runs open at once; a run's cells are read only when it is opened.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Input, Label
from textual.widgets.data_table import ColumnKey
from textual.worker import Worker, get_current_worker

from dspark_tui.report.words import Texts
from dspark_tui.results import RunSummary, scan_runs
from dspark_tui.results.run_size import format_size
from dspark_tui.tui import colours, safe
from dspark_tui.tui.keys import HISTORY_KEYS
from dspark_tui.tui.run_facts import BEST_WIDTH, RunFacts, run_facts
from dspark_tui.tui.screens.loading import LoadingScreen
from dspark_tui.tui.widgets.footer import KeysFooter
from dspark_tui.tui.widgets.plan_tree import PART_DONE
from dspark_tui.tui.words import lang_of, status_said

LIVE_STATUSES = ("running",)
BEST_ARM_RUNS = 100
LIVE_RESCAN_S = 5.0  # while a listed run is going, its status and counts change under the list
# (key, width): what tells runs apart first, so 80 columns show start, status, counts (8:
# `0/35 ◐35`, a stopped sweep's part-measured cells too), best arm, size (`2.1M`: four
# characters, before the name so that a wider status such as "completed, 1 skipped" costs the
# name's end, not the size) and the name, 20 characters (`dspark_st_comparison`): the row is
# 78 columns, a scrollbar's two short of 80; arms and model follow for wider terminals.
STATUS_WIDTH = 24
NAME_WIDTH = 20
# Labels from the catalogue (`screens.history.column.<key>`).
COLUMNS = (("mark", 1), ("date", 11), ("status", 9), ("cells", 8), ("best", BEST_WIDTH), ("size", 4),
           ("name", NAME_WIDTH), ("arms", 14), ("model", 26))


class RunTable(DataTable[Text | str]):
    """The list of runs: j/k, and g/Home and G/End jump to the first and the last run (a plain
    DataTable scrolls sideways with Home and End)."""

    BINDINGS: ClassVar[list[BindingType]] = [*HISTORY_KEYS]


class HistoryScreen(LoadingScreen):
    DEFAULT_CSS = """
    HistoryScreen #history-filter { height: 3; }
    HistoryScreen DataTable { height: 1fr; }
    """
    AUTO_FOCUS = "#history-table"  # keys act on the list; `/` moves to the filter
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Open", id="history.open", show=True),
        # Off the footer so that 80 columns hold the rest; `c` says to mark with space first.
        Binding("space", "mark", "Mark", id="history.mark", show=False,
                tooltip="mark up to two runs"),
        Binding("c", "compare", "Compare", id="history.compare", tooltip="compare the two marked runs"),
        Binding("r", "report", "Report", id="history.report"),
        Binding("a", "attach", "Attach", id="history.attach",
                tooltip="watch and control a running run"),
        Binding("u", "resume", "Resume", id="history.resume",
                tooltip="resume an interrupted run (failed and missing cells run again)"),
        Binding("n", "app.new_run", "New run", id="history.new_run",
                tooltip="pick a plan, its arms and scenarios; optionally detached"),
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
        # Best arm and ok cells, read in the background newest first; kept while the run's
        # status and file count stay as they were when read (a run that finishes is read again).
        self.facts: dict[Path, tuple[tuple[str, int], RunFacts]] = {}

    def compose(self) -> ComposeResult:
        t = Texts(lang_of(self.app), "screens")
        yield Label(t("history.title"), id="history-title", classes="title-line")
        yield Input(placeholder=t("history.filter_hint"), id="history-filter")
        table = RunTable(cursor_type="row", zebra_stripes=True, id="history-table")
        yield table
        yield KeysFooter(compact=True)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        # Fixed widths: measuring every cell of hundreds of rows on each change is what made a
        # long history slow to open (1.4 s for 500 runs, most of it in column-width updates).
        t = Texts(lang_of(self.app), "screens")
        for key, width in COLUMNS:
            table.add_column(t(f"history.column.{key}"), key=key, width=width)
        table.focus()
        # Status colours are theme variables resolved as rows are filled: refill on a switch.
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._fill())
        self.set_interval(LIVE_RESCAN_S, self._rescan_while_live)
        self.rescan()

    def _rescan_while_live(self) -> None:
        if self.is_current and any(run.status in (*LIVE_STATUSES, "starting") for run in self.runs):
            self.rescan()

    def on_screen_resume(self) -> None:
        """Back from a run or a detail view: runs may have started, finished or appeared."""
        if self._scanned:
            self.rescan()

    def rescan(self) -> Worker[list[RunSummary]]:
        # Sizes are cached by directory mtimes (results/run_size.py): a rescan walks only what changed.
        return self.load(partial(scan_runs, self.roots, sizes=True), self._show_runs,
                         Texts(lang_of(self.app), "screens")("history.scanning"))

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
        lang = lang_of(self.app)
        for run in self.runs[:BEST_ARM_RUNS]:
            if worker.is_cancelled:
                return
            known = self.facts.get(run.path)
            if run.problem or (known is not None and known[0] == _signature(run)):
                continue
            facts = run_facts(run.path, lang)
            self.app.call_from_thread(self._show_facts, run, facts)

    def _show_facts(self, run: RunSummary, facts: RunFacts) -> None:
        self.facts[run.path] = (_signature(run), facts)
        table = self.query_one(DataTable)
        if str(run.path) in {str(key.value) for key in table.rows}:
            table.update_cell(str(run.path), "best", facts.best)
            table.update_cell(str(run.path), "cells", self._cells(run))
            if facts.skipped:
                self._fill()  # "completed, 1 skipped": the status column may need to widen

    def _status(self, run: RunSummary) -> str:
        t = Texts(lang_of(self.app), "screens")
        if run.problem:
            return t("history.problem", problem=run.problem)
        known = self.facts.get(run.path)
        skipped = known[1].skipped if known is not None and known[0] == _signature(run) else 0
        return status_said(lang_of(self.app), run.status, skipped=skipped)

    def _cells(self, run: RunSummary) -> str:
        """ok/total: run.json's count for a finished run, the background's count (ok across
        rounds) for one still going; the file count until that is read."""
        known = self.facts.get(run.path)
        facts = known[1] if known is not None and known[0] == _signature(run) else None
        ok = facts.cells_ok if facts is not None else run.cells_done
        # `0/35 ◐35`: a run stopped in its second round has no whole cell, yet a measurement of
        # every one (the plan tree's ◐: measured in some of its planned rounds).
        partial = f" {PART_DONE}{facts.partial}" if facts is not None and facts.partial else ""
        return f"{ok}/{run.cells_total}{partial}"

    def _fill(self) -> None:
        table = self.query_one(DataTable)
        words = self.query_one(Input).value.lower().split()
        shown = [run for run in self.runs if _matches(run, words)]
        styles = {status: colours.rich_style(spec) for status, spec in colours.RUN_STATUS.items()}
        chosen = self.selected()
        wanted = str(self.prefer) if self.prefer is not None else str(chosen.path) if chosen else ""
        statuses = {run.path: self._status(run) for run in shown}
        with self.app.batch_update():
            table.clear()
            # As wide as the longest status shown ("completed, 1 skipped"), not wider: at 80
            # columns every character goes to the name. In cells, not characters: 已完成 is 6.
            column = table.columns[ColumnKey("status")]
            widest = max((cell_len(status) for status in statuses.values()), default=6)
            column.width = max(min(widest, STATUS_WIDTH), cell_len(str(column.label)))
            table._require_update_dimensions = True
            for run in shown:
                known = self.facts.get(run.path)
                table.add_row(
                    "*" if run.path in self.marked else " ",
                    _started(run.started_at),
                    Text(statuses[run.path], style=styles.get(run.status, "")),
                    self._cells(run),
                    Text(known[1].best) if known is not None else "…",  # Text: never markup
                    Text(format_size(run.size_bytes, short=True), justify="right"),
                    Text(_short(run.name, NAME_WIDTH)),
                    Text(",".join(run.arms)),
                    Text(_short(Path(run.model).name or run.model, 26)),
                    key=str(run.path),
                )
            if wanted in {str(r.path) for r in shown}:
                table.move_cursor(row=table.get_row_index(wanted))
                self.prefer = None
        total = len(self.runs)
        t = Texts(lang_of(self.app), "screens")
        count = (t("history.count_of", shown=len(shown), total=total) if len(shown) != total
                 else t("history.count_one" if total == 1 else "history.count", total=total))
        title = self.query_one("#history-title", Label)
        # Folder names on the line (80 columns), the whole paths on hover.
        roots = t.join(r.name or str(r) for r in self.roots)
        # First, on a first start (80 columns cut the line's end): how to make a run.
        hint = "" if self._has_own_runs() else t("history.first_hint")
        title.update(safe.text(t("history.heading", hint=hint, count=count, roots=roots)))
        title.tooltip = "\n".join(str(r) for r in self.roots)

    def _has_own_runs(self) -> bool:
        """A run in the results folder (not only the shipped sample): else the title says how
        to start one, for a first start."""
        own = self.roots[0].expanduser().resolve() if self.roots else None
        return not self._scanned or any(own in run.path.expanduser().resolve().parents
                                        for run in self.runs)

    @on(Input.Changed, "#history-filter")
    def _filter_changed(self) -> None:
        self._fill()

    @on(Input.Submitted, "#history-filter")
    def _filter_done(self) -> None:
        self.query_one(DataTable).focus()

    def on_key(self, event: events.Key) -> None:
        """Esc in the filter goes back to the list, keeping what was typed."""
        if event.key == "escape" and self.focused is self.query_one(Input):
            event.stop()
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
        t = Texts(lang_of(self.app), "screens")
        run = self.selected()
        if run is None:
            return
        if run.status not in LIVE_STATUSES:
            self.notify(t("history.not_running", name=run.name,
                          status=status_said(lang_of(self.app), run.status)), severity="warning")
            return
        self.app.open_live(run.path, read_only=False)  # type: ignore[attr-defined]

    def action_resume(self) -> None:
        t = Texts(lang_of(self.app), "screens")
        run = self.selected()
        if run is None:
            return
        if run.status in LIVE_STATUSES:
            self.notify(t("history.still_running", name=run.name), severity="warning")
            return
        if run.status == "completed" and run.cells_done >= run.cells_total:
            self.notify(t("history.complete", name=run.name))
            return
        self.app.resume_run(run.path)  # type: ignore[attr-defined]

    def action_report(self) -> None:
        run = self.selected()
        if run is None:
            return
        from dspark_tui.tui.screens.report import ReportScreen

        self.app.push_screen(ReportScreen(run.path))

    def action_mark(self) -> None:
        t = Texts(lang_of(self.app), "screens")
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
        self.notify(t("history.marked_two" if len(self.marked) == 2 else "history.marked",
                      n=len(self.marked)))

    def action_compare(self) -> None:
        t = Texts(lang_of(self.app), "screens")
        if len(self.marked) != 2:
            self.notify(t("history.mark_first"), severity="warning")
            return
        from dspark_tui.tui.screens.compare import CompareScreen

        # The "2 marked" toast has said its piece: over the comparison it hid the table's last rows.
        self.app.clear_notifications()
        self.app.push_screen(CompareScreen(self.marked[0], self.marked[1]))


def _signature(run: RunSummary) -> tuple[str, int]:
    return (run.status, run.cells_done)


def _started(started_at: str) -> str:
    """`12-01 06:40` from `2026-12-01T06:40:12+00:00`: the year rarely tells runs apart."""
    date, _, time = started_at.partition("T")
    return f"{date[5:10]} {time[:5]}".strip() if date else ""


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _matches(run: RunSummary, words: list[str]) -> bool:
    haystack = " ".join([run.name, run.model, run.status, run.started_at, *run.arms,
                         run.path.name]).lower()
    return all(word in haystack for word in words)
