"""Two runs side by side: per cell the same arm's Total tok/s in each run and the ratio B / A,
the latency ratios beside it, and first what differs between the runs besides the server."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import ClassVar

import rich.text
from rich.cells import cell_len
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Label, Markdown

from dspark_tui.config import locale_language
from dspark_tui.report.words import Texts
from dspark_tui.results import load_run
from dspark_tui.tui import format as fmt
from dspark_tui.tui import safe
from dspark_tui.tui.screens.loading import LoadingScreen
from dspark_tui.tui.widgets.footer import KeysFooter
from dspark_tui.tui.words import lang_of

# Scenario, c and arm stay in view while the numbers scroll sideways; labels from the
# catalogue (`screens.compare.column.<key>`).
COLUMNS = (("scenario", "left"), ("c", "right"), ("arm", "left"), ("a_tok_s", "right"),
           ("b_tok_s", "right"), ("ratio", "right"), ("tpot_ratio", "right"),
           ("ttft_ratio", "right"))
PINNED = 3


@dataclass
class Compared:
    summary: str  # Markdown: the runs, matched cells, differences, ratios per arm
    rows: list[tuple[str, ...]]


def compare_runs(run_a: Path, run_b: Path, lang: str) -> Compared:
    from dspark_tui.report.compare import none_text, ratio_text, run_comparison_frame, summary_lines

    a, b = load_run(run_a), load_run(run_b)
    frame = run_comparison_frame(a, b)
    summary = summary_lines(a, b, frame, lang, which_runs=False)
    if frame.empty:
        summary.extend(["", none_text(lang)])
    rows: list[tuple[str, ...]] = [
        (r.scenario, str(int(r.concurrency)), r.arm, fmt.number(r.total_a, 1),
         fmt.number(r.total_b, 1), ratio_text(r.total_ratio), ratio_text(r.mean_tpot_ratio),
         ratio_text(r.p99_ttft_ratio))
        for r in frame.itertuples(index=False)
    ]
    return Compared("\n".join(summary), rows)


class CompareScreen(LoadingScreen):
    DEFAULT_CSS = """
    CompareScreen #compare-summary { height: auto; max-height: 50%; }
    CompareScreen #compare-summary Markdown { margin: 0; }
    CompareScreen #compare-table { height: 1fr; }
    """
    AUTO_FOCUS = "#compare-table"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("l", "toggle_lang", "zh/en", id="compare.lang"),
        Binding("escape", "back", "Back", id="compare.back"),
    ]
    ERROR_LINE = "#compare-title"

    def __init__(self, run_a: Path, run_b: Path) -> None:
        super().__init__()
        self.run_a = Path(run_a)
        self.run_b = Path(run_b)
        self.lang = ""

    def compose(self) -> ComposeResult:
        t = Texts(lang_of(self.app), "screens")
        yield Label(safe.text(t("compare.title", a=self.run_a.name, b=self.run_b.name)),
                    id="compare-title", classes="title-line")
        with VerticalScroll(id="compare-summary"):
            yield Markdown(t("compare.comparing"), id="compare-text")
        table: DataTable[rich.text.Text] = DataTable(cursor_type="row", zebra_stripes=True,
                                                     fixed_columns=PINNED, id="compare-table")
        yield table
        yield KeysFooter(compact=True)

    def on_mount(self) -> None:
        self.lang = getattr(self.app, "lang", "") or locale_language()
        self._add_columns([])
        self._compare()

    def _add_columns(self, rows: list[tuple[str, ...]]) -> None:
        """The columns, each as wide as its label and its widest value. Given, not measured by
        the table: DataTable (Textual 8.2) widens auto-width columns when idle without dropping
        the rows it cached, so rows drawn before then stayed cut at the labels' widths for good
        ("chat_sho", seen in the tests' draws)."""
        table = self.query_one(DataTable)
        t = Texts(lang_of(self.app), "screens")
        for index, (key, justify) in enumerate(COLUMNS):
            label = rich.text.Text(t(f"compare.column.{key}"), justify=justify)  # type: ignore[arg-type]
            width = max([label.cell_len, *(cell_len(row[index]) for row in rows)])
            table.add_column(label, width=width)

    def _compare(self) -> None:
        self.load(partial(compare_runs, self.run_a, self.run_b, self.lang), self._show,
                  Texts(lang_of(self.app), "screens")("compare.loading", a=self.run_a.name,
                                                      b=self.run_b.name))

    async def _show(self, compared: Compared) -> None:
        await self.query_one("#compare-text", Markdown).update(compared.summary)
        table = self.query_one(DataTable)
        table.clear(columns=True)
        self._add_columns(compared.rows)
        for row in compared.rows:
            table.add_row(*[rich.text.Text(value, justify=justify)  # type: ignore[arg-type]
                            for value, (_, justify) in zip(row, COLUMNS, strict=True)])

    def action_toggle_lang(self) -> None:
        self.lang = "en" if self.lang == "zh" else "zh"
        self._compare()

    def action_back(self) -> None:
        self.app.pop_screen()
