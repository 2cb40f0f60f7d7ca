"""The run's report rendered in the terminal, in either language, and saved where it can be copied."""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import ScrollableContainer
from textual.widgets import Footer, Label, Markdown

from dspark_tui.model import UserError
from dspark_tui.report import render_report
from dspark_tui.results import RunStore, load_run
from dspark_tui.tui.screens.loading import LoadingScreen


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
    return Rendered(lang, text, saved, saved.is_file(), not_saved)


class ReportScreen(LoadingScreen):
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
    ERROR_LINE = "#report-path"

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

    def on_mount(self) -> None:
        if not self.lang:
            settings = getattr(self.app, "settings", None)
            self.lang = settings.language if settings is not None else "zh"
        self._show_report()

    def _show_report(self) -> None:
        self.load(partial(render_for_screen, self.run_dir, self.lang), self._show,
                  f"rendering the {self.lang} report")

    async def _show(self, rendered: Rendered) -> None:
        self.text = rendered.text
        state = "saved:" if rendered.is_saved else "not saved yet (g saves it):"
        self.query_one("#report-path", Label).update(Text(f"[{rendered.lang}] {state}\n{rendered.saved}"))
        await self.query_one(Markdown).update(self.text)

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
