"""The reducer that every watcher shares: fold events, get the numbers the run screen shows."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from dspark_tui.model import CellKey, CellResult, ClientMetrics
from dspark_tui.model import events as ev
from dspark_tui.model.run_state import LOG_TAIL_LENGTH, SERIES_LENGTH, RunState
from dspark_tui.model.statistics import StatisticsSettings
from dspark_tui.plans import resolve_plan
from dspark_tui.results.follow import EventFollower
from tests.tui.eventlog import T0, build_events, write_run

KEY = CellKey(arm="st=3", scenario="chat_short", concurrency=16)
RECORDED = Path(__file__).parent / "data" / "demo_run"


def test_full_replay_counts_cells_and_finishes(tmp_path: Path):
    state = RunState()
    state.apply_all(build_events(tmp_path, fail_index=2))
    assert (state.done, state.failed, state.total) == (9, 1, 10)
    assert state.status == "completed" and state.finished
    assert state.failed_cells[0].reason.startswith("bench client exited 1")
    assert state.current is None
    assert state.eta(T0 + 999) == 0.0
    assert state.elapsed(T0 + 999) == state.finished_t - T0


def test_mid_run_has_current_cell_eta_and_loading_line(tmp_path: Path):
    state = RunState()
    state.apply_all(build_events(tmp_path, stop_after=3, finish=False))
    state.apply(ev.CellStarted(t=state.last_t, key=KEY, num_prompts=64, index=4, total=10))
    state.apply(ev.CellProgress(t=state.last_t + 1, key=KEY, completed=16, total=64, output_tok_s=1234.5,
                             ttft_p99_ms=88.0))
    assert state.current is not None and state.current.fraction == 0.25
    assert state.current.numbers.output_tok_s == 1234.5
    assert list(state.series["tok_s"]) == [1234.5]
    # A later progress without a number keeps the last one known; the counts are the latest.
    state.apply(ev.CellProgress(t=state.last_t + 1, key=KEY, completed=32, total=64, failed=1,
                                ttft_p99_ms=90.0))
    live = state.current.numbers
    assert (live.completed, live.failed, live.output_tok_s, live.ttft_p99_ms) == (32, 1, 1234.5, 90.0)
    assert state.current.fraction == 0.5
    eta = state.eta(state.last_t)
    assert eta is not None and 0 < eta < 10 * 60
    assert state.cells[KEY].phase == "running"


def test_progress_line_is_kept_only_while_the_server_loads():
    state = RunState()
    state.apply(ev.RunStarted(t=T0, run_dir="/x", name="demo", arms=["st=3"], total_cells=1))
    state.apply(ev.ServerStateChanged(t=T0, arm="st=3", state="loading"))
    state.apply(ev.ServerLog(t=T0, arm="st=3", line="Loading weights: 40% Completed"))
    assert state.arms["st=3"].progress_line == "Loading weights: 40% Completed"
    state.apply(ev.ServerStateChanged(t=T0, arm="st=3", state="ready"))
    state.apply(ev.ServerLog(t=T0, arm="st=3", line="GET /metrics 200"))
    assert state.arms["st=3"].progress_line == ""


def test_buffers_stay_bounded():
    state = RunState()
    state.apply(ev.CellStarted(t=T0, key=KEY, num_prompts=10, index=1, total=1))
    n = max(SERIES_LENGTH, LOG_TAIL_LENGTH) * 2
    for i in range(n):
        state.apply(ev.MetricsSample(t=T0 + i, arm="st=3", kv_usage=i / 1000))
        state.apply(ev.ServerLog(t=T0 + i, arm="st=3", line=f"line {i}"))
    assert len(state.series["kv_usage"]) == SERIES_LENGTH
    assert len(state.log_tail) == LOG_TAIL_LENGTH
    assert state.log_tail[-1].line == f"line {n - 1}"


def test_gap_samples_do_not_draw_and_pause_is_tracked():
    state = RunState()
    state.apply(ev.MetricsSample(t=T0, arm="st=3", kv_usage=0.5, gap=True))
    assert not state.series["kv_usage"]
    state.apply(ev.RunControl(t=T0, action="pause", message="pausing after the current cell"))
    assert state.paused
    state.apply(ev.RunControl(t=T0, action="resume"))
    assert not state.paused


def test_attach_replays_a_run_dir_and_its_saved_cells(tmp_path: Path):
    run_dir = write_run(tmp_path, stop_after=4, finish=False)
    state = RunState()
    state.apply_all(EventFollower(run_dir).poll())
    assert state.done == 4 and not state.finished
    assert state.cells[CellKey(arm="st=3", scenario="chat_short", concurrency=1)].total_tok_s


def test_eta_counts_the_server_starts_still_ahead(tmp_path: Path):
    state = RunState()
    state.expect_cells(cell.key for cell in resolve_plan("demo")[0].cells())
    state.apply_all(build_events(tmp_path, stop_after=2, finish=False))
    now = state.last_t
    per_cell = 4.0  # the synthetic cells take four seconds each
    startup = state.arms["st=3"].startup_s
    assert startup == 2.5
    assert state.eta(now) == pytest.approx(8 * per_cell + startup)


# -- repeated measurements ---------------------------------------------------------------------

ARMS = ["st=3", "st=5"]
CELLS = [("chat_short", 1), ("chat_short", 16)]


def _result(key: CellKey, round_: int, repeat: int, tok_s: float) -> CellResult:
    return CellResult(arm=key.arm, scenario=key.scenario, concurrency=key.concurrency,
                      round=round_, repeat=repeat, session=f"{key.arm}-r{round_}",
                      metrics=ClientMetrics(total_throughput=tok_s))


def _measure(state: RunState, key: CellKey, round_: int, repeat: int, t: float,
             tok_s: float | None = 1000.0, seconds: float = 4.0) -> None:
    state.apply(ev.CellStarted(t=t, key=key, num_prompts=8, index=1, total=state.total,
                            round=round_, repeat=repeat))
    if tok_s is None:
        state.apply(ev.CellFailed(t=t + seconds, key=key, reason="connection reset", round=round_,
                               repeat=repeat))
    else:
        state.apply(ev.CellFinished(t=t + seconds, result=_result(key, round_, repeat, tok_s)))


def _planned_run() -> RunState:
    state = RunState()
    state.apply(ev.RunStarted(t=T0, run_dir="/x", name="ab", arms=ARMS, total_cells=4))
    state.apply(ev.RoundPlanned(t=T0, round=1, arms=ARMS, cells=CELLS, repeats=2))
    state.apply(ev.RoundPlanned(t=T0, round=2, arms=ARMS[::-1], cells=CELLS, repeats=2))
    return state


def test_the_total_is_what_the_rounds_plan_and_an_adaptive_round_raises_it():
    state = _planned_run()
    assert state.total == 2 * 2 * 2 * 2  # arms x cells x repeats x rounds
    state.apply(ev.RoundPlanned(t=T0, round=3, arms=ARMS, cells=[("chat_short", 16)],
                             reason="adaptive", repeats=2))
    assert state.total == 16 + 2 * 2
    state.apply(ev.RoundPlanned(t=T0, round=3, arms=ARMS, cells=[("chat_short", 16)],
                             reason="adaptive", repeats=2))  # a resume announcing it again
    assert state.total == 20
    assert state.cells[KEY].planned == 6 and state.repeated


def test_a_cell_is_done_when_every_planned_measurement_is_ok():
    state = _planned_run()
    _measure(state, KEY, 1, 1, T0, tok_s=1000.0)
    cell = state.cells[KEY]
    assert (cell.phase, cell.ok_count, cell.ok_of_planned) == ("pending", 1, "1/4")
    _measure(state, KEY, 1, 2, T0 + 4, tok_s=None)
    assert (cell.phase, cell.ok_count, cell.failed_count) == ("failed", 1, 1)
    assert cell.reason == "connection reset" and state.failed_cells == [cell]
    _measure(state, KEY, 1, 2, T0 + 8, tok_s=1100.0)  # retried: the failure is taken back
    _measure(state, KEY, 2, 1, T0 + 12, tok_s=1200.0)
    state.apply(ev.CellStarted(t=T0 + 16, key=KEY, num_prompts=8, index=4, total=16, round=2,
                            repeat=2))
    assert state.current is not None and state.current.label == "r2 p2"
    assert cell.phase == "running"
    state.apply(ev.CellFinished(t=T0 + 20, result=_result(KEY, 2, 2, 1300.0)))
    assert (cell.phase, cell.ok_count, cell.failed_count) == ("done", 4, 0)
    assert [r.total_throughput for r in cell.ok_results] == [1000.0, 1100.0, 1200.0, 1300.0]
    assert cell.total_tok_s == pytest.approx(1150.0)
    assert (state.done, state.failed, state.cells_done) == (4, 0, 1)
    assert state.ok_measurements() == cell.ok_results
    assert state.results() == [cell.ok_results[-1]]


def test_the_eta_counts_measurements_and_the_sessions_still_to_start():
    state = _planned_run()
    state.apply(ev.ServerStateChanged(t=T0, arm="st=3", state="starting"))
    state.apply(ev.ServerStateChanged(t=T0 + 4, arm="st=3", state="ready"))
    state.apply(ev.ServerStateChanged(t=T0 + 4, arm="st=3", state="warming_up"))
    state.apply(ev.ServerStateChanged(t=T0 + 10, arm="st=3", state="ready"))
    assert state.arms["st=3"].startups == [10.0]  # the cells waited for the warmup too
    state.apply(ev.SessionStarted(t=T0 + 10, arm="st=3", round=1, session="s1"))
    _measure(state, KEY, 1, 1, T0 + 10, seconds=4.0)
    # 15 measurements at 4 s; sessions ahead: st=5 in round 1, both arms in round 2.
    assert state.eta(T0 + 14) == pytest.approx(15 * 4.0 + 3 * 10.0)
    state.apply(ev.ServerStateChanged(t=T0 + 14, arm="st=5", state="starting"))
    assert state.eta(T0 + 14) == pytest.approx(15 * 4.0 + 2 * 10.0)


def test_a_lost_runner_is_folded_as_an_interrupted_end():
    state = _planned_run()
    state.apply(ev.CellStarted(t=T0, key=KEY, num_prompts=8, index=1, total=16))
    assert state.runner_gone(T0 + 5)
    assert (state.status, state.finished_t, state.current) == ("interrupted", T0 + 5, None)
    assert state.cells[KEY].phase == "pending" and state.eta(T0 + 9) == 0.0
    assert state.elapsed(T0 + 99) == 5.0
    assert not state.runner_gone(T0 + 6)  # said once


def test_a_recorded_log_without_rounds_replays_as_single_measurements():
    state = RunState()
    state.apply_all(EventFollower(RECORDED).poll())
    final = [e for e in EventFollower(RECORDED).poll() if isinstance(e, ev.RunFinished)][-1]
    assert (state.done, state.failed, state.total) == (final.done, final.failed, final.total)
    assert not state.repeated and state.cells_done == final.done
    assert all(list(cell.measurements) == [(1, 1)] for cell in state.cells.values())
    assert len(state.ok_measurements()) == final.done


def test_a_resumed_log_forgets_the_cell_its_killed_runner_left_running(tmp_path: Path):
    state = RunState()
    state.apply_all(build_events(tmp_path, stop_after=3, finish=False))
    fourth = resolve_plan("demo")[0].cells()[3].key
    state.apply(ev.CellStarted(t=state.last_t, key=fourth, num_prompts=64, index=4, total=10))
    state.apply(ev.RunStarted(t=state.last_t + 60, run_dir=str(tmp_path), name="demo", arms=ARMS,
                           total_cells=10, resumed_cells=3))
    assert state.current is None and state.cells[fourth].phase == "pending"
    assert (state.done, state.total, state.resumed) == (3, 10, 3)


def test_running_counts_match_a_recount_through_retries_skips_and_resumes():
    """The counts are kept as records change (so a header reads them in constant time); after
    any sequence they must equal a count from scratch."""
    rng = random.Random(7)
    state = RunState()
    keys = [CellKey(arm=arm, scenario=s, concurrency=c) for arm in ARMS for s, c in CELLS]
    t = T0
    state.apply(ev.RunStarted(t=t, run_dir="/x", name="ab", arms=ARMS, total_cells=4))
    for step in range(400):
        t += 1
        key, round_, repeat = rng.choice(keys), rng.randint(1, 3), rng.randint(1, 2)
        roll = rng.random()
        if roll < 0.3:
            state.apply(ev.CellStarted(t=t, key=key, num_prompts=8, index=1, total=1, round=round_,
                                    repeat=repeat))
        elif roll < 0.55:
            state.apply(ev.CellFinished(t=t, result=_result(key, round_, repeat, 1000.0 + step)))
        elif roll < 0.7:
            state.apply(ev.CellFailed(t=t, key=key, reason="reset", round=round_, repeat=repeat))
        elif roll < 0.75:
            state.apply(ev.CellSkipped(t=t, key=key, reason="skipped", round=round_, repeat=repeat))
        elif roll < 0.85:
            state.apply(ev.RoundPlanned(t=t, round=round_, arms=ARMS, cells=[CELLS[step % 2]],
                                     repeats=repeat))
        elif roll < 0.9:
            state.apply(ev.RunStarted(t=t, run_dir="/x", name="ab", arms=ARMS, total_cells=4))
        elif roll < 0.95:
            state.add_saved(_result(key, round_, repeat, 900.0))
        else:
            state.apply(ev.SessionStarted(t=t, arm=key.arm, round=round_, session=f"s{step}"))
        records = [m for cell in state.cells.values() for m in cell.measurements.values()]
        for phase, count in (("done", state.done), ("failed", state.failed),
                             ("skipped", state.skipped)):
            assert count == sum(1 for m in records if m.phase == phase)
        for phase in ("pending", "running", "done", "failed", "skipped"):
            assert state.count(phase) == sum(1 for c in state.cells.values() if c.phase == phase)
        ended = {(m.key, m.slot) for m in records if m.ended}
        open_now = {(key.arm, slot[0]) for key, slots in state.schedule.planned.slots.items()
                    for slot in slots if (key, slot) not in ended}
        assert state.schedule.sessions_ahead() == open_now - state.schedule.begun
        assert state.total >= state.ended


def test_a_run_ended_with_user_skips_only_reads_completed_with_the_skips():
    a, b = (CellKey(arm="st=3", scenario="chat", concurrency=c) for c in (1, 8))
    state = RunState()
    state.apply_all([
        ev.RunStarted(t=T0, run_dir="/r", name="r", arms=["st=3"], total_cells=2),
        ev.CellStarted(t=T0, key=a, num_prompts=4, index=1, total=2),
        ev.CellSkipped(t=T0 + 1, key=a, reason="skipped by user"),
        ev.CellStarted(t=T0 + 1, key=b, num_prompts=4, index=2, total=2),
        ev.CellFinished(t=T0 + 5, result=CellResult(
            arm="st=3", scenario="chat", concurrency=8,
            metrics=ClientMetrics(total_throughput=1.0, completed=4))),
    ])
    assert state.status_label == "running"
    state.apply(ev.RunFinished(t=T0 + 6, status="completed", done=1, failed=0, total=2,
                               message="cells: 1 skipped"))
    assert (state.skipped_cells, state.status_label) == (1, "completed, 1 skipped")


def test_lanes_keep_two_measurements_of_one_arm_in_flight_apart():
    """Rounds in parallel: the same arm on two nodes at once. Each lane keeps its own cell and
    progress; one ending leaves the other current; the ETA shares the work over the lanes."""
    state = RunState()
    state.apply(ev.RunStarted(t=T0, run_dir="/x", name="p", arms=["st=3", "st=5"], total_cells=8,
                              statistics={"parallel": 2}))
    for lane, node in ((1, "node07"), (2, "node08")):
        state.apply(ev.ServerStateChanged(t=T0, arm="st=3", state="ready", lane=lane))
        state.apply(ev.SessionStarted(t=T0, arm="st=3", round=lane, session=f"s{lane}", node=node,
                                      lane=lane))
        state.apply(ev.CellStarted(t=T0 + lane, key=KEY, num_prompts=8, index=lane, total=8,
                                   round=lane, lane=lane))
    state.apply(ev.CellProgress(t=T0 + 3, key=KEY, completed=5, total=8, lane=1))
    assert state.in_flight == 2
    assert state.board.cell_of(1).completed == 5 and state.board.cell_of(2).completed == 0
    assert [lane.describe() for lane in state.board.lanes.values()] == [
        "lane 1 · node07 · r1 · st=3", "lane 2 · node08 · r2 · st=3"]
    state.apply(ev.CellFinished(t=T0 + 10, result=CellResult(
        arm="st=3", scenario=KEY.scenario, concurrency=KEY.concurrency, round=2, node="node08",
        metrics=ClientMetrics(total_throughput=100.0))))
    assert state.in_flight == 1 and state.current is not None and state.current.round == 1
    one_lane = RunState()
    one_lane.apply_all([ev.RunStarted(t=T0, run_dir="/x", name="p", arms=["st=3"], total_cells=8),
                        ev.CellStarted(t=T0, key=KEY, num_prompts=8, index=1, total=8)])
    one_lane.apply(ev.CellFinished(t=T0 + 10, result=CellResult(
        arm="st=3", scenario=KEY.scenario, concurrency=KEY.concurrency,
        metrics=ClientMetrics(total_throughput=100.0))))
    state.statistics = StatisticsSettings(parallel=2)
    eta_two, eta_one = state.eta(T0 + 10), one_lane.eta(T0 + 10)
    assert eta_two is not None and eta_one is not None and eta_two < eta_one


def test_two_lanes_starting_one_arm_time_each_start_apart():
    """Lane 2's start of st=3 began while lane 1's was loading: each start is timed from its
    own beginning (one start time per arm made lane 1's look 5 s shorter than it was)."""
    state = RunState()
    state.apply_all([
        ev.ServerStateChanged(t=T0, arm="st=3", state="starting", lane=1, round=1),
        ev.ServerStateChanged(t=T0 + 5, arm="st=3", state="starting", lane=2, round=3),
        ev.ServerStateChanged(t=T0 + 10, arm="st=3", state="ready", lane=1, round=1),
        ev.ServerStateChanged(t=T0 + 12, arm="st=3", state="ready", lane=2, round=3),
        ev.ServerStateChanged(t=T0 + 14, arm="st=3", state="ready", lane=1, round=1),  # warmed up
    ])
    assert state.arms["st=3"].startups == [14.0, 7.0]


def _view(state: RunState) -> tuple[object, ...]:
    """What any view shows of a state (counts, live cell, sparklines, servers, lanes, ETA)."""
    return (state.status, state.done, state.failed, state.total, state.current,
            {name: list(values) for name, values in state.series.items()},
            {name: (arm.server_state, arm.startups) for name, arm in state.arms.items()},
            state.board.cells, state.board.lanes, state.eta(state.last_t or T0), state.last_t)


def test_a_catch_up_without_superseded_events_folds_to_the_same_state(tmp_path: Path):
    """Progress before its lane's next CellStarted and samples before any later CellStarted
    change nothing a later state shows: at every point of a run, sequential or on two lanes,
    folding without them gives the state the whole log gives."""
    from dspark_tui.model.lane_board import without_superseded

    sequential = build_events(tmp_path, fail_index=3)
    other = CellKey(arm="st=5", scenario="chat_short", concurrency=16)
    lanes: list[ev.Event] = []  # two lanes whose measurements overlap
    for i in range(6):
        for lane, key in ((1, KEY), (2, other)):  # lane 1's progress, then lane 2 starts
            lanes += [ev.CellStarted(t=T0 + 10 * i + lane, key=key, num_prompts=8, index=i,
                                     total=12, round=lane, lane=lane),
                      ev.CellProgress(t=T0 + 10 * i + lane, key=key, completed=2, total=8,
                                      output_tok_s=50.0 * lane, lane=lane),
                      ev.MetricsSample(t=T0 + 10 * i + lane, arm=key.arm, lane=lane,
                                       kv_usage=0.1 * i, running=float(lane))]
        for lane, key in ((1, KEY), (2, other)):
            lanes += [ev.CellProgress(t=T0 + 10 * i + 5, key=key, completed=4, total=8,
                                      output_tok_s=100.0 * lane, lane=lane),
                      ev.CellFinished(t=T0 + 10 * i + 6 + lane, result=CellResult(
                          arm=key.arm, scenario=key.scenario, concurrency=key.concurrency,
                          round=lane, metrics=ClientMetrics(total_throughput=100.0)))]
    for events in (sequential, lanes):
        for end in range(1, len(events), 5 if events is sequential else 1):
            whole, caught_up = RunState(), RunState()
            whole.apply_all(events[:end])
            kept = without_superseded(events[:end])
            caught_up.apply_all(kept)
            assert _view(caught_up) == _view(whole), end
    assert len(without_superseded(sequential)) < len(sequential) / 2


def test_the_byte_level_skip_drops_exactly_what_the_parsed_rule_drops(tmp_path: Path):
    """A catch-up's lines are filtered before parsing (parsing is most of its cost): on logs
    written as the runner writes them (events.jsonl, sequential and two lanes, with text that
    looks like a kind inside a server's log line), the lines kept parse to exactly the events
    without_superseded keeps."""
    from dspark_tui.model.lane_board import without_superseded
    from dspark_tui.results import RunStore
    from dspark_tui.results.store import read_events_from

    other = CellKey(arm="st=5", scenario="chat_short", concurrency=16)
    lanes: list[ev.Event] = [ev.ServerLog(t=T0, arm="st=3", line='{"kind":"cell_started"} "lane":2')]
    for i in range(4):
        for lane, key in ((1, KEY), (2, other)):
            lanes += [ev.CellStarted(t=T0 + 10 * i + lane, key=key, num_prompts=8, index=i,
                                     total=8, round=lane, lane=lane),
                      ev.CellProgress(t=T0 + 10 * i + lane, key=key, completed=2, total=8,
                                      lane=lane),
                      ev.MetricsSample(t=T0 + 10 * i + lane, arm=key.arm, lane=lane, running=1.0)]
    for number, events in enumerate((build_events(tmp_path), lanes)):
        store = RunStore(tmp_path / f"log{number}")
        store.path.mkdir()
        for event in events:
            store.append_event(event)
        everything, _ = read_events_from(store.events_path, 0)
        caught_up, _ = read_events_from(store.events_path, 0, catch_up=True)
        assert [e.model_dump() for e in caught_up] == \
            [e.model_dump() for e in without_superseded(everything)]
        assert len(caught_up) < len(everything)


# -- the ETA learns from the cells and counts the adaptive rounds (issue 23) -------------------

SLOW = CellKey(arm="st=3", scenario="chat_short", concurrency=1)  # a stand-in for a big cell


def test_the_eta_times_each_measurement_at_its_own_workloads_pace():
    """Measurements of c=1 took 2 s and of c=16 10 s: the 13 still open take 6·2 + 7·10 s,
    not 13 times the mean of all three (as one pace would say: 13 · 4.67 s)."""
    state = _planned_run()
    _measure(state, SLOW, 1, 1, T0, seconds=2.0)
    _measure(state, SLOW, 1, 2, T0 + 2, seconds=2.0)
    _measure(state, KEY, 1, 1, T0 + 4, seconds=10.0)
    # 16 planned (2 arms x 2 rounds x 2 repeats a cell), 3 ended: 6 of c=1 open, 7 of c=16.
    assert state.eta(T0 + 14) == pytest.approx(6 * 2.0 + 7 * 10.0)


def test_the_eta_counts_the_adaptive_rounds_the_plan_still_allows():
    """adaptive_rounds = 2, none announced: two more rounds as large as the last (8
    measurements at 4 s) are in the ETA; announced, each leaves it; the last one used: none."""
    state = RunState()
    state.apply(ev.RunStarted(t=T0, run_dir="/x", name="ab", arms=ARMS, total_cells=4,
                              statistics=StatisticsSettings(rounds=2, adaptive_rounds=2)))
    state.apply(ev.RoundPlanned(t=T0, round=1, arms=ARMS, cells=CELLS, repeats=2))
    state.apply(ev.RoundPlanned(t=T0, round=2, arms=ARMS[::-1], cells=CELLS, repeats=2))
    _measure(state, KEY, 1, 1, T0, seconds=4.0)
    planned = 15 * 4.0
    assert state.eta(T0 + 4) == pytest.approx(planned + 2 * 8 * 4.0)
    state.apply(ev.RoundPlanned(t=T0 + 4, round=3, arms=ARMS, cells=[("chat_short", 16)],
                                reason="adaptive", repeats=2))  # 4 measurements
    assert state.eta(T0 + 4) == pytest.approx(planned + 4 * 4.0 + 1 * 4 * 4.0)
    state.apply(ev.RoundPlanned(t=T0 + 4, round=4, arms=ARMS, cells=[("chat_short", 16)],
                                reason="adaptive", repeats=2))
    assert state.eta(T0 + 4) == pytest.approx(planned + 8 * 4.0)
