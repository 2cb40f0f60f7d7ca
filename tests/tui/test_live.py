"""The app running the demo plan against the real simulator, in a real runner process.

Slow (a few seconds each: servers start, cells run), so marked `slow`; CI still runs them.
Each asserts what a user sees and what is left on disk and in the process table.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot

from dspark_tui.tui.app import DsparkApp
from dspark_tui.tui.screens.plan_picker import StartRequest
from dspark_tui.tui.screens.run_screen import RunScreen
from tests.simulator import demo_plan_text
from tests.tui.helpers import make_app, screen_text, table_text, until_shown, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]
SIZE = (120, 40)


def demo_plan(tmp_path: Path, *, slow: bool = False) -> Path:
    """The shipped demo plan, faster; `slow` keeps cells long enough to act during one."""
    speed = "2" if slow else "20"
    text = demo_plan_text(speed)
    assert f'"--speed", "{speed}"' in text
    path = tmp_path / "demo-test.toml"
    path.write_text(text)
    return path


async def wait_for(pilot: Pilot[object], condition: Callable[[], object], timeout: float = 45.0) -> None:
    """wait_until with the patience a real runner and simulator need on a loaded machine."""
    await wait_until(pilot, condition, timeout, what="the run to get there")


def run_screen(app: DsparkApp) -> RunScreen:
    screen = next((s for s in app.screen_stack if isinstance(s, RunScreen)), None)
    assert screen is not None, f"no run screen; screens: {app.screen_stack}"
    return screen


async def shown_run_screen(pilot: Pilot[object], app: DsparkApp, *, measuring: bool = False) -> RunScreen:
    """The run screen once the app shows it; `measuring`: once a cell is in flight too."""
    await wait_for(pilot, lambda: any(isinstance(s, RunScreen) for s in app.screen_stack))
    screen = run_screen(app)
    if measuring:
        await wait_for(pilot, lambda: screen.state.current is not None)
    return screen


async def test_demo_runs_to_its_end_and_fills_the_ab_table(tmp_path: Path):
    plan = demo_plan(tmp_path)
    app = make_app(tmp_path, start=StartRequest(plan=str(plan), scenarios=["chat_short",
                                                                         "decode_heavy"]))
    try:
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            screen = await shown_run_screen(pilot, app)
            await wait_for(pilot, lambda: screen.state.done >= 1)
            await wait_for(pilot, lambda: screen.state.finished)
            assert screen.state.status == "completed", screen.state.message
            text = await until_shown(pilot, app, "[completed]")
            assert "cells 6/6" in text
            rows = {(r[0], r[1]): r for r in table_text(app, "#ab-table")}
            assert set(rows) == {("chat_short", "1"), ("chat_short", "16"), ("decode_heavy", "1")}
            # A winner, or "tie" when the margin is inside the 2 % band (one pass: single verdicts)
            assert all(row[2] in ("st=3", "st=5", "tie") for row in rows.values()), rows
            assert all(row[3] == "single" for row in rows.values()), rows
            await pilot.press("q")
    finally:
        app.stop_owned(10)
    run_dir = screen.run_dir
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"
    assert len(list((run_dir / "cells").glob("*/*.json"))) == 6


def key_bar(app: DsparkApp) -> str:
    return screen_text(app).rstrip("\n").splitlines()[-1]


async def test_pause_skip_and_abort_from_the_keyboard(tmp_path: Path):
    plan = demo_plan(tmp_path, slow=True)
    app = make_app(tmp_path, start=StartRequest(plan=str(plan), arms=["st=3"]))
    try:
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            screen = await shown_run_screen(pilot, app, measuring=True)
            await pilot.press("p")
            await wait_for(pilot, lambda: screen.state.paused, timeout=15)
            await until_shown(pilot, app, "[paused]")
            # The key bar says how to go on (the runner's "resume to go on" is no toast)
            await wait_for(pilot, lambda: " Resume " in key_bar(app), timeout=10)
            assert " Pause " not in key_bar(app)
            await pilot.press("p")
            await wait_for(pilot, lambda: not screen.state.paused, timeout=15)
            await wait_for(pilot, lambda: " Pause " in key_bar(app), timeout=10)
            # Skip the demo's one long cell (4 x 1,024 tokens at c1): a short one could end
            # before the skip reaches the runner, and the run with it (CI saw that)
            await wait_for(pilot, lambda: (current := screen.state.current) is not None
                           and current.key.scenario == "decode_heavy")
            await pilot.press("s")
            await wait_for(pilot, lambda: screen.state.skipped >= 1, timeout=15)
            await pilot.press("a")
            await until_shown(pilot, app, "Abort the run?")
            await pilot.press("y")
            await wait_for(pilot, lambda: screen.state.finished, timeout=30)
            assert screen.state.status == "aborted"
            await pilot.press("q")
    finally:
        app.stop_owned(10)
    manifest = json.loads((screen.run_dir / "run.json").read_text())
    assert manifest["status"] == "aborted"


async def test_quit_while_running_asks_then_stops_the_runner(tmp_path: Path):
    plan = demo_plan(tmp_path, slow=True)
    app = make_app(tmp_path, start=StartRequest(plan=str(plan)))
    try:
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            screen = await shown_run_screen(pilot, app, measuring=True)
            await pilot.press("q")
            await until_shown(pilot, app, "Abort and quit (a)")
            await pilot.press("s")  # stay
            await wait_for(pilot, lambda: app.screen is screen, timeout=10)
            assert app.is_running
            await pilot.press("q", "a")
            await wait_for(pilot, lambda: not app.is_running, timeout=30)
    finally:
        app.stop_owned(10)
    assert not app.live_owned()
    manifest = json.loads((screen.run_dir / "run.json").read_text())
    assert manifest["status"] in ("aborted", "interrupted")


@pytest.mark.timeout(150)  # 70 s here under load 15, and its cleanup may wait out an abort
async def test_detach_and_quit_leaves_the_run_going(tmp_path: Path):
    plan = demo_plan(tmp_path, slow=True)
    app = make_app(tmp_path, start=StartRequest(plan=str(plan), arms=["st=3"]))
    try:
        async with app.run_test(size=(80, 24), notifications=True) as pilot:
            screen = await shown_run_screen(pilot, app, measuring=True)
            await pilot.press("q")
            await until_shown(pilot, app, "Detach and quit (d)")
            await pilot.press("d")
            await wait_for(pilot, lambda: not app.is_running, timeout=30)
        assert not app.live_owned()
        run_dir = screen.run_dir
        control = [json.loads(line)["action"]
                   for line in (run_dir / "control.jsonl").read_text().splitlines()]
        assert "abort" not in control and "detach" in control
        assert json.loads((run_dir / "run.json").read_text())["status"] == "running"
        link = app.links[0]
        assert link.alive() and not link.owned
    finally:
        for link in app.links:
            # The test's own cleanup: the detached runner would go on. Until it has exited: an
            # abort writes the reports (pandas, charts) before run.json's status, seconds of
            # CPU that took over 10 s on a loaded box, and stop() then SIGTERMed and SIGKILLed
            # it mid-way, leaving "running" (the cause of this test's intermittent failure).
            link.stop(45)
    assert json.loads((run_dir / "run.json").read_text())["status"] == "aborted"
