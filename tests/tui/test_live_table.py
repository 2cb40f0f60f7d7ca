"""The live A/B table: pinned cell labels and the decision first at 80 columns, and rows that
follow a run resumed after it ended with a failed cell."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from textual.widgets import DataTable

from dspark_tui.model import CellResult, ClientMetrics
from dspark_tui.model.events import CellFinished, CellStarted, RunFinished, RunStarted
from dspark_tui.plans import resolve_plan
from dspark_tui.tui.app import AttachTarget
from tests.tui.eventlog import T0, append_events, build_events, write_run
from tests.tui.helpers import make_app, replayed, run_screen_shown, screen_text, settled, table_text


async def test_a_resumed_run_redraws_the_row_of_its_redone_cell_in_full(tmp_path: Path):
    run_dir = write_run(tmp_path / "results", fail_index=1)  # st=3 chat_short c16 failed
    key = resolve_plan("demo")[0].cells()[1].key
    async with replayed(tmp_path, run_dir, "[completed]", size=(200, 30)) as (pilot, app, _):
        await settled(pilot)
        assert "failed" in table_text(app, "#ab-table")[1]
        t = T0 + 1000
        append_events(run_dir, [
            RunStarted(t=t, run_dir=str(run_dir), name="demo", arms=["st=3", "st=5"],
                       total_cells=10, resumed_cells=9),
            CellStarted(t=t, key=key, num_prompts=8, index=2, total=10),
            CellFinished(t=t + 5, result=CellResult(
                arm=key.arm, scenario=key.scenario, concurrency=key.concurrency,
                metrics=ClientMetrics(total_throughput=1_234_567.0, completed=8))),
            RunFinished(t=t + 6, status="completed", done=10, failed=0, total=10),
        ])
        await run_screen_shown(pilot, "cells 10/10")
        await settled(pilot)
        row = table_text(app, "#ab-table")[1]
        assert row[:3] == ["chat_short", "16", "st=3"] and "1,234,567.0" in row
        line = next(line for line in screen_text(app).splitlines() if "chat_short   " in line
                    and " 16 " in line)
        assert "1,234,567.0" in line  # drawn whole, not cut to the width "failed" had


async def test_at_80_columns_every_row_names_its_cell_leader_margin_and_verdict(tmp_path: Path):
    run_dir = write_run(tmp_path / "results")
    async with replayed(tmp_path, run_dir, "[completed]") as (pilot, app, _):
        await settled(pilot)
        text = screen_text(app)
        assert "Winner  Verdict  Margin" in text
        assert "stress_standard  128  st=3    single   13.64%" in text
        table = app.screen.query_one("#ab-table", DataTable)
        table.focus()
        await pilot.press(*["right"] * 30)
        await settled(pilot)
        assert table.scroll_x > 0  # scrolled sideways to the arms' figures
        text = screen_text(app)
        assert "stress_standard  128" in text  # the pinned columns stay
        assert "Total st=3" in text


async def test_at_80_columns_the_interval_of_a_measured_again_cell_is_whole(tmp_path: Path):
    """Three rounds give every cell an interval: at 80x24 it shows whole (`+12…+31`) beside
    Winner, Verdict and Margin and the pinned Scenario and C of the longest scenario."""
    import re

    run_dir = write_run(tmp_path / "results")
    cells = [event.result for event in build_events(run_dir) if isinstance(event, CellFinished)]
    later = [CellFinished(t=T0 + 900 + round_, result=cell.model_copy(update={
        "round": round_, "metrics": cell.metrics.model_copy(update={
            "total_throughput": (cell.metrics.total_throughput or 0) * factor})}))
             for round_, factor in ((2, 1.09), (3, 0.93)) for cell in cells]
    append_events(run_dir, [*later, RunFinished(t=T0 + 999, status="completed", done=10,
                                                   failed=0, total=10)])
    async with replayed(tmp_path, run_dir, "[completed]") as (pilot, app, _):
        await settled(pilot)
        lines = screen_text(app).splitlines()
        assert any(line.rstrip().endswith("Winner  Verdict  Margin  Interval") for line in lines)
        row = next(line for line in lines if "stress_standard  128" in line)
        assert re.search(r"(wins|unsure|tie) +-?\d+\.\d+% +[+-]\d+…[+-]\d+$", row.rstrip()), row


@pytest.mark.parametrize("grid", [{"chat_short": [1, 4, 16, 64, 128]},
                                  {"chat_short": [1, 4, 16, 64, 256], "decode_heavy": [1, 4, 16, 64, 256],
                                   "rag_medium": [1, 8, 32, 96]}],
                         ids=["demo-k-sweep", "scrolling"])
async def test_at_80_columns_a_k_sweep_row_shows_all_that_decides_whole(tmp_path: Path, grid):
    """A K sweep's seven arms beside the plan tree at 80x24, the run ended (its summary above
    leaves the table a few rows, so the second grid scrolls): best arm, verdict, margin with its
    interval and the margin over K = 0, each whole on every row shown, headers too."""
    from tests.tui.k_sweep_dir import write_k_sweep

    run_dir = write_k_sweep(tmp_path / "results", ks=list(range(7)), grid=grid)
    app = make_app(tmp_path, start=AttachTarget(run_dir))
    async with app.run_test(size=(80, 24)) as pilot:
        await run_screen_shown(pilot, "[completed]")
        await settled(pilot)
        table = app.screen.query_one("#ab-table", DataTable)
        assert table.scrollbars_enabled[0] == (len(grid) > 1)  # the second grid scrolls down
        decides = [column for column in table.ordered_columns if ":" not in str(column.key.value)]
        lines = screen_text(app).splitlines()
        header = next(line for line in lines if "Scenario" in line and "Best" in line)
        assert all(str(column.label) in header for column in decides), header
        assert "vs K=0" in header
        shown = 0
        for row_key in table.rows:
            scenario, concurrency = (str(table.get_cell(row_key, key)) for key in ("scenario", "concurrency"))
            line = next((line for line in lines if re.search(rf"│ {scenario} +{concurrency} ", line)), None)
            if line is None:
                continue  # scrolled below
            shown += 1
            assert len(line) <= 80
            for column in decides:
                assert str(table.get_cell(row_key, column.key)).strip() in line, (column.label, line)
        assert shown >= 3
        assert any("%" in str(table.get_cell(key, "baseline")) for key in table.rows)
