"""Building the real app around a temporary results folder and config, and reading what it shows."""

from __future__ import annotations

import asyncio
import contextlib
import io
import time
from collections.abc import AsyncIterator, Callable
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
from dspark_tui.tui.screens.history import HistoryScreen
from dspark_tui.tui.screens.run_screen import RunScreen
from dspark_tui.tui.widgets.run_header import RunHeader


def make_app(tmp_path: Path, results_root: Path | None = None, **kwargs: object) -> DsparkApp:
    root = results_root or tmp_path / "results"
    settings = Settings(results_root=root, plans_dir=tmp_path / "config" / "plans",  # type: ignore[arg-type]
                        **{"language": "en", **kwargs.pop("settings", {})})  # not the machine's locale
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
    if pilot.app.is_running:
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


def widget_text(widget: Widget) -> str:
    """What `widget` draws right now, as plain text."""
    lines = widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
    return "\n".join("".join(segment.text for segment in strip) for strip in lines)


def theme_colour(app: App[object], name: str) -> str:
    """A theme variable (`success`) as the app resolves it now."""
    return Color.parse(app.theme_variables[name]).hex.upper()


async def history_listed(pilot: Pilot[object], at_least: int = 1) -> HistoryScreen:
    """History on top with its scan shown: at least `at_least` rows in the table."""
    app = pilot.app

    def listed() -> bool:
        screen = app.screen
        return (isinstance(screen, HistoryScreen) and len(screen.runs) >= at_least
                and screen.query_one("#history-table", DataTable).row_count >= at_least)

    await wait_until(pilot, listed, what=f"History listing {at_least} runs")
    assert isinstance(app.screen, HistoryScreen)
    return app.screen


async def run_screen_shown(pilot: Pilot[object], text: str, timeout: float = 10.0) -> RunScreen:
    """The run screen on top, its header saying `text` (the first poll is drawn).

    Read from the header's content, not by drawing the screen: a draw between a table's new
    rows and its column sizing leaves rows cached at the old widths (seen in Textual 8.2).
    """
    app = pilot.app

    def shown() -> bool:
        screen = app.screen
        headers = screen.query(RunHeader) if isinstance(screen, RunScreen) else []
        return any(text in str(header.content) for header in headers)

    await wait_until(pilot, shown, timeout, what=f"the run screen saying {text!r}")
    assert isinstance(app.screen, RunScreen)
    return app.screen


@contextlib.asynccontextmanager
async def replayed(tmp_path: Path, run_dir: Path, header: str, size: tuple[int, int] = (80, 24),
                   **app_kwargs: object) -> AsyncIterator[tuple[Pilot[object], DsparkApp, RunScreen]]:
    """The real app (make_app's `app_kwargs`) `size` big, replaying `run_dir` on its run screen
    until its header says `header`: the pilot, the app and the run screen."""
    app = make_app(tmp_path, **app_kwargs)
    async with app.run_test(size=size) as pilot:
        app.open_replay(run_dir)
        yield pilot, app, await run_screen_shown(pilot, header)


async def settled(pilot: Pilot[object], timeout: float = 10.0) -> None:
    """Until every table has sized its columns, then until two looks at the screen, with the
    app idle between them, show the same text: what a picture of the screen needs.

    A DataTable sizes its columns when next idle after rows arrive, and nothing may draw it
    before that (see run_screen_shown); Textual has no public way to ask, hence its private flag.
    """

    def sizing() -> bool:
        return any(table._require_update_dimensions for table in pilot.app.screen.query(DataTable))

    await wait_until(pilot, lambda: not sizing(), timeout, what="tables sized")
    deadline = time.monotonic() + timeout
    before = None
    while True:
        await pilot.pause()
        now = screen_text(pilot.app)
        if now == before:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"the screen kept changing for {timeout} s; last:\n{now}")
        before = now
