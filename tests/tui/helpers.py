"""Building the real app around a temporary results folder and config, and reading what it shows."""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from textual.app import App
from textual.color import Color
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import DataTable

from dspark_tui.config import Settings
from dspark_tui.tui.app import DsparkApp


def make_app(tmp_path: Path, results_root: Path | None = None, **kwargs: object) -> DsparkApp:
    root = results_root or tmp_path / "results"
    settings = Settings(results_root=root, plans_dir=tmp_path / "config" / "plans",
                        **kwargs.pop("settings", {}))  # type: ignore[arg-type]
    kwargs.setdefault("config_file", tmp_path / "config" / "config.toml")
    return DsparkApp(settings, **kwargs)  # type: ignore[arg-type]


def table_text(app: App[object], selector: str) -> list[list[str]]:
    """Every row of a DataTable on the current screen, as the plain strings a user reads."""
    table = app.screen.query_one(selector, DataTable)
    return [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]


def screen_text(app: App[object]) -> str:
    """The visible screen as plain text: what a terminal of the app's size shows right now
    (toasts and modal screens over their background included), rendered as a screenshot is."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True,
                      color_system=None, record=True, legacy_windows=False, safe_box=False)
    compositor = app.screen._compositor
    console.print(compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text()


async def wait_until(pilot: Pilot[object], condition: Callable[[], object], timeout: float = 10.0,
                     what: str = "the condition") -> None:
    """Poll `condition` while the app runs; fail showing the screen if it does not hold in time."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not met within {timeout} s; the screen:\n"
                                 f"{screen_text(pilot.app)}")
        await asyncio.sleep(0.02)
    await pilot.pause()  # let the messages the change posted be handled (no fixed delay)


async def until_shown(pilot: Pilot[object], app: App[object], text: str, timeout: float = 10.0) -> str:
    """Wait until `text` is on the screen (rendering a big Markdown table takes a while)."""
    await wait_until(pilot, lambda: text in screen_text(app), timeout, what=f"{text!r} on screen")
    return screen_text(app)


def colours_of(widget: Widget, text: str, line_with: str = "") -> set[str]:
    """The foreground colours `text` is drawn in by `widget` right now, wherever it appears
    (only on lines that also show `line_with`, to pick one row of a table)."""
    found: set[str] = set()
    for strip in widget.render_lines(Region(0, 0, widget.size.width, widget.size.height)):
        cells = [(char, segment.style) for segment in strip for char in segment.text]
        line = "".join(char for char, _ in cells)
        start = line.find(text) if line_with in line else -1
        while start >= 0:
            for _, style in cells[start:start + len(text)]:
                if style is not None and style.color is not None:
                    found.add(style.color.get_truecolor().hex.upper())
            start = line.find(text, start + 1)
    return found


def theme_colour(app: App[object], name: str) -> str:
    """A theme variable (`success`) as the app resolves it now."""
    return Color.parse(app.theme_variables[name]).hex.upper()
