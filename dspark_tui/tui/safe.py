"""Text from a run directory, a runner's events or a server, shown on a screen: literally.

A run directory is data someone else may have made, and a server's log or error is whatever it
printed: an arm named `[bold]x` must show its brackets (Rich and Textual parse markup in plain
strings: a DataTable cell, a Tree label, a Label, a notification), and `\\x1b[2J` must show as
those characters rather than clear the terminal (Rich passes ESC through). Every such string on
a screen goes through here: control characters become visible escapes (model/shown.py) and the
result is a Text (never parsed as markup) or, where a widget takes markup, escaped markup.
"""

from __future__ import annotations

from rich.markup import escape
from rich.text import Text

from dspark_tui.model import shown


def plain(value: object) -> str:
    """One line, control characters as visible escapes (`\\x1b`); for Text and Content parts."""
    return shown.plain(value)


def lines(value: object) -> str:
    """Several lines kept (newlines, tabs), every other control character escaped."""
    return shown.text(str(value))


def text(value: object, style: str = "") -> Text:
    """A Text of `value` as it is: no markup parsed, no control character."""
    return Text(shown.plain(value), style=style)


def markup(value: object) -> str:
    """For a widget that parses markup: the value escaped so that it shows literally."""
    return escape(shown.plain(value))
