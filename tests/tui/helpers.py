"""Building the real app around a temporary results folder and config, and reading what it shows."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console
from textual.app import App
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


async def until_shown(pilot: object, app: App[object], text: str, timeout: float = 10.0) -> str:
    """Wait until `text` is on the screen (rendering a big Markdown table takes a while)."""
    import asyncio
    import time

    deadline = time.monotonic() + timeout
    screen = screen_text(app)
    while text not in screen:
        if time.monotonic() > deadline:
            raise AssertionError(f"{text!r} not shown within {timeout} s; the screen:\n{screen}")
        await asyncio.sleep(0.1)
        screen = screen_text(app)
    return screen
