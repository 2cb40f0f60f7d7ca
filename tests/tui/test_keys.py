"""k9s habits (issue 23): j/k/g/G in History, a run's cells and the report viewer; `/` with n/N
and `]`/`[` in the report; save on `w`; a user's [keymap] still wins; `?` lists every key."""

from __future__ import annotations

import shutil
from pathlib import Path

from textual.widgets import DataTable

from dspark_tui.tui.keys import resolve_keymap
from dspark_tui.tui.screens.report import ReportScreen, ReportScroll, ReportTable, find_in
from tests.tui.helpers import history_listed, make_app, screen_text, until_shown, wait_until
from tests.tui.test_snapshots import RECORDED

SAMPLE = Path(__file__).resolve().parents[2] / "sample_results"
SAMPLE_RUN = next(SAMPLE.glob("dspark_st_comparison_*"), None) if SAMPLE.is_dir() else None


def _runs(tmp_path: Path, n: int = 3) -> None:
    for i in range(n):
        shutil.copytree(RECORDED, tmp_path / "results" / f"demo_{i}")


async def test_history_moves_with_j_k_g_and_shift_g(tmp_path: Path):
    _runs(tmp_path)
    app = make_app(tmp_path, settings={"language": "en"})
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await history_listed(pilot, at_least=3)
        table = screen.query_one("#history-table", DataTable)
        last = table.row_count - 1
        assert table.cursor_row == 0
        await pilot.press("j", "j")
        assert table.cursor_row == 2
        await pilot.press("k")
        assert table.cursor_row == 1
        await pilot.press("G")
        assert table.cursor_row == last
        await pilot.press("g")
        assert table.cursor_row == 0


async def _report(pilot, app, run_dir: Path) -> ReportScroll:  # type: ignore[no-untyped-def]
    app.push_screen(ReportScreen(run_dir))
    await until_shown(pilot, app, "not saved yet (w saves it)", timeout=30)
    await wait_until(pilot, lambda: app.screen.query(ReportTable), timeout=30, what="tables drawn")
    await pilot.pause()
    return app.screen.query_one(ReportScroll)


async def test_report_viewer_keys(tmp_path: Path):
    run_dir = tmp_path / "results" / "demo_0"
    shutil.copytree(RECORDED, run_dir)
    app = make_app(tmp_path, settings={"language": "en"})
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        scroll = await _report(pilot, app, run_dir)
        await pilot.press("j", "j", "j")
        await wait_until(pilot, lambda: scroll.scroll_y == 3, what="three lines down")
        await pilot.press("G")
        await wait_until(pilot, lambda: scroll.scroll_y == scroll.max_scroll_y > 20, what="the end")
        await pilot.press("g")
        await wait_until(pilot, lambda: scroll.scroll_y == 0, what="the top")
        # ] and [: from heading to heading, forwards and back.
        await pilot.press("right_square_bracket")
        await wait_until(pilot, lambda: scroll.scroll_y > 0, what="the next section")
        first = scroll.scroll_y
        await pilot.press("right_square_bracket")
        await wait_until(pilot, lambda: scroll.scroll_y > first, what="the section after")
        await pilot.press("left_square_bracket")
        await wait_until(pilot, lambda: scroll.scroll_y == first, what="back one section")
        # / words Enter: the first match in view; n the next one, N back.
        await pilot.press("g", "slash", *"stress_standard", "enter")
        screen = app.screen
        assert isinstance(screen, ReportScreen)
        matches = find_in(scroll, "stress_standard")
        assert len(matches) >= 3
        await until_shown(pilot, app, f"/stress_standard 1/{len(matches)} (n/N)")
        await pilot.press("n")
        await until_shown(pilot, app, f"/stress_standard 2/{len(matches)} (n/N)")
        second = scroll.scroll_y
        assert "stress_standard" in screen_text(app)
        await pilot.press("n", "N")
        await until_shown(pilot, app, f"/stress_standard 2/{len(matches)} (n/N)")
        assert scroll.scroll_y == second
        await pilot.press("slash", *"no such words", "enter")
        await until_shown(pilot, app, "not found: no such words")
        # w writes the file (it was g before j/k/g/G).
        await pilot.press("w")
        await until_shown(pilot, app, "[en] saved:")
        assert (run_dir / "report.en.md").is_file()


def test_a_users_key_wins_over_a_lists_on_that_screen_only():
    assert resolve_keymap({"report.save": "g"}) == {"report.save": "g", "report.top": "home"}
    assert resolve_keymap({"run.log": "g"}) == {"run.log": "g"}  # another screen: untouched
    assert resolve_keymap({"app.help": "j"})["history.down"] == "down"  # the app's: everywhere
    assert resolve_keymap({"report.top": "t"}) == {"report.top": "t"}


async def test_user_keymap_still_wins_in_the_report_viewer(tmp_path: Path):
    run_dir = tmp_path / "results" / "demo_0"
    shutil.copytree(RECORDED, run_dir)
    app = make_app(tmp_path, settings={"language": "en", "keymap": {"report.save": "g"}})
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        scroll = await _report(pilot, app, run_dir)
        await pilot.press("j", "j")
        await wait_until(pilot, lambda: scroll.scroll_y == 2, what="two lines down")
        await pilot.press("g")  # the user's: save, not the first line
        await until_shown(pilot, app, "[en] saved:")
        assert (run_dir / "report.en.md").is_file() and scroll.scroll_y == 2
        await pilot.press("home")  # the first line keeps its other key
        await wait_until(pilot, lambda: scroll.scroll_y == 0, what="the top")
        await pilot.press("question_mark")
        await until_shown(pilot, app, "report.save")
        rows = {line.split("|")[3].strip(): line for line in app.screen._text().splitlines()
                if line.count("|") == 4}
        assert "`g`" in rows["report.save"] and "`home`" in rows["report.top"], rows


async def test_help_lists_every_key_of_the_report_viewer(tmp_path: Path):
    run_dir = tmp_path / "results" / "demo_0"
    shutil.copytree(RECORDED, run_dir)
    app = make_app(tmp_path, settings={"language": "en"})
    async with app.run_test(size=(160, 60)) as pilot:
        await _report(pilot, app, run_dir)
        await pilot.press("question_mark")
        text = await until_shown(pilot, app, "report.save")
        for binding_id in ("report.lang", "report.find", "report.find_next", "report.find_prev",
                           "report.section_next", "report.section_prev", "report.columns_left",
                           "report.down", "report.up", "report.top", "report.bottom",
                           "report.back", "app.quit", "app.help"):
            assert binding_id in text, binding_id


async def test_help_at_80_columns_shows_keys_and_ids_whole_in_chinese(tmp_path: Path):
    """CJK actions have no spaces to wrap at: the table used to shrink the key column to "sp…"
    and the header to "按…"; the action column folds instead."""
    _runs(tmp_path, 1)
    app = make_app(tmp_path, settings={"language": "zh"})
    async with app.run_test(size=(80, 24)) as pilot:
        await history_listed(pilot)
        await pilot.press("question_mark")
        text = await until_shown(pilot, app, "history.mark")
        assert "按键" in text and "space" in text and "history.compare" in text, text
        assert "…" not in text, text
