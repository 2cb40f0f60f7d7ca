"""A run that was refused before it started: every problem, and that nothing started. It stays
until dismissed (a notice would be gone in seconds, and a refusal is read and acted on)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Button, Label, Static

from dspark_tui.report.words import Texts
from dspark_tui.tui import safe
from dspark_tui.tui.screens.dialog import Dialog
from dspark_tui.tui.words import SaidBindings, lang_of

NOTHING_STARTED = Texts("en", "screens")("refusal.nothing")  # the English, for tests


class RefusalScreen(SaidBindings, Dialog[None]):
    DEFAULT_CSS = """
    RefusalScreen > Vertical {
        width: 90; max-width: 95%; height: auto; max-height: 90%; padding: 0 1;
        border: thick $error;
    }
    RefusalScreen #refusal-title { text-style: bold; color: $error; width: 1fr; }
    RefusalScreen #refusal-problems { height: auto; max-height: 16; margin: 1 0; }
    RefusalScreen .problem { width: 1fr; }
    RefusalScreen #refusal-nothing { width: 1fr; }
    RefusalScreen Button { margin-top: 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,enter,q", "close", "Close", id="refusal.close"),
    ]

    def __init__(self, what: str, problems: list[str]) -> None:
        super().__init__()
        self.what = what
        self.problems = problems

    def compose(self) -> ComposeResult:
        count = len(self.problems)
        t = Texts(lang_of(self.app), "screens")
        title = t("refusal.title_one" if count == 1 else "refusal.title", what=self.what, n=count)
        with Vertical():
            yield Label(safe.text(title), id="refusal-title")
            with VerticalScroll(id="refusal-problems"):
                for problem in self.problems:
                    yield Static(Text("• ") + safe.text(problem), classes="problem")
            yield Label(t("refusal.nothing"), id="refusal-nothing", markup=False)
            yield Button(t("refusal.close"), id="refusal-ok", variant="error")

    def on_mount(self) -> None:
        self.query_one(Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(None)

    def action_close(self) -> None:
        self.dismiss(None)
