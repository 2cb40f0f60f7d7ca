"""The viewing screens at 80x24, as a user over SSH reads them: History, run detail, the report
viewer, compare and the confirm dialog — over real run directories on disk."""

from __future__ import annotations

import json
import re
import shutil
import stat
from pathlib import Path

import pytest
from textual.widgets import DataTable, Input

from dspark_tui.config import Settings, locale_language
from dspark_tui.model import CellResult
from dspark_tui.model.cell import CellStatus
from dspark_tui.results import RunStore, scan_runs
from dspark_tui.tui.report_blocks import report_blocks
from dspark_tui.tui.screens.compare import CompareScreen
from dspark_tui.tui.screens.confirm import ConfirmScreen
from dspark_tui.tui.screens.history import HistoryScreen
from dspark_tui.tui.screens.report import ReportScreen, ReportTable
from dspark_tui.tui.screens.run_detail import RunDetailScreen
from tests.conftest import SAMPLE_RUN
from tests.tui.eventlog import append_events, build_events, write_run
from tests.tui.helpers import history_listed, make_app, screen_text, table_text, until_shown, wait_until

SMALL = (80, 24)


def row_of(app, name: str) -> list[str]:
    return next(row for row in table_text(app, "#history-table") if row[6] == name)


def flat(text: str) -> str:
    """The screen as one line of words: a wrapped sentence reads whole again."""
    return re.sub(r"\s+", " ", re.sub(r"[│▎▊▏▉▌▍█]", " ", text))


# -- History ---------------------------------------------------------------------------------


async def test_history_leads_with_start_status_ok_cells_and_best_arm_at_80_columns(tmp_path: Path):
    root = tmp_path / "results"
    run_dir = write_run(root, started_at="2026-12-01T06:40:12+00:00")
    store = RunStore(run_dir)
    manifest = store.read_manifest()
    manifest.cells_ok = 9
    store.write_manifest(manifest)
    # The user skipped st=3 chat_short c1: its one measurement is saved as skipped.
    ok = next(c for c in store.load_cells()[0].values() if c.arm == "st=3" and c.concurrency == 1)
    store.save_cell(CellResult(arm=ok.arm, scenario=ok.scenario, concurrency=1,
                               status=CellStatus.SKIPPED, error="skipped by the user"))
    app = make_app(tmp_path, results_root=root)
    async with app.run_test(size=SMALL) as pilot:
        await history_listed(pilot)
        await wait_until(pilot, lambda: row_of(app, "demo")[4] != "…", what="best arm read")
        row = row_of(app, "demo")
        assert row[1:4] == ["12-01 06:40", "completed, 1 skipped", "9/10"]
        assert re.fullmatch(r"st=\d \d/4", row[4])  # four cells compared: one was skipped
        line = next(line for line in screen_text(app).splitlines() if "12-01 06:40" in line)
        assert "completed, 1 skipped" in line and "9/10" in line and row[4] in line


async def test_history_shows_each_runs_size_whole_at_80_columns(tmp_path: Path):
    """At 80x24, with enough runs for a scrollbar and a run whose status is the wide "completed,
    1 skipped", every row's size is on screen whole (`1.8M`), and the name starts after it."""
    from tests.tui.test_history_scale import make_runs

    root = tmp_path / "results"
    run_dir = write_run(root, started_at="2026-12-01T06:40:12+00:00")
    store = RunStore(run_dir)
    ok = next(c for c in store.load_cells()[0].values() if c.arm == "st=3" and c.concurrency == 1)
    store.save_cell(CellResult(arm=ok.arm, scenario=ok.scenario, concurrency=1,
                               status=CellStatus.SKIPPED, error="skipped by the user"))
    make_runs(root, 30)
    app = make_app(tmp_path, results_root=root)
    async with app.run_test(size=SMALL) as pilot:
        await history_listed(pilot, at_least=31)
        await until_shown(pilot, app, "completed, 1 skipped")
        table = app.screen.query_one("#history-table", DataTable)
        assert table.scrollbars_enabled[0]  # the list scrolls: its scrollbar takes two columns
        lines = screen_text(app).splitlines()
        assert "Size" in next(line for line in lines if "Started" in line)
        for line in (line for line in lines if re.search(r"\d\d-\d\d \d\d:\d\d", line)):
            run = next(r for r in table.rows if _cell(table, r, "date") in line)
            size, name = _cell(table, run, "size"), _cell(table, run, "name")
            assert re.fullmatch(r"\d+(\.\d)?[BkMGT]", size), size
            assert f" {size}  {name[:4]}" in line, line  # whole, and the name right after


def _cell(table: DataTable, row: object, column: str) -> str:
    return str(table.get_cell(row, column))  # type: ignore[arg-type]


async def test_history_counts_ok_cells_across_rounds_not_files(tmp_path: Path):
    """An interrupted two-round run: a cell with round 1 ok and round 2 not yet measured has a
    file, but is not ok; History counts it apart, as part-measured (◐, as the plan tree)."""
    from dspark_tui.model.events import RoundPlanned

    root = tmp_path / "results"
    run_dir = write_run(root, stop_after=4, finish=False)
    store = RunStore(run_dir)
    manifest = store.read_manifest()
    manifest.plan["bench"].update(rounds=2, repeats=1)  # the plan the rounds below announce
    store.write_manifest(manifest)
    cells = sorted({(c.scenario, c.concurrency) for c in store.load_cells()[0].values()})
    for round_ in (1, 2):
        store.append_event(RoundPlanned(t=0.0, round=round_, arms=["st=3", "st=5"],
                                        cells=[list(c) for c in cells] or [["chat_short", 1]],
                                        repeats=1))
    first = next(iter(store.load_cells()[0].values()))
    store.save_cell(first.model_copy(update={"round": 2}))  # one cell has both rounds
    app = make_app(tmp_path, results_root=root)
    async with app.run_test(size=SMALL) as pilot:
        await history_listed(pilot)
        assert scan_runs([root])[0].cells_done == 4  # the scan's count: cells with a file
        await wait_until(pilot, lambda: row_of(app, "demo")[3] == "1/10 ◐3", what="ok cells counted")


async def test_history_reads_a_run_again_once_it_has_finished(tmp_path: Path):
    """The best arm of a run that was going when History read it fills in when it ends."""
    root = tmp_path / "results"
    run_dir = write_run(root, live=True, stop_after=4, finish=False)
    app = make_app(tmp_path, results_root=root)
    async with app.run_test(size=SMALL) as pilot:
        await history_listed(pilot)
        await wait_until(pilot, lambda: row_of(app, "demo")[4] == "—", what="nothing compared yet")
        everything = build_events(run_dir)
        append_events(run_dir, everything[len(build_events(run_dir, stop_after=4, finish=False)):])
        store = RunStore(run_dir)
        manifest = store.read_manifest()
        manifest.status, manifest.cells_ok, manifest.runner_pid = "completed", 10, None
        store.write_manifest(manifest)
        await pilot.press("f5")
        await wait_until(pilot, lambda: row_of(app, "demo")[4] == "st=5 3/5", what="best arm refilled")
        assert row_of(app, "demo")[2:4] == ["completed", "10/10"]


async def test_history_escape_leaves_the_filter_and_home_end_jump(tmp_path: Path):
    root = tmp_path / "results"
    for day in (27, 28, 29):
        write_run(root, started_at=f"2026-11-{day}T10:00:00+00:00")
    app = make_app(tmp_path, results_root=root)
    async with app.run_test(size=SMALL) as pilot:
        screen = await history_listed(pilot, at_least=3)
        table = screen.query_one("#history-table", DataTable)
        await pilot.press("slash", *"demo")
        assert isinstance(app.focused, Input)
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.focused is table, what="focus back on the list")
        assert isinstance(app.screen, HistoryScreen) and screen.query_one(Input).value == "demo"
        await pilot.press("end")
        assert table.cursor_row == table.row_count - 1
        await pilot.press("home")
        assert table.cursor_row == 0


# -- run detail ------------------------------------------------------------------------------


async def test_run_detail_keeps_its_title_and_opens_on_the_summary(tmp_path: Path):
    app = make_app(tmp_path, results_root=SAMPLE_RUN.parent, settings={"language": "en"})
    async with app.run_test(size=SMALL) as pilot:
        await history_listed(pilot)
        app.push_screen(RunDetailScreen(SAMPLE_RUN))
        await wait_until(pilot, lambda: isinstance(app.screen, RunDetailScreen)
                         and app.screen.run is not None, what="the run loaded")
        text = await until_shown(pilot, app, "c=1: deploy --spec-tokens 5")
        title = app.screen.query_one("#detail-title")
        assert title.region.y == 0
        assert text.splitlines()[0].startswith(" dspark_st_comparison  2026-07-07 15:06  [completed]")
        assert "36/36 cells ok" in text.splitlines()[0]
        for key in ("w", "e", "s"):
            await pilot.press(key)
            await pilot.pause()
            assert title.region.y == 0 and "dspark_st_comparison" in screen_text(app).splitlines()[0]


async def test_run_detail_cells_tab_reads_a_skipped_cell_as_skipped(tmp_path: Path):
    """The title and the Cells tab count by the same rule: a cell measured ok in round 1 whose
    round 2 the user skipped reads skipped in its row, as the title's "1 skipped" says."""
    root = tmp_path / "results"
    run_dir = write_run(root)
    store = RunStore(run_dir)
    ok = next(c for c in store.load_cells()[0].values() if c.arm == "st=3" and c.concurrency == 1)
    store.save_cell(CellResult(arm=ok.arm, scenario=ok.scenario, concurrency=1, round=2,
                               status=CellStatus.SKIPPED, error="skipped by the user"))
    app = make_app(tmp_path, results_root=root)
    async with app.run_test(size=SMALL) as pilot:
        await history_listed(pilot)
        app.push_screen(RunDetailScreen(run_dir))
        await wait_until(pilot, lambda: isinstance(app.screen, RunDetailScreen)
                         and app.screen.run is not None, what="the run loaded")
        await pilot.press("e")
        await pilot.pause()
        title = screen_text(app).splitlines()[0]
        assert "completed, 1 skipped" in title and "9/10 cells ok" in title
        statuses = {tuple(row[:3]): row[3] for row in table_text(app, "#detail-cells")}
        assert statuses[("st=3", ok.scenario, "1")] == "skipped"
        assert sorted(statuses.values()).count("ok") == 9


# -- report viewer ---------------------------------------------------------------------------


def _tree_state(path: Path) -> dict[str, tuple[int, float]]:
    return {str(p.relative_to(path)): (p.stat().st_size, p.stat().st_mtime)
            for p in sorted(path.rglob("*"))}


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_report_viewer_wraps_prose_reaches_every_column_and_writes_nothing(
        tmp_path: Path, size: tuple[int, int]):
    run_dir = tmp_path / "results" / "seed"
    shutil.copytree(SAMPLE_RUN, run_dir)
    for report in run_dir.glob("report*.md"):
        report.unlink()
    before = _tree_state(run_dir)
    run_dir.chmod(stat.S_IRUSR | stat.S_IXUSR)  # read-only (root writes anyway: checked below)
    try:
        app = make_app(tmp_path, settings={"language": "en"})
        async with app.run_test(size=size) as pilot:
            app.push_screen(ReportScreen(run_dir))
            await until_shown(pilot, app, "not saved yet (w saves it)")
            await wait_until(pilot, lambda: app.screen.query(ReportTable), what="tables drawn")
            screen = app.screen
            # A sentence longer than the pane, whole on screen (wrapped, not clipped).
            prose = [line.removeprefix("- ").replace("`", "")  # code spans show without ticks
                     for block in report_blocks(screen.text) for line in block.text.splitlines()]
            sentence = next(line for line in prose
                            if len(line) > size[0] + 10 and not re.search(r"[*|#\[]", line))
            seen = ""
            for _ in range(10):
                seen = flat(screen_text(app))
                if sentence[:40] in seen:
                    break
                await pilot.press("pagedown")
            assert sentence in seen, sentence
            # The core table's last column, one ←/→ key at a time, with its scenario pinned.
            core = screen.query(ReportTable).first()
            core.scroll_visible(top=True, animate=False)
            for _ in range(14):
                if "P99 TPOT(ms)" in screen_text(app):
                    break
                await pilot.press("right")
                await pilot.pause()
            header = next(line for line in screen_text(app).splitlines() if "Scenario" in line)
            assert "P99 TPOT(ms)" in header and "Concurrency" in header
        assert _tree_state(run_dir) == before  # viewing wrote nothing
    finally:
        run_dir.chmod(0o755)


async def test_report_viewer_opens_in_the_locale_language_and_switches(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    monkeypatch.delenv("LC_ALL", raising=False)
    monkeypatch.delenv("LC_MESSAGES", raising=False)
    run_dir = write_run(tmp_path / "results")
    app = make_app(tmp_path, settings={"language": locale_language()})  # as Settings() has it
    async with app.run_test(size=SMALL) as pilot:
        app.push_screen(ReportScreen(run_dir))
        await until_shown(pilot, app, "[zh] ")
        await pilot.press("l")
        await until_shown(pilot, app, "[en] ")


def test_the_language_follows_the_locale_unless_the_settings_say(monkeypatch: pytest.MonkeyPatch):
    assert locale_language({"LANG": "zh_CN.UTF-8"}) == "zh"
    assert locale_language({"LC_ALL": "en_US.UTF-8", "LANG": "zh_CN.UTF-8"}) == "en"
    assert locale_language({"LC_ALL": "zh_TW.UTF-8", "LANG": "C"}) == "zh"
    assert locale_language({}) == "en"
    for name, value in (("LANG", "zh_CN.UTF-8"), ("LC_ALL", ""), ("LC_MESSAGES", "")):
        monkeypatch.setenv(name, value)
    assert Settings().language == "zh"
    assert Settings(language="en").language == "en"


# -- compare ---------------------------------------------------------------------------------


async def test_compare_reads_at_80_columns_and_warns_what_differs(tmp_path: Path):
    root = tmp_path / "results"
    a = root / "a_run"
    b = root / "b_run"
    shutil.copytree(SAMPLE_RUN, a)
    shutil.copytree(SAMPLE_RUN, b)
    data = json.loads((b / "run.json").read_text())
    data["model"] = "/data/models/other"
    data["warmup_requests"] = 10
    data["plan"]["bench"]["seed"] = 7
    data["plan"]["server"]["command"] = [*data["plan"]["server"]["command"], "--enforce-eager"]
    (b / "run.json").write_text(json.dumps(data))
    app = make_app(tmp_path, results_root=root, settings={"language": "en"})
    async with app.run_test(size=SMALL) as pilot:
        await history_listed(pilot)
        app.push_screen(CompareScreen(a, b))
        text = flat(await until_shown(pilot, app, "Matched cells: 36"))
        for line in ("⚠ models differ: /data/models/DeepSeek-V4-Flash-DSpark vs /data/models/other",
                     "⚠ server commands differ: only B has --enforce-eager",
                     "⚠ prompts differ: seed 1 vs 7", "⚠ warmup requests differ: 100 vs 10"):
            assert line in text
        rows = table_text(app, "#compare-table")
        assert rows[0] == ["chat_short", "1", "st=3", "1,002.3", "1,002.3", "1.000", "1.000", "1.000"]
        # The table draws after the header lines: under load "Matched cells" comes first.
        shown = await until_shown(pilot, app, "chat_short")
        row = next(line for line in shown.splitlines() if "chat_short" in line)
        assert "st=3" in row and "1,002.3" in row and "1.000" in row  # arm and ratio, unclipped


# -- dialogs ---------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_confirm_dialog_shows_its_whole_question(tmp_path: Path, size: tuple[int, int]):
    question = ("Resume demo_20261201-064000? Finished cells are kept; failed and missing cells "
                "run again. The server starts on port 18000 as before, with the same arms.")
    app = make_app(tmp_path)
    async with app.run_test(size=size) as pilot:
        app.push_screen(ConfirmScreen(question, "Resume"))
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="dialog")
        await pilot.pause()
        assert question in flat(screen_text(app))
        assert "Resume (y)" in screen_text(app) and "No (n)" in screen_text(app)



async def test_the_footer_ends_with_the_palette_at_80_columns(tmp_path: Path):
    """A footer too full for 80 columns showed the tail of "New run" (`w`) after "^p palette"."""
    from tests.tui.helpers import run_screen_shown
    from tests.tui.test_snapshots import RECORDED

    run_dir = tmp_path / "demo_run"
    shutil.copytree(RECORDED, run_dir)
    app = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        app.open_replay(run_dir)
        await run_screen_shown(pilot, "[completed]")
        await pilot.pause()
        assert screen_text(app).splitlines()[-1].rstrip().endswith("palette")
        await pilot.press("escape")
        screen = await history_listed(pilot)
        assert "n New run" in screen_text(app).splitlines()[-1]  # History still offers it
        assert isinstance(screen, HistoryScreen)
