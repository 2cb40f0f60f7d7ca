"""The reducer that every watcher shares: fold events, get the numbers the run screen shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from dspark_tui.model import CellKey
from dspark_tui.model.events import (
    CellProgress,
    CellStarted,
    MetricsSample,
    RunControl,
    RunStarted,
    ServerLog,
    ServerStateChanged,
)
from dspark_tui.model.run_state import LOG_TAIL_LENGTH, SERIES_LENGTH, RunState
from dspark_tui.plans import resolve_plan
from dspark_tui.results.follow import EventFollower
from tests.tui.eventlog import T0, build_events, write_run

KEY = CellKey(arm="st=3", scenario="chat_short", concurrency=16)


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
    state.apply(CellStarted(t=state.last_t, key=KEY, num_prompts=64, index=4, total=10))
    state.apply(CellProgress(t=state.last_t + 1, key=KEY, completed=16, total=64, output_tok_s=1234.5,
                             ttft_p99_ms=88.0))
    assert state.current is not None and state.current.fraction == 0.25
    assert state.current.output_tok_s == 1234.5
    assert list(state.series["tok_s"]) == [1234.5]
    eta = state.eta(state.last_t)
    assert eta is not None and 0 < eta < 10 * 60
    assert state.cells[KEY].phase == "running"


def test_progress_line_is_kept_only_while_the_server_loads():
    state = RunState()
    state.apply(RunStarted(t=T0, run_dir="/x", name="demo", arms=["st=3"], total_cells=1))
    state.apply(ServerStateChanged(t=T0, arm="st=3", state="loading"))
    state.apply(ServerLog(t=T0, arm="st=3", line="Loading weights: 40% Completed"))
    assert state.arms["st=3"].progress_line == "Loading weights: 40% Completed"
    state.apply(ServerStateChanged(t=T0, arm="st=3", state="ready"))
    state.apply(ServerLog(t=T0, arm="st=3", line="GET /metrics 200"))
    assert state.arms["st=3"].progress_line == ""


def test_buffers_stay_bounded():
    state = RunState()
    state.apply(CellStarted(t=T0, key=KEY, num_prompts=10, index=1, total=1))
    n = max(SERIES_LENGTH, LOG_TAIL_LENGTH) * 2
    for i in range(n):
        state.apply(MetricsSample(t=T0 + i, arm="st=3", kv_usage=i / 1000))
        state.apply(ServerLog(t=T0 + i, arm="st=3", line=f"line {i}"))
    assert len(state.series["kv_usage"]) == SERIES_LENGTH
    assert len(state.log_tail) == LOG_TAIL_LENGTH
    assert state.log_tail[-1].line == f"line {n - 1}"


def test_gap_samples_do_not_draw_and_pause_is_tracked():
    state = RunState()
    state.apply(MetricsSample(t=T0, arm="st=3", kv_usage=0.5, gap=True))
    assert not state.series["kv_usage"]
    state.apply(RunControl(t=T0, action="pause", message="pausing after the current cell"))
    assert state.paused
    state.apply(RunControl(t=T0, action="resume"))
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
