"""The look every dialog shares: one frame in the middle of the screen, on the surface colour."""

from __future__ import annotations

from typing import TypeVar

from textual.screen import ModalScreen

_R = TypeVar("_R")


class Dialog(ModalScreen[_R]):
    """A modal screen of one frame (a Vertical, or a VerticalScroll) in the middle of the screen
    on the surface colour; each dialog's own CSS gives the frame's size, border and padding."""

    DEFAULT_CSS = """
    Dialog { align: center middle; }
    Dialog > Vertical, Dialog > VerticalScroll { background: $surface; }
    """
