"""The native client's own health in every measurement (model/client_health.py, issue 21):
event-loop lag and same-read token gaps, judged against stated limits; a measurement whose
client fell behind gives no latency to the tables and is said in the report."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from dspark_tui.analysis.measurements import aggregate_cells
from dspark_tui.engine.drivers import DriverContext
from dspark_tui.engine.drivers.native import NativeDriver
from dspark_tui.model import BenchConfig, CellKey, CellResult, CellSpec, ClientMetrics
from dspark_tui.model.client_health import ClientHealth, judge, live_client_line
from dspark_tui.report.client_lines import client_health_line
from dspark_tui.report.words import Texts
from dspark_tui.results import load_run
from tests.conftest import SAMPLE_RUN
from tests.simulator import running_sim


def test_the_limits_mark_bursts_from_a_late_loop_and_not_an_idle_box_nor_a_bursty_server():
    # The demo on an idle box before this rule (docs/client.md): lag p99 3.4 ms against a
    # 3.5 ms ITL, each token in its own read. The old rule marked it; a late timer is no harm.
    idle = judge(ClientHealth(loop_lag_p99_ms=3.4, gaps=300, same_read_gaps=6, mean_itl_ms=3.5))
    assert not idle.behind and idle.reasons == []
    # The server wrote several steps at once while the loop was on time: what a user sees.
    bursty_server = judge(ClientHealth(loop_lag_p99_ms=1.5, gaps=100, same_read_gaps=60,
                                       mean_itl_ms=2.0))
    assert not bursty_server.behind
    # Bursts, and a loop late by half a step or more at p99: the reads merged steps.
    late = judge(ClientHealth(loop_lag_p99_ms=12.0, gaps=100, same_read_gaps=30, mean_itl_ms=8.0))
    assert late.behind and late.reasons == [
        "30% of token gaps read in one burst with the previous token (limit 10%) while the event "
        "loop ran late (lag p99 12.0 ms, at least 50% of the mean ITL 8.00 ms and 2 ms)"]
    # Late but every token in its own read: jitter, no merged gaps.
    assert not judge(ClientHealth(loop_lag_p99_ms=12.0, gaps=100, same_read_gaps=5,
                                  mean_itl_ms=8.0)).behind
    # The K=1 c=1 cell: every token in one burst, the client starved of CPU.
    starved = judge(ClientHealth(loop_lag_p99_ms=40.0, gaps=255, same_read_gaps=254,
                                 mean_itl_ms=0.02))
    assert starved.behind and starved.reasons[0].startswith("100% of token gaps read in one burst")
    # Files written before the mean was kept judge on their median.
    assert judge(ClientHealth(loop_lag_p99_ms=40.0, gaps=255, same_read_gaps=254,
                              median_itl_ms=0.001)).behind
    assert live_client_line(0.4, 0.0, 4.0) == ("client: loop lag p99 0.4 ms, 0% same-read gaps", False)
    assert live_client_line(3.4, 0.02, 3.5)[1] is False
    assert live_client_line(12.0, 0.3, 4.0)[1]


def _measured(behind: bool, tpot: float, rnd: int) -> CellResult:
    health = ClientHealth(loop_lag_p99_ms=9.0 if behind else 0.2, gaps=10,
                          same_read_gaps=9 if behind else 0, mean_itl_ms=4.0)
    return CellResult(arm="a", scenario="s", concurrency=1, round=rnd, client=judge(health),
                      metrics=ClientMetrics(total_throughput=100.0 + rnd, mean_tpot_ms=tpot,
                                            mean_e2e_latency_ms=500.0, completed=4))


def test_a_behind_measurement_gives_the_tables_no_latency_but_its_throughput():
    folded = aggregate_cells([_measured(False, 4.0, 1), _measured(True, 0.006, 2)])
    (cell,) = folded.values()
    assert cell.metrics.mean_tpot_ms == 4.0  # the late client's 0.006 ms left out
    assert cell.metrics.total_throughput == 101.5
    (alone,) = aggregate_cells([_measured(True, 0.006, 1)]).values()
    assert alone.metrics.mean_tpot_ms is None and alone.metrics.total_throughput == 101.0


def test_the_report_line_names_what_fell_behind_and_why_throughput_stands():
    run = load_run(SAMPLE_RUN)
    t = Texts("en")
    assert client_health_line(run, t) is None  # no client health in the sample: no line
    run.measurements = [_measured(False, 4.0, 1), _measured(True, 0.006, 2)]
    line = client_health_line(run, t)
    assert line is not None and line.startswith("- Client fell behind in 1 of 2 measurements (a/s/c1 r2 p1: ")
    assert "Their Total tok/s stands: a late read moves a request's end by at most the lag (p99 " \
           "at most 9.0 ms, against a mean E2E of 500 ms)" in line
    run.measurements = [_measured(False, 4.0, 1)]
    assert client_health_line(run, t) == ("- Client health: kept up in all 1 measurements (event-loop "
                                          "lag p99 at most 0.2 ms, token gaps read together at most 0%)")


async def _hog(block_s: float, every_s: float) -> None:
    while True:
        await asyncio.sleep(every_s)
        time.sleep(block_s)  # the loop can do nothing else: a busy or CPU-starved client


async def test_a_blocked_event_loop_is_measured_and_marked(tmp_path: Path):
    """The simulator streams a step every ~7 ms; a loop blocked 30 ms in every 50 reads late
    and in bursts. The old client said nothing; each measurement now carries its health."""
    cell = CellSpec(key=CellKey(arm="a", scenario="s", concurrency=2), input_len=64,
                    output_len=96, range_ratio=1.0, num_prompts=4)
    with running_sim(speed=1) as sim:
        ctx = DriverContext(base_url=sim.url, host="127.0.0.1", port=int(sim.url.rsplit(":", 1)[1]),
                            served_model_name="test-model", model_path="test-model",
                            bench=BenchConfig(driver="native", seed=1, cell_timeout_s=60),
                            raw_dir=tmp_path / "raw")
        hog = asyncio.create_task(_hog(0.03, 0.05))
        try:
            result = await NativeDriver().run(cell, ctx, lambda p: None)
        finally:
            hog.cancel()
    health = result.client
    assert health is not None and health.ticks > 20 and health.gaps > 50
    assert health.loop_lag_p99_ms >= 20.0 and health.same_read_gaps > 0
    assert health.behind
    assert any(note.startswith("the client fell behind: ") for note in result.provenance.notes)


def test_the_cell_panel_gets_the_clients_health_from_the_progress_events():
    """Folded by RunState (every view's reducer) and written to events.jsonl at the decimals
    the panel prints."""
    from dspark_tui.model import events as ev
    from dspark_tui.model.run_state import RunState

    key = CellKey(arm="a", scenario="s", concurrency=4)
    state = RunState()
    state.apply(ev.CellStarted(t=1.0, key=key, num_prompts=8, index=1, total=1))
    progress = ev.CellProgress(t=2.0, key=key, completed=2, total=8, tpot_p50_ms=4.0,
                               client_lag_p99_ms=12.345, same_read_fraction=0.3012,
                               mean_itl_ms=6.0)
    state.apply(progress)
    current = state.current
    assert current is not None
    live = current.numbers
    assert (live.client_lag_p99_ms, live.same_read_fraction) == (12.345, 0.3012)
    line, behind = live_client_line(live.client_lag_p99_ms, live.same_read_fraction, live.mean_itl_ms)
    assert behind and line == "client behind: loop lag p99 12.3 ms, 30% same-read gaps"
    written = ev.file_json(progress)
    assert '"client_lag_p99_ms":12.3' in written and '"same_read_fraction":0.3' in written


async def test_a_run_warns_once_that_its_client_fell_behind_and_logs_the_rest(tmp_path: Path):
    """One warning (a toast in the app) a measurement piled over the app's quit and abort
    dialogs on a busy box, and the keyboard tests failed on it: the first behind measurement
    of a run is a warning, the later ones are in the log (info) only."""
    from dspark_tui.engine.run.runner import Runner, prepare_run
    from dspark_tui.model import load_plan
    from tests.conftest import free_port
    from tests.engine.helpers import Recorder, write_sim_plan

    cells = ('[[scenarios]]\nname = "chat"\ninput_len = 64\noutput_len = 96\n'
             'concurrencies = [1, 2, 4]\nnum_prompts = 4\n')
    plan = load_plan(write_sim_plan(tmp_path, free_port(), arms=(3,), speed=1, warmup=0,
                                    cells=cells))
    runner = Runner(plan, prepare_run(plan, tmp_path / "results"), gpu=None, charts=False)
    events = Recorder()
    runner.subscribe(events)
    hog = asyncio.create_task(_hog(0.03, 0.05))
    try:
        assert await runner.run() == "completed"
    finally:
        hog.cancel()
    told = [(e.level, e.message) for e in events.of("notice") if "fell behind" in e.message]
    behind = [m for m in load_run(runner.store.path).measurements if m.client_behind]
    assert len(behind) >= 2 and len(told) == len(behind), (behind, told)
    assert [level for level, _ in told] == ["warning"] + ["info"] * (len(told) - 1), told
    assert told[0][1].endswith("later ones are in the log only")
