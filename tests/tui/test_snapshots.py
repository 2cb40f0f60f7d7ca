"""Pictures of the screens at fixed sizes, from a run recorded with `dspark-tui demo --headless`.

Deterministic: the events carry their own times, a replay's clock is frozen at the last event,
and the recorded run is checked in (tests/tui/data/demo_run).
Update after an intended change with `pytest tests/tui/test_snapshots.py --snapshot-update`.
"""

from __future__ import annotations

import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable

from dspark_tui.model.events import CellFinished, parse_event
from dspark_tui.results import RunStore
from dspark_tui.tui.app import DsparkApp
from tests.tui.helpers import (
    make_app,
    run_screen_shown,
    screen_text,
    settled,
    table_text,
    wait_until,
)

RECORDED = Path(__file__).parent / "data" / "demo_run"
MID_RUN_LINES = 49  # inside the fifth cell: st=3 stress_standard c128 running


def mid_run_copy(tmp_path: Path) -> tuple[Path, float]:
    """The recorded run cut short, as a watcher would find it mid-way; and its last event time."""
    run_dir = tmp_path / "results" / "demo_mid"
    run_dir.mkdir(parents=True)
    manifest = RunStore(RECORDED).read_manifest()
    manifest.status = "running"
    store = RunStore(run_dir)
    store.write_manifest(manifest)
    lines = (RECORDED / "events.jsonl").read_text().splitlines(keepends=True)[:MID_RUN_LINES]
    store.events_path.write_text("".join(lines))
    last = 0.0
    for line in lines:
        event = parse_event(line)
        last = event.t
        if isinstance(event, CellFinished):
            store.save_cell(event.result)
    return run_dir, last


def replay_app(tmp_path: Path, run_dir: Path, now: float | None = None,
               lang: str = "en") -> DsparkApp:
    app = make_app(tmp_path, clock=(lambda: now) if now is not None else None,
                   settings={"language": lang})

    async def open_it() -> None:
        app.open_replay(run_dir)

    app.call_after_refresh(lambda: app.run_worker(open_it()))
    return app


def _settle(header: str) -> Callable[[Pilot[object]], Awaitable[None]]:
    """Wait until the replayed run is drawn (its header says `header`) and laid out."""

    async def drawn(pilot: Pilot[object]) -> None:
        await run_screen_shown(pilot, header)
        await settled(pilot)

    return drawn


def _summary_shown(status: str) -> Callable[[Pilot[object]], Awaitable[None]]:
    async def summary_shown(pilot: Pilot[object]) -> None:
        from dspark_tui.tui.widgets.run_summary import RunSummary

        screen = await run_screen_shown(pilot, f"[{status}]")
        await wait_until(pilot, lambda: screen.query_one(RunSummary).has_class("-shown"),
                         timeout=30, what="the run's summary")
        await settled(pilot)

    return summary_shown


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_finished_run_screen(snap_compare, tmp_path: Path, size: tuple[int, int]):
    run_dir = tmp_path / "demo_run"
    shutil.copytree(RECORDED, run_dir)
    assert snap_compare(replay_app(tmp_path, run_dir), terminal_size=size,
                        run_before=_summary_shown("completed"))


def test_finished_run_screen_in_chinese(snap_compare, tmp_path: Path):
    """The finished run at 80x24 in zh (the picture lost when make_app's default became en):
    header, table, summary and footer from the catalogue's zh."""
    run_dir = tmp_path / "demo_run"
    shutil.copytree(RECORDED, run_dir)
    assert snap_compare(replay_app(tmp_path, run_dir, lang="zh"), terminal_size=(80, 24),
                        run_before=_summary_shown("已完成"))


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_mid_run_screen(snap_compare, tmp_path: Path, size: tuple[int, int]):
    run_dir, last = mid_run_copy(tmp_path)
    assert snap_compare(replay_app(tmp_path, run_dir, now=last + 2.0), terminal_size=size,
                        run_before=_settle("[running]"))


def test_mid_run_screen_with_server_log(snap_compare, tmp_path: Path):
    run_dir, last = mid_run_copy(tmp_path)

    async def show_log(pilot: Pilot[object]) -> None:
        screen = await run_screen_shown(pilot, "[running]")
        await pilot.press("l")
        await wait_until(pilot, lambda: screen.query_one("#log-pane").has_class("-visible"),
                         what="the log shown")
        await settled(pilot)
        assert "Starting vLLM API server" in screen_text(pilot.app)

    assert snap_compare(replay_app(tmp_path, run_dir, now=last + 2.0), terminal_size=(120, 40),
                        run_before=show_log)


def test_decision_view(snap_compare, tmp_path: Path):
    """A finished K sweep's decision view at 80x24: title, schedule, notes, the JSON's start."""
    from dspark_tui.tui.screens.decision import DecisionScreen
    from tests.tui.k_sweep_dir import write_k_sweep

    run_dir = write_k_sweep(tmp_path / "results")
    app = make_app(tmp_path)
    app.call_after_refresh(lambda: app.push_screen(DecisionScreen(run_dir)))

    async def loaded(pilot: Pilot[object]) -> None:
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, DecisionScreen)
                         and pilot.app.screen.answer is not None, timeout=30, what="the decision")
        await settled(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=loaded)


def test_chart_view(snap_compare, tmp_path: Path):
    """The recorded run's Total tok/s by concurrency, first scenario, at 80x24."""
    from dspark_tui.tui.screens.charts import ChartScreen

    run_dir = tmp_path / "demo_run"
    shutil.copytree(RECORDED, run_dir)
    app = make_app(tmp_path)
    app.call_after_refresh(lambda: app.push_screen(ChartScreen(run_dir)))

    async def drawn(pilot: Pilot[object]) -> None:
        await wait_until(pilot, lambda: "Total tok/s by concurrency" in screen_text(pilot.app),
                         what="the chart drawn")
        await settled(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=drawn)


# -- the viewing screens at 80x24 -------------------------------------------------------------


def _recorded_copy(tmp_path: Path, name: str = "demo_run") -> Path:
    run_dir = tmp_path / "results" / name
    shutil.copytree(RECORDED, run_dir)
    return run_dir


def test_history_at_80_columns(snap_compare, tmp_path: Path):
    """Start, status, ok cells and best arm before the name; the seed's run listed too."""
    from tests.tui.helpers import history_listed, table_text

    _recorded_copy(tmp_path)
    app = make_app(tmp_path, settings={"language": "en"})

    async def listed(pilot: Pilot[object]) -> None:
        await history_listed(pilot, at_least=2)
        await wait_until(pilot, lambda: all(row[4] != "…" for row in table_text(pilot.app, "#history-table")),
                         timeout=30, what="best arms read")
        await settled(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=listed)


def test_run_detail_at_80_columns(snap_compare, tmp_path: Path):
    """The title on its line, the run's summary first."""
    from dspark_tui.tui.screens.run_detail import RunDetailScreen

    run_dir = _recorded_copy(tmp_path)
    app = make_app(tmp_path, settings={"language": "en"})
    app.call_after_refresh(lambda: app.push_screen(RunDetailScreen(run_dir)))

    async def loaded(pilot: Pilot[object]) -> None:
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, RunDetailScreen)
                         and pilot.app.screen.run is not None, timeout=30, what="the run loaded")
        await wait_until(pilot, lambda: "deploy" in screen_text(pilot.app), what="the summary")
        await settled(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=loaded)


def test_report_viewer_at_80_columns(snap_compare, tmp_path: Path):
    """The Chinese report scrolled to its core table: label columns pinned, scrolled one
    column right (the header above, with the run's temporary path, is off the picture)."""
    from dspark_tui.tui.screens.report import ReportScreen, ReportTable

    run_dir = _recorded_copy(tmp_path)
    app = make_app(tmp_path, settings={"language": "zh"})
    app.call_after_refresh(lambda: app.push_screen(ReportScreen(run_dir)))

    async def at_the_table(pilot: Pilot[object]) -> None:
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ReportScreen)
                         and bool(pilot.app.screen.query(ReportTable)), timeout=30, what="tables")
        await settled(pilot)
        screen = pilot.app.screen
        screen.query_one("#report-scroll").scroll_to_widget(screen.query(ReportTable).first(),
                                                             animate=False, top=True)
        await pilot.press("right")
        await settled(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=at_the_table)


def test_compare_at_80_columns(snap_compare, tmp_path: Path):
    """Two runs of the same plan, B with a different warmup: the warning, the ratio per arm,
    and per cell the same arm's numbers in both runs."""
    import json

    from dspark_tui.tui.screens.compare import CompareScreen

    a = _recorded_copy(tmp_path, "a_run")
    b = _recorded_copy(tmp_path, "b_run")
    manifest = json.loads((b / "run.json").read_text())
    manifest["warmup_requests"] = 100
    (b / "run.json").write_text(json.dumps(manifest))
    app = make_app(tmp_path, settings={"language": "en"})
    app.call_after_refresh(lambda: app.push_screen(CompareScreen(a, b)))

    async def compared(pilot: Pilot[object]) -> None:
        # The rows drawn at their widths too, not only the summary: the screen shows the
        # summary first and fills the table after it, and a picture taken under load had the
        # rows with the columns still at their headers' widths (chat_sho, st=, 132,434). The
        # longest name and figure shown whole are what the picture needs. And nothing drawn
        # before the table has sized its columns for its rows: a draw in between caches the rows
        # at the old widths for good (see helpers.run_screen_shown), which this poll, drawing
        # the screen every 20 ms, once did (the picture above: the test then waited its 30 s out).
        def whole() -> bool:
            table = next(iter(pilot.app.screen.query("#compare-table").results(DataTable)), None)
            if table is None or not table.row_count or table._require_update_dimensions:
                return False
            text = screen_text(pilot.app)
            return ("Matched cells" in text and "stress_standard" in text
                    and "176,909.7" in text)

        await wait_until(pilot, whole, timeout=30, what="the comparison, columns sized")
        await settled(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=compared)


# -- 80x24 for many arms, the log and a running sweep (issue 23) -------------------------------


def _sweep_mid_run(root: Path) -> tuple[Path, float]:
    """The K sweep cut short in its second round: every first-round cell in, and K=6's
    rag c=32 running; K=6 is far below the fold of a 24-row plan tree."""
    from dspark_tui.model import CellKey
    from dspark_tui.model.events import CellStarted
    from tests.tui.k_sweep_dir import write_k_sweep

    run_dir = write_k_sweep(root, rounds=2)
    store = RunStore(run_dir)
    lines = store.events_path.read_text().splitlines(keepends=True)
    # run_started, then 72 first-round measurements, then the second round (arm-major)
    kept = lines[:1 + 72 + 60]
    last = parse_event(kept[-1]).t
    started = CellStarted(t=last + 0.5, key=CellKey(arm="K=6", scenario="rag", concurrency=32),
                          num_prompts=64, index=134, total=144, round=2)
    store.events_path.write_text("".join(kept) + started.model_dump_json() + "\n")
    manifest = store.read_manifest()
    manifest.status = "running"
    store.write_manifest(manifest)
    return run_dir, last + 1.0


def test_k_sweep_running_at_80x24(snap_compare, tmp_path: Path):
    """A running K sweep at 80x24: the plan tree shows the running cell (K=6, far down) under
    its arm's name, and the table keeps Best pinned beside scenario and c once scrolled to the
    arms' figures. (The follow once did nothing: Textual refuses a scroll, silently, before the
    layout that shows the tree's scrollbar; see PlanTree._scroll_to_running.)"""
    run_dir, now = _sweep_mid_run(tmp_path / "results")

    async def scrolled(pilot: Pilot[object]) -> None:
        screen = await run_screen_shown(pilot, "[running]", timeout=60)  # 144 events
        await wait_until(pilot, lambda: screen.query_one("#ab-table").row_count >= 9,
                         timeout=30, what="the sweep's rows")
        await settled(pilot)
        screen.query_one("#ab-table").focus()
        await pilot.press(*["right"] * 2)  # past Margin and vs K=0, a whole column each

        def drawn() -> bool:
            text = screen_text(pilot.app)
            return ("▼ K=6" in text and "▶ c32" in text and "Margin" not in text
                    and "Best        Total K=0" in text)

        await wait_until(pilot, drawn, timeout=30, what="the running cell, the table scrolled")
        await settled(pilot)
        text = screen_text(pilot.app)
        assert "K=7 tie" in text and "Total K=" in text, text  # Best kept, figures scrolled in

    assert snap_compare(replay_app(tmp_path, run_dir, now=now), terminal_size=(80, 24),
                        run_before=scrolled)


def test_server_log_at_80x24(snap_compare, tmp_path: Path):
    """The log at 80x24 takes the running cell's numbers' place: every A/B row still shown."""
    run_dir, last = mid_run_copy(tmp_path)

    async def show_log(pilot: Pilot[object]) -> None:
        screen = await run_screen_shown(pilot, "[running]", timeout=60)
        await pilot.press("l")
        await wait_until(pilot, lambda: screen.query_one("#log-pane").has_class("-visible"),
                         what="the log shown")
        await settled(pilot)
        text = screen_text(pilot.app)
        assert "Uvicorn running" in text, text
        rows = table_text(pilot.app, "#ab-table")
        assert len(rows) == 4, rows
        shown = [line.split("│")[-1].split()[:2] for line in text.splitlines()]
        for row in rows:  # every row on screen, its scenario and c
            assert [row[0], row[1]] in shown, text

    assert snap_compare(replay_app(tmp_path, run_dir, now=last + 2.0), terminal_size=(80, 24),
                        run_before=show_log)
