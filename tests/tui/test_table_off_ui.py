"""The run screen's A/B table: its verdict rows (numpy, scipy) are computed in a worker thread
and the UI thread only draws, and of a big table only the rows that changed."""

from __future__ import annotations

import threading
import time
import types
from collections.abc import Coroutine, Generator
from pathlib import Path
from typing import Any

import pytest

from dspark_tui.analysis import live
from dspark_tui.model import CellResult, ClientMetrics
from dspark_tui.model.events import CellFinished, Event, RunStarted, file_json
from dspark_tui.results import RunStore
from dspark_tui.tui.screens.run_screen import RunScreen
from dspark_tui.tui.widgets.ab_table import ABTable
from tests.tui.eventlog import T0, append_events, write_run
from tests.tui.helpers import make_app, settled, table_text, wait_until

ARMS = ["st=3", "st=5"]


def _measurement(arm: str, scenario: str, c: int, total: float, rnd: int = 1) -> CellFinished:
    return CellFinished(
        t=T0 + rnd,
        result=CellResult(
            arm=arm,
            scenario=scenario,
            concurrency=c,
            round=rnd,
            metrics=ClientMetrics(total_throughput=total, duration=4.0, completed=c),
        ),
    )


def _record_threads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The threads the verdict analysis of the live table runs on."""
    threads: list[int] = []
    analyse = live.analyse_measurements

    def recording(*args: object, **kwargs: object) -> object:
        threads.append(threading.get_ident())
        return analyse(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(live, "analyse_measurements", recording)
    return threads


async def test_the_tables_verdicts_are_computed_off_the_ui_thread(tmp_path: Path, monkeypatch):
    threads = _record_threads(monkeypatch)
    run_dir = write_run(tmp_path / "results")
    app = make_app(tmp_path)
    async with app.run_test(size=(200, 30)) as pilot:
        ui = threading.get_ident()  # the test's coroutines run on the app's event loop
        app.open_replay(run_dir)
        await wait_until(
            pilot,
            lambda: threads and app.screen.query_one(ABTable).row_count,
            timeout=30,
            what="the first table",
        )  # 10 s was short on a loaded box
        await settled(pilot, timeout=30)
        assert len(threads) == 1
        rows = table_text(app, "#ab-table")
        append_events(run_dir, [_measurement("st=3", rows[0][0], int(rows[0][1]), 7_654_321.0, rnd=2)])
        await wait_until(
            pilot,
            lambda: table_text(app, "#ab-table")[0] != rows[0],
            timeout=30,
            what="the new measurement in the table",
        )
    assert len(threads) == 2 and ui not in threads


def _big_run(folder: Path) -> tuple[Path, list[Event]]:
    """1,800 rows (300 scenarios x 6 concurrencies) of two arms, as events only."""
    folder.mkdir(parents=True)
    events: list[Event] = [RunStarted(t=T0, run_dir=str(folder), name="big", arms=ARMS, total_cells=3600)]
    events += [
        _measurement(arm, f"s{i}", c, 1000.0 * c * (1.1 if arm == "st=5" else 1.0))
        for arm in ARMS
        for i in range(300)
        for c in (1, 4, 16, 64, 96, 128)
    ]
    RunStore(folder).events_path.write_text(
        "".join(file_json(e) + "\n" for e in events), encoding="utf-8"
    )  # at once: no fsync per event
    return folder, events


@types.coroutine
def _on_this_thread(coro: Coroutine[Any, Any, Any], spent: list[float]) -> Generator[Any, Any, Any]:
    """Run `coro` as `await coro` would, adding the CPU time of each of its steps on this (the
    UI) thread to `spent[0]`: what it awaits in worker threads is not counted."""
    value: Any = None
    error: BaseException | None = None
    while True:
        started = time.thread_time()
        try:
            awaited = coro.throw(error) if error is not None else coro.send(value)
        except StopIteration as stop:
            return stop.value
        finally:
            spent[0] += time.thread_time() - started
        try:
            value, error = (yield awaited), None
        except BaseException as exc:  # cancelled, or the awaited failed: into the coroutine
            value, error = None, exc


@pytest.mark.timing
async def test_a_measurement_landing_in_1800_rows_costs_the_ui_thread_little(tmp_path: Path, monkeypatch):
    """The UI thread's CPU time (time.thread_time: other load on the box does not count) in the
    run screen's poll that lands one measurement in a table of 1,800 rows: folding, taking the
    table's inputs and drawing, not what the poll awaits in worker threads. With the verdicts
    computed on the UI thread again (0.13 to 0.4 s for these rows) it fails."""
    threads = _record_threads(monkeypatch)
    run_dir, _ = _big_run(tmp_path / "big")
    app = make_app(tmp_path)
    drawn: list[int] = []
    show = ABTable.show

    def counting(table: ABTable, rows: list[live.ComparisonRow], arms: list[str]) -> None:
        before = dict(table._drawn)
        show(table, rows, arms)
        drawn.append(sum(1 for key, row in table._drawn.items() if before.get(key) is not row))

    polls: list[tuple[int, float]] = []  # (tables the poll drew, its UI thread's CPU time)
    poll = RunScreen._poll

    async def timed(screen: RunScreen) -> None:
        spent = [0.0]
        tables = len(drawn)
        await _on_this_thread(poll(screen), spent)
        polls.append((len(drawn) - tables, spent[0]))

    monkeypatch.setattr(ABTable, "show", counting)
    monkeypatch.setattr(RunScreen, "_poll", timed)
    async with app.run_test(size=(120, 30)) as pilot:
        app.open_replay(run_dir)
        await wait_until(pilot, lambda: drawn, timeout=60, what="the first table")
        table = app.screen.query_one(ABTable)
        assert table.row_count == 1800 and drawn == [1800]
        append_events(run_dir, [_measurement("st=3", "s150", 16, 9_876_543.0, rnd=2)])
        await wait_until(pilot, lambda: len(drawn) == 2, timeout=60, what="the table redrawn")
        assert "4,946,271.5" in str(table.get_row("s150|c16"))  # the mean of its two measurements
    assert drawn[1] == 1  # only the row of the cell measured again
    first, landing = (cpu for tables, cpu in polls if tables)
    print(f"UI thread CPU: {first:.3f} s for the first table, {landing:.3f} s for the landing")
    assert landing < 0.05, f"the poll that drew the new row spent {landing:.3f} s on the UI thread"
    assert len(threads) == 2 and threading.main_thread().ident not in threads
