"""Two runs side by side, cell by cell, as the report layer renders the comparison."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer, Label, MarkdownViewer

from dspark_tui.results import load_run
from dspark_tui.tui.screens.loading import LoadingScreen


def comparison_text(run_a: Path, run_b: Path, lang: str) -> str:
    try:
        from dspark_tui.report import render_comparison
    except ImportError:
        return "# Compare\n\nThe comparison renderer is not available in this build.\n"
    return render_comparison(load_run(run_a), load_run(run_b), lang=lang)


class CompareScreen(LoadingScreen):
    DEFAULT_CSS = """
    CompareScreen #compare-title {
        background: $panel; padding: 0 1; width: 1fr; height: 1;
        text-wrap: nowrap; text-overflow: ellipsis;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("l", "toggle_lang", "zh/en", id="compare.lang"),
        Binding("escape", "back", "Back", id="compare.back"),
    ]
    ERROR_LINE = "#compare-title"

    def __init__(self, run_a: Path, run_b: Path) -> None:
        super().__init__()
        self.run_a = run_a
        self.run_b = run_b
        self.lang = ""

    def compose(self) -> ComposeResult:
        yield Label(f"{self.run_a.name}  vs  {self.run_b.name}", id="compare-title")
        yield MarkdownViewer("", show_table_of_contents=False)
        yield Footer(compact=True)

    def on_mount(self) -> None:
        settings = getattr(self.app, "settings", None)
        self.lang = settings.language if settings is not None else "zh"
        self._compare()

    def _compare(self) -> None:
        self.load(partial(comparison_text, self.run_a, self.run_b, self.lang), self._show_text,
                  f"comparing {self.run_a.name} with {self.run_b.name}")

    async def _show_text(self, text: str) -> None:
        await self.query_one(MarkdownViewer).document.update(text)

    def action_toggle_lang(self) -> None:
        self.lang = "en" if self.lang == "zh" else "zh"
        self._compare()

    def action_back(self) -> None:
        self.app.pop_screen()
