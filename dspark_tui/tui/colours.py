"""The theme colour each state is drawn in, named as a theme variable and resolved when drawn.

A Rich style copied out of `app.current_theme` keeps the old theme's colours after a switch;
a `$variable` is looked up in the current theme each time it is turned into a style.
"""

from __future__ import annotations

from rich.style import Style as RichStyle
from textual.style import Style

RUN_STATUS = {"completed": "$success", "failed": "$error", "aborted": "$warning",
              "interrupted": "$warning", "paused": "$warning", "running": "$accent"}
CELL_PHASE = {"done": "$success", "failed": "$error", "running": "$accent", "skipped": "$warning"}
WINNER = "bold $success"
FAILED = "$error"


def rich_style(spec: str) -> RichStyle:
    """`bold $success` as a Rich style in the running app's current theme ('' is no style)."""
    return Style.parse(spec).rich_style if spec else RichStyle()

# One colour per arm, in plan order, the same on every chart; theme variables, resolved when drawn.
ARMS = ("$primary", "$warning", "$success", "$error", "$accent", "$secondary", "$foreground")


def arm_colour(index: int) -> str:
    return ARMS[index % len(ARMS)]
