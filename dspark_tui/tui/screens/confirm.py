"""A yes/no question that must be answered before something irreversible happens."""

from __future__ import annotations

from typing import ClassVar

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Label

from dspark_tui.report.words import Texts
from dspark_tui.tui import safe
from dspark_tui.tui.screens.dialog import Dialog
from dspark_tui.tui.words import SaidBindings, lang_of

MAX_LINE = 64  # characters of the question on one line before it wraps


class ConfirmScreen(SaidBindings, Dialog[bool]):
    DEFAULT_CSS = """
    ConfirmScreen > Vertical {
        width: 60; max-width: 95%; height: auto; max-height: 95%; padding: 1 2;
        border: thick $warning;
    }
    ConfirmScreen #question { width: 1fr; height: auto; }
    ConfirmScreen Horizontal { height: auto; align-horizontal: right; margin-top: 1; }
    ConfirmScreen Button { margin-left: 2; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no"),
    ]

    def __init__(self, question: str, yes: str = "") -> None:
        super().__init__()
        self.question = question
        self.yes = yes

    def compose(self) -> ComposeResult:
        t = Texts(lang_of(self.app), "screens")
        self.yes = self.yes or t("key.confirm.yes")
        self.no = t("key.confirm.no")
        with Vertical():
            yield Label(safe.lines(self.question), id="question", markup=False)
            with Horizontal():
                yield Button(f"{self.yes} (y)", variant="warning", id="yes")
                yield Button(f"{self.no} (n)", id="no")

    def on_mount(self) -> None:
        # As wide as the question needs (and the buttons), up to a readable line; it wraps
        # beyond that, and max-width keeps the whole dialog on a narrow terminal.
        buttons = cell_len(self.yes) + 4 + cell_len(self.no) + 4 + 4 + 2 + 4
        longest = max((cell_len(line) for line in self.question.splitlines()), default=0)
        self.query_one(Vertical).styles.width = min(max(longest, buttons, 30), MAX_LINE) + 2 * 2 + 2
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
