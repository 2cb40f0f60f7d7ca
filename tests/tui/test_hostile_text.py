"""Text from a run directory or a server shows literally on every screen (issue 25): markup in a
name shows its brackets, an ESC or BEL shows as `\\x1b` / `\\x07`, and no control character
reaches the terminal. The run is the recorded demo with its arm, a scenario, a server's
message and a log line made hostile, as a crafted or shared run directory could have them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from dspark_tui.tui.screens.run_detail import RunDetailScreen
from tests.tui.helpers import (
    history_listed,
    make_app,
    replayed,
    run_screen_shown,
    screen_text,
    settled,
    wait_until,
)
from tests.tui.test_snapshots import MID_RUN_LINES, RECORDED

ARM = "st[b]3\x1b[2J"  # bold markup, then "clear the screen"
SCENARIO = "[i]s\x1b]0;T\x07"  # italic markup, then "set the window title" ended by BEL
SERVER = "[red]boom\x1b[31m"
LOG = "[bold]log\x1b[5m line"
ARM_SHOWN = "st[b]3\\x1b[2J"
SCENARIO_SHOWN = "[i]s\\x1b]0;T\\x07"


def _j(value: str) -> str:
    """As the value sits inside a JSON string."""
    return json.dumps(value)[1:-1]


def hostile_copy(root: Path, *, lines: int | None = None) -> Path:
    """The recorded run (its first `lines` events: mid-run) with the names and texts planted."""
    run_dir = root / "hostile_run"
    shutil.copytree(RECORDED, run_dir)
    for path in run_dir.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".jsonl"):
            text = path.read_text()
            text = text.replace("st=3", _j(ARM)).replace("stress_standard", _j(SCENARIO))
            path.write_text(text)
    events = (run_dir / "events.jsonl").read_text().splitlines(keepends=True)
    if lines is not None:
        events = events[:lines]
        manifest = json.loads((run_dir / "run.json").read_text())
        manifest["status"] = "running"
        (run_dir / "run.json").write_text(json.dumps(manifest))
    t = json.loads(events[-1])["t"]
    extra = [{"t": t, "kind": "server_log", "arm": ARM, "line": LOG},
             {"t": t, "kind": "server_state", "arm": "st=5", "state": "loading", "message": SERVER}]
    events += [json.dumps(event) + "\n" for event in extra]
    (run_dir / "events.jsonl").write_text("".join(events))
    return run_dir


def _no_control(text: str) -> None:
    bad = sorted({hex(ord(c)) for c in text if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) < 0xa0})
    assert not bad, f"control characters on screen: {bad}"


async def test_run_screen_shows_hostile_names_literally(tmp_path: Path):
    run_dir = hostile_copy(tmp_path / "results", lines=MID_RUN_LINES)
    app = make_app(tmp_path, settings={"language": "en"}, clock=lambda: 1795973100.0)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        app.open_replay(run_dir)
        screen = await run_screen_shown(pilot, "[running]")
        await pilot.press("l")
        await wait_until(pilot, lambda: "log\\x1b[5m" in screen_text(app), what="the log line")
        await settled(pilot)
        text = screen_text(app)
        _no_control(text)
        assert f"{ARM_SHOWN}:" in text  # the header's server line
        assert "[red]boom\\x1b[31m" in text  # a server's message
        assert f"{ARM_SHOWN} · {SCENARIO_SHOWN} · c128" in text  # the cell panel's title
        assert f"[{ARM_SHOWN}] [bold]log\\x1b[5m line" in text  # the log pane
        tree = "\n".join(str(node.label) for node in screen.query_one("#plan-tree").root.children)
        assert ARM_SHOWN in tree
        # A notice carries whatever a runner or server said: shown as it is.
        app.notify(f"{ARM} failed: {SERVER}")
        await wait_until(pilot, lambda: "failed: [red]boom" in screen_text(app), what="the notice")
        _no_control(screen_text(app))


async def test_table_detail_and_history_show_hostile_names_literally(tmp_path: Path):
    run_dir = hostile_copy(tmp_path / "results")
    async with replayed(tmp_path, run_dir, "[completed]",
                        size=(160, 40), settings={"language": "en"}) as (pilot, app, screen):
        await wait_until(pilot, lambda: screen.query_one("#ab-table").row_count >= 5, what="rows")
        await settled(pilot)
        text = screen_text(app)
        _no_control(text)
        assert SCENARIO_SHOWN in text  # a row of the A/B table
        assert f"TPOT {ARM_SHOWN}" in text or f"Total {ARM_SHOWN}" in text  # a column header
        await pilot.press("escape")
        await history_listed(pilot)
        app.push_screen(RunDetailScreen(run_dir))

        def loaded() -> bool:
            return isinstance(app.screen, RunDetailScreen) and app.screen.run is not None

        await wait_until(pilot, loaded, timeout=30, what="the run loaded")
        await pilot.press("e")  # the Cells tab: every arm and scenario by name
        await pilot.pause()
        _no_control(screen_text(app))
