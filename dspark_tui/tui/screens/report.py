"""The run's report rendered in the terminal, in either language, and saved where it can be copied.

Viewing renders in memory and writes nothing (a read-only run directory opens too); `g` writes
the file. Prose wraps to the pane; each table is a DataTable whose label columns stay pinned
while `←`/`→` scroll every table's numbers sideways.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import ClassVar

from rich.console import JustifyMethod
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import DataTable, Footer, Label, Markdown

from dspark_tui.config import locale_language
from dspark_tui.model import UserError
from dspark_tui.report.markdown import render_report
from dspark_tui.results import RunStore, load_run
from dspark_tui.tui.report_blocks import Block, Table, report_blocks
from dspark_tui.tui.screens.loading import LoadingScreen
from dspark_tui.tui.widgets.columns import step_columns

MAX_TABLE_ROWS = 10_000  # a K sweep's core table has a few hundred rows
# A text column wider than this ("Why", "Evidence") wraps inside the pane rather than scroll
# out of it, at least this wide; the pane's margins, scrollbar and each cell's padding aside.
WRAP_OVER = 30
MIN_WRAP = 12
TABLE_MARGINS = 4  # the table's own, left and right (DEFAULT_CSS below)
SCROLLBAR = 2  # the report's, which a long report has (not yet there while tables mount)


def render_text(run_dir: Path, lang: str) -> str:
    """Freshly rendered from the cells, so it always matches what is on disk now."""
    run = load_run(run_dir)
    if not run.cells:
        raise UserError(f"{run_dir}: no readable cells to report on")
    return render_report(run, lang=lang)


@dataclass
class Rendered:
    lang: str
    text: str
    saved: Path
    is_saved: bool
    not_saved: str = ""  # why saving failed, when it was asked for
    blocks: list[Block] = field(default_factory=list)


def render_for_screen(run_dir: Path, lang: str, *, save: bool = False) -> Rendered:
    """The report as the screen shows it; a run with nothing to report on is a message, not a failure."""
    store = RunStore(run_dir)
    not_saved = ""
    try:
        text = render_text(run_dir, lang)
    except UserError as exc:
        text = f"# No report\n\n{exc}\n"
        not_saved = str(exc) if save else ""
    else:
        if save:
            try:
                store.write_report(text, lang)
            except OSError as exc:
                not_saved = str(exc)
    saved = store.report_path_for(lang)
    return Rendered(lang, text, saved, saved.is_file(), not_saved, report_blocks(text))


class ReportTable(DataTable[Text]):
    """One Markdown table: every column reachable, the label columns pinned. It never takes
    focus, so ↑/↓ keep scrolling the report; the report's ←/→ scroll it sideways."""

    can_focus = False

    def __init__(self, table: Table) -> None:
        super().__init__(cursor_type="none", show_cursor=False, zebra_stripes=True,
                         fixed_columns=table.pinned)
        self.table = table

    def on_mount(self) -> None:
        self.styles.max_height = MAX_TABLE_ROWS  # every row inline (a DataTable caps at 100%)
        right = self.table.right
        pane = self.parent.size.width if isinstance(self.parent, Widget) else 0
        widths = wrap_widths(self.table, (pane or self.app.size.width) - SCROLLBAR - TABLE_MARGINS)
        for index, label in enumerate(self.table.header):
            justify: JustifyMethod = "right" if index < len(right) and right[index] else "left"
            self.add_column(Text(label.plain, style="bold", justify=justify), width=widths.get(index))
        for row in self.table.rows:
            self.add_row(*[Text(cell.plain, style=cell.style, spans=cell.spans,
                                justify="right" if i < len(right) and right[i] else "left")
                           for i, cell in enumerate(row)], height=None if widths else 1)


    def step_columns(self, direction: int) -> None:
        """Scroll by one whole column, so a number is never shown cut."""
        step_columns(self, direction)


def wrap_widths(table: Table, available: int) -> dict[int, int]:
    """The wrapped width of each long text column, when the table is wider than `available`:
    they share what the other columns leave (each cell padded one either side) in proportion
    to their length, none narrower than MIN_WRAP. Empty when the table fits, or has no long text column."""
    right = table.right
    natural = [max([cell.cell_len for cell in [table.header[i], *(row[i] for row in table.rows)]])
               for i in range(len(table.header))]
    long = [i for i, width in enumerate(natural)
            if width > WRAP_OVER and not (i < len(right) and right[i])]
    if not long or sum(natural) + 2 * len(natural) <= available:
        return {}
    room = available - sum(width + 2 for i, width in enumerate(natural) if i not in long)
    room -= 2 * len(long)
    wanted = sum(natural[i] for i in long)
    shares = {i: max(MIN_WRAP, room * natural[i] // wanted) for i in long}
    return {i: share for i, share in shares.items() if natural[i] > share}


class ReportScroll(VerticalScroll):
    """The report's one scrolling column: ↑/↓ as usual, ←/→ move every table's columns."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left", "scroll_left", "Columns", id="report.columns_left", key_display="←→",
                tooltip="scroll every table's numbers sideways; its label columns stay"),
        Binding("right", "scroll_right", "Columns", id="report.columns_right", show=False),
    ]

    def action_scroll_left(self) -> None:
        for table in self.query(ReportTable):
            table.step_columns(-1)

    def action_scroll_right(self) -> None:
        for table in self.query(ReportTable):
            table.step_columns(1)


class ReportScreen(LoadingScreen):
    DEFAULT_CSS = """
    ReportScreen #report-path { background: $panel; padding: 0 1; width: 1fr; height: auto; }
    ReportScreen #report-scroll { height: 1fr; }
    ReportScreen #report-scroll > Markdown { width: 1fr; height: auto; margin: 0; }
    ReportScreen ReportTable { height: auto; width: 1fr; margin: 0 2 1 2; }
    ReportScreen MarkdownH1 { content-align: left top; text-align: left; }
    """
    AUTO_FOCUS = "#report-scroll"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("l", "toggle_lang", "zh/en", id="report.lang"),
        Binding("g", "save", "Save", id="report.save",
                tooltip="write this language's report file (viewing writes nothing)"),
        Binding("escape", "back", "Back", id="report.back"),
    ]
    ERROR_LINE = "#report-path"

    def __init__(self, run_dir: Path, lang: str | None = None) -> None:
        super().__init__()
        self.run_dir = Path(run_dir)
        self.lang = lang or ""
        self.text = ""

    def compose(self) -> ComposeResult:
        yield Label("", id="report-path")
        yield ReportScroll(id="report-scroll")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        if not self.lang:
            self.lang = getattr(self.app, "lang", "") or locale_language()
        self._show_report()

    def _show_report(self) -> None:
        self.load(partial(render_for_screen, self.run_dir, self.lang), self._show,
                  f"rendering the {self.lang} report")

    async def _show(self, rendered: Rendered) -> None:
        self.text = rendered.text
        state = "saved:" if rendered.is_saved else "not saved yet (g saves it):"
        label = self.query_one("#report-path", Label)
        where = f"{rendered.saved.parent.name}/{rendered.saved.name}"  # the whole path on hover
        label.update(Text(f"[{rendered.lang}] {state} {where}"))
        label.tooltip = str(rendered.saved)
        scroll = self.query_one(ReportScroll)
        widgets: list[Widget] = [
            ReportTable(block.table) if block.table is not None else Markdown(block.text)
            for block in rendered.blocks
        ]
        with self.app.batch_update():
            await scroll.remove_children()
            await scroll.mount_all(widgets)

    def _show_saved(self, rendered: Rendered) -> Awaitable[None]:
        if rendered.not_saved:
            self.notify(f"report not saved: {rendered.not_saved}", severity="error")
        else:
            self.notify(f"saved {rendered.saved}")
        return self._show(rendered)

    def action_toggle_lang(self) -> None:
        self.lang = "en" if self.lang == "zh" else "zh"
        self._show_report()

    def action_save(self) -> None:
        self.load(partial(render_for_screen, self.run_dir, self.lang, save=True), self._show_saved,
                  f"saving the {self.lang} report")

    def action_back(self) -> None:
        self.app.pop_screen()
