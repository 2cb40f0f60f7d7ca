"""The run's report rendered in the terminal, in either language, and saved where it can be copied.

Viewing renders in memory and writes nothing (a read-only run directory opens too); `w` writes
the file. Prose wraps to the pane; each table is a DataTable whose label columns stay pinned
while `←`/`→` scroll every table's numbers sideways, and whose long text columns wrap.
j/k/g/G move as in k9s, `/` searches (n/N the next and previous match), `]`/`[` jump between
sections.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import ClassVar

from rich.console import JustifyMethod
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import DataTable, Input, Label, Markdown
from textual.widgets.markdown import MarkdownBlock

from dspark_tui.config import locale_language
from dspark_tui.model import UserError
from dspark_tui.report.markdown import render_report
from dspark_tui.report.words import Texts
from dspark_tui.results import RunStore, load_run
from dspark_tui.tui.keys import REPORT_KEYS
from dspark_tui.tui.report_blocks import Block, Table, report_blocks
from dspark_tui.tui.screens.loading import LoadingScreen
from dspark_tui.tui.widgets.columns import step_columns
from dspark_tui.tui.widgets.footer import KeysFooter
from dspark_tui.tui.words import lang_of

MAX_TABLE_ROWS = 10_000  # a K sweep's core table has a few hundred rows
# A text column wider than this ("Why", "Evidence") wraps inside the pane rather than scroll
# out of it, at least this wide; the pane's margins, scrollbar and each cell's padding aside.
WRAP_OVER = 30
MIN_WRAP = 12
HEADINGS = "MarkdownH1, MarkdownH2, MarkdownH3"  # the report's sections (## and ###)
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


def _top(widget: Widget, scroll: Widget) -> int:
    """Where `widget` starts in `scroll`'s content, in lines, wherever it is scrolled to."""
    y = 0
    node: object = widget
    while isinstance(node, Widget) and node is not scroll:
        y += node.virtual_region.y
        node = node.parent
    return y


def find_in(scroll: Widget, words: str) -> list[tuple[Widget, int]]:
    """Each prose block and table row of the report that holds `words` (any case), with the
    line of the widget it is on (a table's rows after its header; wrapped rows counted)."""
    wanted = words.casefold()
    found: list[tuple[Widget, int]] = []
    if not wanted:
        return found
    for widget in scroll.query("ReportTable, MarkdownBlock"):
        if isinstance(widget, ReportTable):
            line = 1  # the header
            for index, row in enumerate(widget.table.rows):
                if any(wanted in cell.plain.casefold() for cell in row):
                    found.append((widget, line))
                height = widget.ordered_rows[index].height if index < widget.row_count else 1
                line += height
        elif isinstance(widget, MarkdownBlock) and not widget.query(MarkdownBlock):
            # leaf blocks only: a list holds its items, which hold their paragraphs
            content = getattr(widget, "_content", None)  # Textual keeps a block's text here
            if content is not None and wanted in content.plain.casefold():
                found.append((widget, 0))
    return found


class ReportScroll(VerticalScroll):
    """The report's one scrolling column: ↑/↓ as usual, ←/→ move every table's columns."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left", "scroll_left", "Columns", id="report.columns_left", key_display="←→",
                tooltip="scroll every table's numbers sideways; its label columns stay"),
        Binding("right", "scroll_right", "Columns", id="report.columns_right", show=False),
        *REPORT_KEYS,
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
    ReportScreen #report-find { display: none; height: 1; border: none; padding: 0 1; }
    ReportScreen #report-find.-open { display: block; }
    """
    AUTO_FOCUS = "#report-scroll"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("l", "toggle_lang", "zh/en", id="report.lang"),
        # `w`rite: g is the first line, as in every list (it was save before j/k/g/G came).
        Binding("w", "save", "Save", id="report.save",
                tooltip="write this language's report file (viewing writes nothing)"),
        Binding("slash", "find", "Find", id="report.find",
                tooltip="search the report; n and N: the next and the previous match"),
        Binding("n", "find_next(1)", "Next match", id="report.find_next", show=False,
                tooltip="the next match of the search"),
        Binding("N", "find_next(-1)", "Previous match", id="report.find_prev", show=False,
                tooltip="the previous match of the search"),
        Binding("right_square_bracket", "section(1)", "Next section", id="report.section_next",
                show=False, key_display="]", tooltip="jump to the next section's heading"),
        Binding("left_square_bracket", "section(-1)", "Previous section",
                id="report.section_prev", show=False, key_display="[",
                tooltip="jump to the previous section's heading"),
        Binding("escape", "back", "Back", id="report.back"),
    ]
    ERROR_LINE = "#report-path"

    def __init__(self, run_dir: Path, lang: str | None = None) -> None:
        super().__init__()
        self.run_dir = Path(run_dir)
        self.lang = lang or ""
        self.text = ""
        self.query_text = ""  # the last search
        self.match = -1  # which of its matches is shown
        self.path_line = ""  # the line above the report, before any search's count

    def compose(self) -> ComposeResult:
        yield Label("", id="report-path")
        yield ReportScroll(id="report-scroll")
        yield Input(placeholder=Texts(lang_of(self.app), "screens")("report.find_hint"), id="report-find")
        yield KeysFooter(compact=True)

    def on_mount(self) -> None:
        if not self.lang:
            self.lang = getattr(self.app, "lang", "") or locale_language()
        self._show_report()

    def _show_report(self) -> None:
        self.load(partial(render_for_screen, self.run_dir, self.lang), self._show,
                  Texts(lang_of(self.app), "screens")("report.rendering", lang=self.lang))

    async def _show(self, rendered: Rendered) -> None:
        self.text = rendered.text
        t = Texts(lang_of(self.app), "screens")
        state = t("report.saved" if rendered.is_saved else "report.not_saved")
        label = self.query_one("#report-path", Label)
        where = f"{rendered.saved.parent.name}/{rendered.saved.name}"  # the whole path on hover
        self.path_line = f"[{rendered.lang}] {state} {where}"
        label.update(Text(self.path_line))
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
        t = Texts(lang_of(self.app), "screens")
        if rendered.not_saved:
            self.notify(t("report.save_failed", why=rendered.not_saved), severity="error")
        else:
            self.notify(t("report.saved_to", path=rendered.saved))
        return self._show(rendered)

    # -- finding and jumping ---------------------------------------------------------------

    def action_find(self) -> None:
        find = self.query_one("#report-find", Input)
        find.add_class("-open")
        find.value = self.query_text
        find.focus()

    @on(Input.Submitted, "#report-find")
    def _found(self, event: Input.Submitted) -> None:
        event.stop()
        self._close_find()
        self.query_text = event.value.strip()
        self.match = -1
        if self.query_text:
            self.action_find_next(1)

    def on_key(self, event: events.Key) -> None:
        find = self.query_one("#report-find", Input)
        if event.key == "escape" and self.focused is find:
            event.stop()
            event.prevent_default()
            self._close_find()

    def _close_find(self) -> None:
        self.query_one("#report-find", Input).remove_class("-open")
        self.query_one(ReportScroll).focus()

    def matches(self) -> list[tuple[Widget, int]]:
        """Where the search's words are: each (widget, line within it), in document order."""
        return find_in(self.query_one(ReportScroll), self.query_text)

    def action_find_next(self, direction: int) -> None:
        if not self.query_text:
            self.notify(Texts(lang_of(self.app), "screens")("report.no_search"), severity="warning")
            return
        found = self.matches()
        if not found:
            self.match = -1
            self.notify(Texts(lang_of(self.app), "screens")("report.not_found", words=self.query_text),
                        severity="warning")
            return
        self.match = (self.match + direction) % len(found) if self.match >= 0 else 0
        widget, line = found[self.match]
        self._show_line(widget, line)
        # On the line above the report, not in a notice: n pressed ten times piles no toasts.
        where = f"/{self.query_text} {self.match + 1}/{len(found)} (n/N)   "
        self.query_one("#report-path", Label).update(Text(where + self.path_line))

    def action_section(self, direction: int) -> None:
        scroll = self.query_one(ReportScroll)
        tops = sorted(_top(heading, scroll) for heading in scroll.query(HEADINGS))
        top = round(scroll.scroll_offset.y)
        if direction > 0:
            target = next((t for t in tops if t > top), None)
        else:
            target = next((t for t in reversed(tops) if t < top), None)
        if target is not None:
            scroll.scroll_to(y=target, animate=False)

    def _show_line(self, widget: Widget, line: int) -> None:
        scroll = self.query_one(ReportScroll)
        scroll.scroll_to(y=max(0, _top(widget, scroll) + line - 2), animate=False)

    def action_toggle_lang(self) -> None:
        self.lang = "en" if self.lang == "zh" else "zh"
        self._show_report()

    def action_save(self) -> None:
        self.load(partial(render_for_screen, self.run_dir, self.lang, save=True), self._show_saved,
                  Texts(lang_of(self.app), "screens")("report.saving", lang=self.lang))

    def action_back(self) -> None:
        self.app.pop_screen()
