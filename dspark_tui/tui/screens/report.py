"""The run's report rendered in the terminal, in either language, and saved where it can be copied."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import ScrollableContainer
from textual.screen import Screen
from textual.widgets import Footer, Label, Markdown

from dspark_tui.model import UserError
from dspark_tui.report import render_report
from dspark_tui.results import RunStore, load_run


def render_text(run_dir: Path, lang: str) -> str:
    """Freshly rendered from the cells, so it always matches what is on disk now."""
    run = load_run(run_dir)
    if not run.cells:
        raise UserError(f"{run_dir}: no readable cells to report on")
    return render_report(run, lang=lang)


class ReportScreen(Screen[None]):
    DEFAULT_CSS = """
    ReportScreen #report-path { background: $panel; padding: 0 1; width: 1fr; height: auto; }
    ReportScreen #report-scroll { height: 1fr; overflow-x: auto; overflow-y: auto; }
    ReportScreen #report-view { width: 190; height: auto; }
    ReportScreen MarkdownH1 { content-align: left top; text-align: left; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("l", "toggle_lang", "zh/en", id="report.lang"),
        Binding("g", "save", "Regenerate+save", id="report.save"),
        Binding("escape", "back", "Back", id="report.back"),
    ]

    def __init__(self, run_dir: Path, lang: str | None = None) -> None:
        super().__init__()
        self.run_dir = Path(run_dir)
        self.lang = lang or ""
        self.text = ""

    def compose(self) -> ComposeResult:
        yield Label("", id="report-path")
        with ScrollableContainer(id="report-scroll"):
            yield Markdown("", id="report-view")
        yield Footer(compact=True)

    async def on_mount(self) -> None:
        if not self.lang:
            settings = getattr(self.app, "settings", None)
            self.lang = settings.language if settings is not None else "zh"
        await self._show_text()

    def _saved_path(self) -> Path:
        store = RunStore(self.run_dir)
        return store.report_path_for(self.lang)

    async def _show_text(self) -> None:
        try:
            self.text = await asyncio.to_thread(render_text, self.run_dir, self.lang)
        except UserError as exc:
            self.text = f"# No report\n\n{exc}\n"
        saved = self._saved_path()
        state = "saved:" if saved.is_file() else "not saved yet (g saves it):"
        self.query_one("#report-path", Label).update(Text(f"[{self.lang}] {state}\n{saved}"))
        await self.query_one(Markdown).update(self.text)

    async def action_toggle_lang(self) -> None:
        self.lang = "en" if self.lang == "zh" else "zh"
        await self._show_text()

    async def action_save(self) -> None:
        try:
            self.text = await asyncio.to_thread(render_text, self.run_dir, self.lang)
            path = await asyncio.to_thread(RunStore(self.run_dir).write_report, self.text, self.lang)
        except (UserError, OSError) as exc:
            self.notify(f"report not saved: {exc}", severity="error")
            return
        self.notify(f"saved {path}")
        await self._show_text()

    def action_back(self) -> None:
        self.app.pop_screen()
