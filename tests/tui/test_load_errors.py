"""A file that makes a reader fail with something other than a UserError costs a screen its
data, never the app: the screen says what failed and the keys still work.

The broken input is content, not permissions (CI runs as root): a JSON file nested so deep
that the parser gives up with RecursionError.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable

from dspark_tui.tui.app import AttachTarget
from dspark_tui.tui.screens.compare import CompareScreen
from dspark_tui.tui.screens.history import HistoryScreen
from dspark_tui.tui.screens.report import ReportScreen
from dspark_tui.tui.screens.run_detail import RunDetailScreen
from dspark_tui.tui.screens.run_screen import RunScreen
from tests.tui.eventlog import write_run
from tests.tui.helpers import make_app, table_text, until_shown, wait_until

SIZE = (160, 40)
TOO_DEEP = "[" * 100_000  # valid JSON's start; json.loads raises RecursionError, not ValueError


@pytest.fixture(autouse=True)
def readers_that_give_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """The readers now take deep nesting as one problem line (model/numbers.py, issue 25); these
    tests are about a reader that fails all the same, so the JSON reader gives up on TOO_DEEP as
    json.loads did before."""
    from dspark_tui.model import numbers

    real = numbers.loads

    def loads(raw: bytes | str) -> object:
        if (raw[:1000] if isinstance(raw, str) else raw[:1000].decode()) == TOO_DEEP[:1000]:
            raise RecursionError("maximum recursion depth exceeded while decoding a JSON array")
        return real(raw)

    monkeypatch.setattr(numbers, "loads", loads)


def run_with_a_too_deep_cell(root: Path) -> Path:
    run_dir = write_run(root, fail_index=2)
    next((run_dir / "cells").glob("*/*.json")).write_text(TOO_DEEP)
    return run_dir


async def test_a_run_that_cannot_be_read_shows_why_in_detail_report_and_compare(tmp_path: Path):
    root = tmp_path / "results"
    good = write_run(root, started_at="2026-11-28T10:00:00+00:00")
    broken = run_with_a_too_deep_cell(root)
    app = make_app(tmp_path, results_root=root, settings={"language": "zh"})
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen)
                         and len(table_text(app, "#history-table")) >= 2, what="History listed")
        history = app.screen
        assert isinstance(history, HistoryScreen)
        table = history.query_one("#history-table", DataTable)

        async def choose(run_dir: Path, *keys: str) -> None:
            table.move_cursor(row=table.get_row_index(str(run_dir)))
            await pilot.press(*keys)

        await choose(broken, "enter")
        text = await until_shown(pilot, app, f"正在加载 {broken.name}失败：RecursionError")
        assert isinstance(app.screen, RunDetailScreen) and app.is_running
        assert "失败：RecursionError" in text.splitlines()[0]  # the title says it, not just a toast
        await pilot.press("r")
        text = await until_shown(pilot, app, "正在生成 zh 报告失败：RecursionError")
        assert isinstance(app.screen, ReportScreen)
        assert "失败：RecursionError" in text.splitlines()[0]
        await pilot.press("escape", "escape")
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen), what="back in History")
        await choose(broken, "space")
        await choose(good, "space", "c")
        text = await until_shown(pilot, app, "失败：RecursionError")
        assert isinstance(app.screen, CompareScreen)
        assert "失败：RecursionError" in text.splitlines()[0] and "正在对比 " in text
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen), what="back in History")


async def test_a_results_folder_that_cannot_be_scanned_is_said_in_history(tmp_path: Path):
    root = tmp_path / "results"
    run_dir = write_run(root)
    (run_dir / "run.json").write_text(TOO_DEEP)
    app = make_app(tmp_path, results_root=root)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        text = await until_shown(pilot, app, "scanning for runs failed: RecursionError")
        assert isinstance(app.screen, HistoryScreen) and app.is_running
        assert "failed: RecursionError" in text.splitlines()[0]
        await pilot.press("n")  # the app still answers keys
        await wait_until(pilot, lambda: not isinstance(app.screen, HistoryScreen), what="picker open")


async def test_a_run_screen_whose_files_break_the_readers_keeps_watching(tmp_path: Path):
    broken_cell = run_with_a_too_deep_cell(tmp_path / "results")
    app = make_app(tmp_path, start=AttachTarget(broken_cell))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        text = await until_shown(pilot, app, "reading the saved cells failed")
        assert "cells 9/10" in text and isinstance(app.screen, RunScreen)  # the events tell the run

    unreadable_events = write_run(tmp_path / "more")
    (unreadable_events / "events.jsonl").unlink()
    (unreadable_events / "events.jsonl").mkdir()  # every poll fails with IsADirectoryError
    app = make_app(tmp_path, start=AttachTarget(unreadable_events))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until_shown(pilot, app, "reading the run's events failed")
        assert isinstance(app.screen, RunScreen) and app.is_running
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen), what="back in History")


async def test_resuming_a_run_whose_manifest_is_not_a_file_says_so(tmp_path: Path):
    root = tmp_path / "results"
    run_dir = write_run(root, stop_after=3, finish=False)
    (run_dir / "run.json").unlink()
    (run_dir / "run.json").mkdir()  # read_manifest raises IsADirectoryError, not a UserError
    app = make_app(tmp_path, results_root=root)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen) and app.screen.runs,
                         what="History listed")
        app.resume_run(run_dir)
        await until_shown(pilot, app, "cannot resume")
        assert app.is_running and isinstance(app.screen, HistoryScreen)
