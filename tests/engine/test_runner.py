"""The runner in-process against the real simulator and the real native driver, one fault at a
time; every test reads back what landed in the run directory."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path

import psutil
import pytest

from dspark_tui.engine.run.runner import Runner, filter_plan, plan_of_run, prepare_run
from dspark_tui.model import CellStatus, UserError, load_plan
from dspark_tui.results import RunStore, load_run
from tests.engine.helpers import Recorder, sim_runner, write_sim_plan
from tests.plan_text import scenario_table

ONE_ARM_THREE_CELLS = (scenario_table("big", 64, 512, [4], 12, range_ratio=1.0) + "\n"
                       + scenario_table("small", 64, 16, [1, 2], 1))


def _statuses(store: RunStore) -> dict[str, str]:
    cells, problems = store.load_cells()
    assert not problems
    return {key.id: cell.status.value for key, cell in cells.items()}


def _server_logs(store: RunStore) -> str:
    """Every session's server log of the run, one after another."""
    return "".join(p.read_text() for p in sorted((store.path / "logs").glob("server-*.log")))


def _manifest(store: RunStore) -> dict:
    return json.loads(store.manifest_path.read_text())


async def test_full_run_saves_cells_series_csv_report_and_events(tmp_path: Path, port: int):
    runner, events = sim_runner(tmp_path, port)
    assert await runner.run() == "completed"
    store = runner.store
    assert _statuses(store) == {f"st={k}/chat/c{c}": "ok" for k in (3, 5) for c in (1, 4)}
    run = load_run(store.path)
    cell = run.cells[next(iter(run.cells))]
    assert cell.server is not None and cell.server.samples >= 2
    assert cell.server.mean_acceptance_length is not None and cell.server.mean_acceptance_length > 1
    assert cell.provenance.driver == "native" and cell.provenance.started_at
    assert (store.path / "series" / "st_3" / "chat__c4__r1p1.csv").read_text().startswith("t,elapsed_s")
    assert (store.path / "results.csv").read_text().count("\n") == 5
    assert "chat" in (store.path / "report.md").read_text()
    manifest = _manifest(store)
    assert manifest["status"] == "completed" and manifest["runner_pid"] == psutil.Process().pid
    kinds = [e.kind for e in store.read_events()]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert kinds.count("cell_finished") == 4 and "metrics_sample" in kinds
    live = [k for k in events.kinds() if k != "cell_progress"]
    assert live == [k for k in kinds if k != "cell_progress"]  # the file thins progress only
    states = [e.state for e in events.of("server_state") if e.arm == "st=3"]
    assert states == ["starting", "loading", "ready", "warming_up", "ready", "stopping", "stopped"]
    assert oct(store.path.stat().st_mode & 0o777) == "0o700"


async def test_server_that_fails_to_start_fails_its_cells_with_the_reason(tmp_path: Path, port: int):
    runner, events = sim_runner(tmp_path, port, "--fail-start", arms=(3,))
    assert await runner.run() == "failed"
    cells, _ = runner.store.load_cells()
    assert {c.status for c in cells.values()} == {CellStatus.FAILED}
    reason = next(iter(cells.values())).error
    assert reason.startswith("server failed to start: server exited with code")
    assert any("server exited with code" in n.message for n in events.of("notice"))


async def test_server_hanging_at_startup_times_out(tmp_path: Path, port: int):
    runner, _ = sim_runner(tmp_path, port, "--hang-startup", arms=(3,), startup_timeout_s=2)
    assert await runner.run() == "failed"
    cells, _ = runner.store.load_cells()
    assert cells and all("not ready after 2s (startup_timeout_s)" in c.error for c in cells.values())


async def test_port_taken_refuses_to_start_naming_the_holder(tmp_path: Path, port: int):
    runner, events = sim_runner(tmp_path, port, arms=(3,))
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        assert await runner.run() == "failed"
    message = events.of("run_finished")[0].message
    assert f"port {port} on 127.0.0.1 is already in use by pid {psutil.Process().pid}" in message
    assert not runner.store.load_cells()[0]
    assert _manifest(runner.store)["status"] == "failed"


@pytest.mark.parametrize("exit_code", [0, 3])
async def test_crash_mid_cell_fails_that_cell_and_restarts_the_server_once(
    tmp_path: Path, port: int, exit_code: int
):
    # The readiness probe and 5 requests of the first cell reach 6; after the restart the
    # other two cells need only 1 + 1 + 1 requests.
    runner, events = sim_runner(tmp_path, port, "--crash-after-requests", "6", "--crash-exit-code",
                             str(exit_code), arms=(3,), warmup=0, speed=5,
                             cells=ONE_ARM_THREE_CELLS)
    assert await runner.run() == "failed"
    cells, _ = runner.store.load_cells()
    by_id = {k.id: c for k, c in cells.items()}
    assert by_id["st=3/big/c4"].status == CellStatus.FAILED
    assert f"server exited with code {exit_code}" in by_id["st=3/big/c4"].error
    assert by_id["st=3/small/c1"].ok and by_id["st=3/small/c2"].ok
    assert [e.state for e in events.of("server_state")].count("restarting") == 1
    assert "EngineCore encountered a fatal error" in _server_logs(runner.store)


async def test_a_server_dying_twice_fails_the_rest_of_its_arm(tmp_path: Path, port: int):
    # Each server dies 50 ms after its 2nd request (the readiness probe plus one request). Cells
    # of 256 tokens outlast those 50 ms, so the cell after the second death's is never started.
    cells = (ONE_ARM_THREE_CELLS.replace("concurrencies = [1, 2]", "concurrencies = [1, 2, 3, 4]")
             .replace("output_len = 16", "output_len = 256"))
    runner, events = sim_runner(tmp_path, port, "--crash-after-requests", "2", arms=(3,), warmup=0,
                             speed=5, cells=cells)
    assert await runner.run() == "failed"
    cells_by_id = {k.id: c for k, c in runner.store.load_cells()[0].items()}
    assert "server exited with code" in cells_by_id["st=3/big/c4"].error
    assert cells_by_id["st=3/small/c4"].error == "not run: the server died twice during this arm"
    assert [e.state for e in events.of("server_state")].count("starting") == 2


async def test_stall_with_health_200_is_detected(tmp_path: Path, port: int):
    runner, _ = sim_runner(tmp_path, port, "--stall-after-requests", "4", arms=(3,), warmup=0,
                        speed=5, cells=ONE_ARM_THREE_CELLS, stall_timeout_s=1.5)
    assert await runner.run() == "failed"
    cells, _ = runner.store.load_cells()
    by_id = {k.id: c for k, c in cells.items()}
    assert "server stalled: no token counted for" in by_id["st=3/big/c4"].error
    assert by_id["st=3/small/c1"].ok  # the restarted server served the rest


async def test_sigterm_ignored_and_workers_spawned_leave_no_process(tmp_path: Path, port: int):
    runner, events = sim_runner(tmp_path, port, "--ignore-sigterm", "--spawn-workers", "2",
                             arms=(3,), stop_timeout_s=1)
    assert await runner.run() == "completed"
    stopped = [e for e in events.of("server_state") if e.state == "stopped"]
    assert "killed after 1s" in stopped[-1].message
    record = json.loads((runner.store.path / "server.json").read_text())
    assert record["state"] == "stopped" and len(record["descendants"]) >= 2
    for pid in [record["pid"]] + [d["pid"] for d in record["descendants"]]:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


async def test_log_flood_does_not_flood_the_event_log(tmp_path: Path, port: int):
    runner, events = sim_runner(tmp_path, port, "--log-flood", "3000000", arms=(3,))
    assert await runner.run() == "completed"
    assert runner.store.server_log_path("st=3", "s1").stat().st_size > 300_000
    assert len(events.of("server_log")) < 400


async def test_control_pause_skip_abort_in_process(tmp_path: Path, port: int):
    cells = ('[[scenarios]]\nname = "slow"\ninput_len = 64\noutput_len = 512\nrange_ratio = 1.0\n'
             'concurrencies = [1, 2, 3, 4]\nnum_prompts = 2\n')
    runner, events = sim_runner(tmp_path, port, arms=(3,), speed=2, warmup=0, cells=cells)
    task = asyncio.create_task(runner.run())

    async def until(predicate, timeout: float = 20.0) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                await asyncio.sleep(0.05)

    await until(lambda: events.of("cell_started"))
    runner.pause()
    await until(lambda: events.of("cell_finished"))
    await asyncio.sleep(1.0)
    assert len(events.of("cell_started")) == 1  # paused after the current cell
    runner.resume()
    await until(lambda: len(events.of("cell_started")) == 2)
    # a skip cuts a measurement in flight: its first progress says it is (CellStarted comes
    # before the client's task exists, and under load a skip sent then found nothing to skip)
    second = events.events.index(events.of("cell_started")[1])
    await until(lambda: any(e.kind == "cell_progress" for e in events.events[second:]))
    runner.skip()
    await until(lambda: events.of("cell_skipped"))
    await until(lambda: len(events.of("cell_started")) == 3)
    runner.abort()
    assert await asyncio.wait_for(task, 20) == "aborted"
    statuses = _statuses(runner.store)
    assert statuses == {"st=3/slow/c1": "ok", "st=3/slow/c2": "skipped"}
    assert [e.action for e in events.of("run_control")] == ["pause", "resume", "skip", "abort"]
    assert _manifest(runner.store)["status"] == "aborted"


async def test_skip_with_no_cell_running_says_so_and_skips_nothing(tmp_path: Path, port: int):
    cells = ('[[scenarios]]\nname = "slow"\ninput_len = 64\noutput_len = 512\nrange_ratio = 1.0\n'
             'concurrencies = [1, 2]\nnum_prompts = 2\n')
    runner, events = sim_runner(tmp_path, port, arms=(3,), speed=2, warmup=0, cells=cells)
    task = asyncio.create_task(runner.run())
    async with asyncio.timeout(20):
        while not events.of("cell_started"):
            await asyncio.sleep(0.05)
        runner.pause()
        while not events.of("cell_finished"):
            await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)  # paused between cells: nothing is running
    runner.skip()
    runner.resume()
    assert await asyncio.wait_for(task, 30) == "completed"
    acks = {e.action: e.message for e in events.of("run_control")}
    assert acks["skip"] == "no cell is running; nothing to skip"
    assert _statuses(runner.store) == {"st=3/slow/c1": "ok", "st=3/slow/c2": "ok"}


async def test_a_run_whose_only_gaps_are_user_skips_completes_and_retry_redoes_them(
        tmp_path: Path, port: int):
    cells = ('[[scenarios]]\nname = "slow"\ninput_len = 64\noutput_len = 512\nrange_ratio = 1.0\n'
             'concurrencies = [1, 2]\nnum_prompts = 2\n')
    runner, events = sim_runner(tmp_path, port, arms=(3,), speed=2, warmup=0, cells=cells)
    # Skip the first cell once it is measuring; the second runs to its end.
    runner.subscribe(lambda e: runner.skip() if e.kind == "cell_progress"
                     and len(events.of("cell_started")) == 1 else None)
    assert await runner.run() == "completed"
    assert _statuses(runner.store) == {"st=3/slow/c1": "skipped", "st=3/slow/c2": "ok"}
    [finished] = events.of("run_finished")
    assert (finished.status, finished.message) == ("completed", "cells: 1 skipped")
    assert _manifest(runner.store)["status"] == "completed"
    assert _manifest(runner.store)["cells_ok"] == 1

    # `t` while a run goes: the skipped cell is measured again in the same run.
    (tmp_path / "again").mkdir()
    again, events = sim_runner(tmp_path / "again", port, arms=(3,), speed=2, warmup=0, cells=cells)
    again.subscribe(lambda e: again.skip() if e.kind == "cell_progress"
                    and len(events.of("cell_started")) == 1 else None)
    again.subscribe(lambda e: again.retry() if e.kind == "cell_skipped" else None)
    assert await again.run() == "completed"
    assert [e.key.id for e in events.of("cell_started")] == [
        "st=3/slow/c1", "st=3/slow/c1", "st=3/slow/c2"]
    assert events.of("run_control")[-1].message == "0 failed and 1 skipped cell(s) queued again"
    assert _statuses(again.store) == {"st=3/slow/c1": "ok", "st=3/slow/c2": "ok"}


def test_filter_plan_names_unknown_arms(tmp_path: Path, port: int):
    plan = load_plan(write_sim_plan(tmp_path, port))
    assert [a.name for a in filter_plan(plan, ["st=5"], None).arms] == ["st=5"]
    with pytest.raises(UserError, match=r"--arms: no arm named 'st=4' in plan 'enginetest'"):
        filter_plan(plan, ["st=4"], None)
    with pytest.raises(UserError, match="--scenarios: no scenario named 'nope'"):
        filter_plan(plan, None, ["nope"])


async def test_abort_during_a_long_startup_stops_at_once(tmp_path: Path, port: int):
    runner, events = sim_runner(tmp_path, port, "--hang-startup", arms=(3,), startup_timeout_s=60)
    task = asyncio.create_task(runner.run())
    async with asyncio.timeout(20):
        while "loading" not in [e.state for e in events.of("server_state")]:
            await asyncio.sleep(0.05)
    runner.abort()
    assert await asyncio.wait_for(task, 10) == "aborted"
    assert not runner.store.load_cells()[0]  # nothing ran, nothing is recorded as failed
    assert json.loads((runner.store.path / "server.json").read_text())["state"] == "stopped"


async def test_retry_runs_failed_cells_again_in_the_same_run(tmp_path: Path, port: int):
    cells = ('[[scenarios]]\nname = "slow"\ninput_len = 64\noutput_len = 512\nrange_ratio = 1.0\n'
             'concurrencies = [1]\nnum_prompts = 4\n\n'
             '[[scenarios]]\nname = "quick"\ninput_len = 64\noutput_len = 8\n'
             'concurrencies = [1]\nnum_prompts = 1\n')
    plan = load_plan(write_sim_plan(tmp_path, port, arms=(3,), speed=2, warmup=0, cells=cells))
    plan.bench.cell_timeout_s = 0.5  # the slow cell times out, every time
    runner = Runner(plan, prepare_run(plan, tmp_path / "results"), gpu=None, charts=False)
    events = Recorder()
    runner.subscribe(events)
    runner.subscribe(lambda e: runner.retry() if e.kind == "cell_failed"
                     and len(events.of("cell_failed")) == 1 else None)
    assert await runner.run() == "failed"
    started = [e.key.id for e in events.of("cell_started")]
    assert started == ["st=3/slow/c1", "st=3/slow/c1", "st=3/quick/c1"]
    # The driver's own message, with its detail; the runner's backstop comes 30 s later.
    assert [e.reason for e in events.of("cell_failed")] == [
        "native client timed out after 0.5s (cell_timeout_s) with 0 of 4 requests done"] * 2
    assert _statuses(runner.store) == {"st=3/slow/c1": "failed", "st=3/quick/c1": "ok"}


async def test_resume_reruns_failed_cells_only(tmp_path: Path, port: int):
    runner, _ = sim_runner(tmp_path, port, "--crash-after-requests", "6", arms=(3,), warmup=0,
                        speed=5, cells=ONE_ARM_THREE_CELLS)
    assert await runner.run() == "failed"
    store = runner.store
    before = {k.id: c.provenance.started_at for k, c in store.load_cells()[0].items()}
    # The user fixes the server (here: drops the crash switch from the run's plan) and resumes.
    manifest = store.read_manifest()
    command = manifest.plan["server"]["command"]
    manifest.plan["server"]["command"] = command[: command.index("--crash-after-requests")]
    store.write_manifest(manifest)
    resumed = Runner(plan_of_run(store), store, gpu=None, charts=False)
    events = Recorder()
    resumed.subscribe(events)
    assert await resumed.run() == "completed"
    assert [e.key.id for e in events.of("cell_started")] == ["st=3/big/c4"]
    assert events.of("run_started")[0].resumed_cells == 2
    after = {k.id: c.provenance.started_at for k, c in store.load_cells()[0].items()}
    assert after["st=3/small/c1"] == before["st=3/small/c1"]
    assert _statuses(store) == {"st=3/big/c4": "ok", "st=3/small/c1": "ok", "st=3/small/c2": "ok"}


PARTLY_TOO_LONG = scenario_table("mixed", 1000, 16, [2], 12, range_ratio=0.0)


async def test_requests_failing_on_a_live_server_fail_the_cell_but_keep_its_numbers(
        tmp_path: Path, port: int):
    # --max-model-len 600: prompts drawn above ~584 tokens are rejected with 400, the rest serve.
    runner, events = sim_runner(tmp_path, port, "--max-model-len", "600", arms=(3,), cells=PARTLY_TOO_LONG)
    assert await runner.run() == "failed"
    cell = next(iter(load_run(runner.store.path).cells.values()))
    assert cell.status == CellStatus.FAILED
    assert cell.error is not None and "requests failed" in cell.error and "of 12" in cell.error
    assert 0 < (cell.metrics.completed or 0) < 12
    [failed] = events.of("cell_failed")
    assert failed.reason == cell.error
    assert runner.store.done_slots() == set()  # resume and retry redo it
