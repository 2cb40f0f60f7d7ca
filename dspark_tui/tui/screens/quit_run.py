"""Quitting while a run this app started is going: detach (it goes on), abort, or stay."""

from __future__ import annotations

import asyncio
from typing import ClassVar, Literal

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Label

from dspark_tui.report.words import Texts
from dspark_tui.tui.run_link import OwnedRunner, RunLink
from dspark_tui.tui.screens.dialog import Dialog
from dspark_tui.tui.words import SaidBindings, lang_of

QuitChoice = Literal["detach", "abort"]


class QuitRunScreen(SaidBindings, Dialog[QuitChoice | None]):
    """Dismissed with "detach", "abort", or None to stay."""

    DEFAULT_CSS = """
    QuitRunScreen > Vertical {
        width: 76; max-width: 95%; height: auto; padding: 1 2;
        border: thick $warning;
    }
    QuitRunScreen #question { width: 1fr; }
    QuitRunScreen Horizontal { height: auto; align-horizontal: right; margin-top: 1; }
    QuitRunScreen Button { margin-left: 1; min-width: 10; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("d", "choose('detach')", "Detach and quit", id="quit.detach"),
        Binding("a", "choose('abort')", "Abort and quit", id="quit.abort"),
        Binding("s,escape", "choose(None)", "Stay", id="quit.stay"),
    ]

    def compose(self) -> ComposeResult:
        with Vertical():
            t = Texts(lang_of(self.app), "screens")
            yield Label(t("quit.question"), id="question", markup=False)
            with Horizontal():
                yield Button(t("key.quit.detach") + " (d)", variant="primary", id="detach")
                yield Button(t("key.quit.abort") + " (a)", variant="warning", id="abort")
                yield Button(t("key.quit.stay") + " (s)", id="stay")

    def on_mount(self) -> None:
        self.query_one("#stay", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        choice = event.button.id
        self.dismiss(choice if choice in ("detach", "abort") else None)  # type: ignore[arg-type]

    def action_choose(self, choice: QuitChoice | None) -> None:
        self.dismiss(choice)


async def detach_all(links: list[RunLink]) -> list[str]:
    """Detach every runner this app started; the problems, one line each (those runners stay
    owned, so quitting stops them as before)."""
    problems = []
    for link in links:
        if not isinstance(link, OwnedRunner) or not link.owned:
            continue
        if not await asyncio.to_thread(link.detach):
            problems.append(f"{link.run_dir}: the runner did not answer; it will be stopped")
    return problems
