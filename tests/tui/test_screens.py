"""The app driven through Pilot over real run directories: history, a run's screens, reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from dspark_tui.model import CellKey
from dspark_tui.tui.app import AttachTarget
from dspark_tui.tui.screens.report import ReportScreen
from dspark_tui.tui.screens.run_detail import RunDetailScreen
from tests.conftest import SAMPLE_RUN
from tests.tui.eventlog import append_events, build_events, write_run
from tests.tui.helpers import (
    history_listed,
    make_app,
    run_screen_shown,
    screen_text,
    table_text,
    until_shown,
    wait_until,
)

SIZE = (120, 40)


async def test_history_lists_runs_and_filters_by_typing(tmp_path: Path):
    root = tmp_path / "results"
    write_run(root, fail_index=2, started_at="2026-11-28T10:00:00+00:00")
    write_run(root, stop_after=3, finish=False, started_at="2026-11-29T10:00:00+00:00")
    (root / "junk").mkdir()
    (root / "junk" / "run.json").write_text("{not json")
    app = make_app(tmp_path, results_root=root)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await history_listed(pilot, at_least=3)
        rows = [r for r in table_text(app, "#history-table") if r[6] in ("demo", "junk")]
        statuses = [row[2] for row in rows]
        assert statuses.count("completed") == 1 and statuses.count("interrupted") == 1
        assert any(s.startswith("problem: run.json is unreadable") for s in statuses)
        assert [row[3] for row in rows if row[2] == "completed"] == ["9/10"]
        assert [row[1] for row in rows if row[2] == "completed"] == ["11-28 10:00"]
        await pilot.press("slash", *"interr", "enter")
        await wait_until(pilot, lambda: len(table_text(app, "#history-table")) == 1, what="filtered")
        assert table_text(app, "#history-table")[0][2] == "interrupted"
        assert "— 1 of " in screen_text(app)


async def test_opening_a_run_shows_its_ab_table_and_cells(tmp_path: Path):
    root = tmp_path / "results"
    write_run(root, fail_index=2)
    app = make_app(tmp_path, results_root=root)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await history_listed(pilot)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, RunDetailScreen)
                         and app.screen.run is not None, what="the run loaded")
        rows = {(r[0], r[1]): r for r in table_text(app, "#detail-ab")}
        assert rows[("chat_short", "1")][2] == "st=5"
        assert rows[("stress_standard", "128")][2] == "st=3"
        assert rows[("stress_standard", "128")][3:5] == ["single", "13.64%"]
        await pilot.press("e")
        await wait_until(pilot, lambda: app.focused is app.screen.query_one("#detail-cells"),
                         what="the cells tab")
        cells = table_text(app, "#detail-cells")
        assert len(cells) == 9
        await pilot.press("enter")
        await until_shown(pilot, app, "client: duration=4")


async def test_finished_run_replays_with_failure_in_tree_and_reason_one_key_away(tmp_path: Path):
    run_dir = write_run(tmp_path / "results", fail_index=2)
    app = make_app(tmp_path, start=AttachTarget(run_dir))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await run_screen_shown(pilot, "[completed]")
        text = screen_text(app)
        assert "cells 9/10" in text and "failed 1" in text and "[completed]" in text
        assert "✗ c1" in text
        rows = {(r[0], r[1]): r for r in table_text(app, "#ab-table")}
        assert rows[("decode_heavy", "1")][2] == "—"  # no winner against a failed cell
        assert "failed" in rows[("decode_heavy", "1")]
        await pilot.press("f")
        text = await until_shown(pilot, app, "bench client exited 1")
        assert "cell failed" in text


async def test_attached_view_follows_the_event_log_as_it_grows(tmp_path: Path):
    run_dir = write_run(tmp_path / "results", stop_after=4, finish=False, live=True)
    everything = build_events(run_dir)
    already = len(build_events(run_dir, stop_after=4, finish=False))
    app = make_app(tmp_path, start=AttachTarget(run_dir))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        screen = await run_screen_shown(pilot, "cells 4/10")
        assert len(table_text(app, "#ab-table")) == 4
        append_events(run_dir, everything[already:already + 5])
        await until_shown(pilot, app, "st=3 · stress_standard")
        assert screen.state.current is not None
        append_events(run_dir, everything[already + 5:])
        text = await until_shown(pilot, app, "cells 10/10")
        assert "[completed]" in text
        assert len(table_text(app, "#ab-table")) == 5
        assert screen.state.cells[CellKey(arm="st=5", scenario="stress_standard",
                                          concurrency=128)].phase == "done"


async def test_read_only_view_refuses_control(tmp_path: Path):
    run_dir = write_run(tmp_path / "results", stop_after=2, finish=False, live=True)
    app = make_app(tmp_path, start=AttachTarget(run_dir, read_only=True))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await run_screen_shown(pilot, "cells 2/10")
        await pilot.press("p")
        await until_shown(pilot, app, "opened read-only: attach")
        assert not (run_dir / "control.jsonl").exists()


async def test_attached_view_sends_control_through_the_run_dir(tmp_path: Path):
    run_dir = write_run(tmp_path / "results", stop_after=2, finish=False, live=True)
    app = make_app(tmp_path, start=AttachTarget(run_dir))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await run_screen_shown(pilot, "cells 2/10")
        await pilot.press("s")
        await pilot.press("a")
        await until_shown(pilot, app, "Abort the run?")
        await pilot.press("y")
        await until_shown(pilot, app, "abort requested")
    lines = (run_dir / "control.jsonl").read_text().splitlines()
    assert ['"skip"' in lines[0], '"abort"' in lines[1]] == [True, True]


async def test_report_viewer_toggles_language_and_saves(tmp_path: Path):
    run_dir = write_run(tmp_path / "results")
    app = make_app(tmp_path, start=AttachTarget(run_dir), settings={"language": "zh"})
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await run_screen_shown(pilot, "[已完成]")
        await pilot.press("r")
        text = await until_shown(pilot, app, "[zh] 尚未保存（按 w 保存）")
        assert isinstance(app.screen, ReportScreen)
        assert f"{run_dir.name}/report.md" in text
        await pilot.press("l")
        text = await until_shown(pilot, app, f"{run_dir.name}/report.en.md")
        await pilot.press("w")
        await until_shown(pilot, app, "[en] 已保存：")  # the report in English, the screen in zh
        assert (run_dir / "report.en.md").is_file()


@pytest.mark.skipif(not SAMPLE_RUN.is_dir(), reason="sample_results not built yet")
async def test_history_opens_the_seed_and_shows_its_winners(tmp_path: Path):
    app = make_app(tmp_path, results_root=SAMPLE_RUN.parent, settings={"language": "zh"})
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        # Best arm, by the verdicts: st=5 beats st=3 in 10 of 18 cells (one more leads by 1.8 %,
        # inside the 2 % tie band, as the report's winner table has it).
        await until_shown(pilot, app, "st=5 10/18")
        rows = table_text(app, "#history-table")
        index = next(i for i, row in enumerate(rows) if row[6] == "dspark_st_comparison")
        assert rows[index][4] == "st=5 10/18"
        for _ in range(index):
            await pilot.press("down")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, RunDetailScreen)
                         and app.screen.run is not None, what="the seed loaded")
        ab = {(r[0], r[1]): r for r in table_text(app, "#detail-ab")}
        assert len(ab) == 18
        assert ab[("chat_short", "16")][2:5] == ["st=5", "单次", "32.90%"]
        assert ab[("stress_standard", "128")][2:5] == ["st=3", "单次", "31.40%"]
        # 0.89 % is inside the 2 % tie band: a tie here as in the report, not an st=3 win.
        assert ab[("chat_standard", "64")][2:5] == ["持平", "单次", "0.89%"]
        await pilot.press("r")
        # The answer first: the summary opens the report ...
        await until_shown(pilot, app, "结论")
        # ... then the seed's core metrics table, numbers whole (chat_short c=16, st=5).
        seen = ""
        for _ in range(3):
            seen += screen_text(app)
            if "2171.58" in seen:
                break
            await pilot.press("pagedown")
        text = await until_shown(pilot, app, "2171.58")
        assert "6282.94" in text and "核心指标对比" in seen + text


async def test_marking_two_runs_compares_them_cell_by_cell(tmp_path: Path):
    root = tmp_path / "results"
    write_run(root, started_at="2026-11-28T10:00:00+00:00")
    write_run(root, fail_index=2, started_at="2026-11-29T10:00:00+00:00")
    app = make_app(tmp_path, results_root=root, settings={"language": "en"})
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await history_listed(pilot, at_least=3)
        await pilot.press("c")
        await until_shown(pilot, app, "mark two runs")
        await pilot.press("space", "down", "space")
        await wait_until(pilot, lambda: [r[0] for r in table_text(app, "#history-table")][:2]
                         == ["*", "*"], what="two runs marked")
        await pilot.press("c")
        text = await until_shown(pilot, app, "Matched cells: 9; only in A: 0; only in B: 1")
        assert "demo_20" in text and " vs " in text  # which two, named in the title
        assert "st=3: geometric mean Total tok/s ratio 1.000" in text
        rows = table_text(app, "#compare-table")
        assert len(rows) == 9 and rows[0][:3] == ["chat_short", "1", "st=3"]
        assert all(row[5] == "1.000" for row in rows)  # the same cells, measured alike
        assert "2 marked" not in text  # the marking's toast no longer covers the table's end


async def test_history_counts_a_stopped_sweeps_part_measured_cells(tmp_path: Path):
    """A K sweep stopped in its second round: no cell has all its planned measurements, yet
    every one has its first; History says both (`0/72 ◐72`), not a bare 0/72."""
    import json

    from dspark_tui.model.events import RoundPlanned
    from dspark_tui.results import RunStore
    from tests.tui.k_sweep_dir import GRID, KS, write_k_sweep

    root = tmp_path / "results"
    run = write_k_sweep(root, rounds=2)
    store = RunStore(run)
    cells = [(scenario, c) for scenario, cs in GRID.items() for c in cs]
    for number in (1, 2):
        store.append_event(RoundPlanned(t=1.0, round=number, arms=[f"K={k}" for k in KS], cells=cells))
    for second in run.glob("cells/*/*__r2p1.json"):
        second.unlink()
    manifest = json.loads((run / "run.json").read_text())
    manifest.update(status="aborted", cells_ok=0)
    (run / "run.json").write_text(json.dumps(manifest))
    app = make_app(tmp_path, results_root=root)
    async with app.run_test(size=SIZE) as pilot:
        await history_listed(pilot)

        def counted() -> str:
            row = next(r for r in table_text(app, "#history-table") if r[6].startswith("k_sweep"))
            return row[3]

        await wait_until(pilot, lambda: "◐" in counted(), what="the part-measured cells counted")
        assert counted().startswith("0/") and counted().endswith(f" ◐{len(cells) * len(KS)}")
