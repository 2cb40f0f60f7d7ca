"""ServerProcess against a real subprocess (tests/fakes/fake_server_http.py) on loopback."""

from __future__ import annotations

import contextlib
import json
import socket
import time
from pathlib import Path

import psutil
import pytest

from dspark_tui.engine.servers.ports import port_is_free
from dspark_tui.engine.servers.server import ServerError, ServerProcess
from dspark_tui.engine.servers.server_record import read_record
from tests.engine.helpers import Recorder, fake_server_plan


def _server(tmp_path: Path, port: int, *flags: str, **server: object) -> tuple[ServerProcess, Recorder]:
    plan = fake_server_plan(port, *flags, **server)
    recorder = Recorder()
    proc = ServerProcess(plan, plan.arms[0], log_path=tmp_path / "logs" / "server-a_1.log",
                         run_dir=tmp_path, emit=recorder)
    return proc, recorder


async def test_starts_serves_and_stops_leaving_nothing(tmp_path: Path, port: int):
    server, events = _server(tmp_path, port)
    await server.start()
    try:
        assert server.exit_code() is None
        assert await server.probe_health()
        states = [e.state for e in events.of("server_state")]
        assert states[:3] == ["starting", "loading", "ready"]
        ready_at = events.events.index(events.of("server_state")[2])
        assert any("Loading safetensors" in e.line for e in events.of("server_log")
                   if events.events.index(e) < ready_at)
        record = read_record(tmp_path)
        assert record is not None and record.pid == server.pid and record.state == "running"
    finally:
        await server.stop()
    assert events.of("server_state")[-1].state == "stopped"
    assert port_is_free("127.0.0.1", port)
    assert read_record(tmp_path).state == "stopped"
    log = (tmp_path / "logs" / "server-a_1.log").read_text()
    assert "Application startup complete." in log


async def test_exit_at_startup_fails_fast_with_the_log_tail(tmp_path: Path, port: int):
    server, events = _server(tmp_path, port, "--exit-at-start", "3", startup_timeout_s=30)
    started = time.monotonic()
    with pytest.raises(ServerError) as caught:
        await server.start()
    assert time.monotonic() - started < 10
    assert "exited with code 3 while starting" in str(caught.value)
    assert any("cannot load the model" in line for line in caught.value.tail)
    assert events.of("server_state")[-1].state == "failed"


async def test_fatal_log_line_fails_before_the_timeout(tmp_path: Path, port: int):
    server, _ = _server(tmp_path, port, "--fatal-line", startup_timeout_s=60)
    started = time.monotonic()
    with pytest.raises(ServerError, match=r"fatal error: .*EngineCore failed to start"):
        await server.start()
    assert time.monotonic() - started < 10


async def test_hang_at_startup_times_out(tmp_path: Path, port: int):
    server, _ = _server(tmp_path, port, "--never-ready", startup_timeout_s=1.5)
    started = time.monotonic()
    with pytest.raises(ServerError, match=r"not ready after 1.5s \(startup_timeout_s\)"):
        await server.start()
    assert 1.4 < time.monotonic() - started < 10


async def test_port_taken_names_the_holder(tmp_path: Path, port: int):
    server, _ = _server(tmp_path, port)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        with pytest.raises(ServerError) as caught:
            await server.start()
    message = str(caught.value)
    assert f"port {port} on 127.0.0.1 is already in use" in message
    assert f"pid {psutil.Process().pid}" in message
    assert server.pid is None  # nothing was launched


async def test_ignoring_sigterm_and_spawned_workers_leave_nothing(tmp_path: Path, port: int):
    server, events = _server(tmp_path, port, "--ignore-sigterm", "--spawn-workers", "3",
                             stop_timeout_s=1)
    await server.start()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and len(read_record(tmp_path).descendants) < 3:
        await server.probe_health()
        time.sleep(0.2)
    record = read_record(tmp_path)
    pids = [record.pid] + [d.pid for d in record.descendants]
    assert len(pids) >= 4
    await server.stop()
    assert not [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"]
    assert "killed after 1s" in events.of("server_state")[-1].message
    assert "SIGTERM ignored" in (tmp_path / "logs" / "server-a_1.log").read_text()


async def test_log_flood_keeps_the_tail_bounded(tmp_path: Path, port: int):
    server, events = _server(tmp_path, port, "--log-flood")
    await server.start()
    try:
        started = time.monotonic()
        while time.monotonic() - started < 1.0:
            # a pipe the relay stopped draining blocks the server for good; a starved CPU (CI's
            # 4 workers on 2 cores) only slows an answer, so the probe waits long
            assert await server.probe_health(timeout=10.0)
            server._read_log()
        assert len(server.tail()) <= 200
        assert len(events.of("server_log")) < 200  # rate limited, not one event per line
    finally:
        await server.stop()
    assert (tmp_path / "logs" / "server-a_1.log").stat().st_size > 1_000_000


def test_record_is_json_for_other_tools(tmp_path: Path):
    (tmp_path / "server.json").write_text("{not json")
    assert read_record(tmp_path) is None
    (tmp_path / "server.json").write_text(json.dumps({"arm": "a"}))
    assert read_record(tmp_path) is None


def test_secrets_in_the_server_command_are_hidden():
    from dspark_tui.model.secrets import redact_argv

    argv = ["vllm", "serve", "m", "--api-key", "sk-123", "--hf-token=hf_abc", "--spec-tokens", "5",
            "--token", "t0"]
    assert redact_argv(argv) == ["vllm", "serve", "m", "--api-key", "***", "--hf-token=***",
                                 "--spec-tokens", "5", "--token", "***"]


def test_a_server_spawned_before_its_pid_was_recorded_is_still_stopped(tmp_path: Path):
    """The runner writes server.json before the spawn; killed between the two, its resume must
    still find the server (by the token in its environment) and end it."""
    import os
    import subprocess
    import sys

    from dspark_tui.engine.servers.procs import TOKEN_VAR
    from dspark_tui.engine.servers.server_record import ServerRecord, stop_orphaned_server, write_record

    token = "starting-token-0123456789"
    write_record(tmp_path, ServerRecord(arm="a", pid=0, pgid=0, create_time=0.0, token=token,
                                        host="127.0.0.1", port=1, state="starting"))
    orphan = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                              env={**os.environ, TOKEN_VAR: token}, start_new_session=True)
    try:
        assert stop_orphaned_server(tmp_path, grace_s=2.0) == [orphan.pid]
        assert orphan.wait(5) is not None
        record = read_record(tmp_path)
        assert record is not None and record.state == "stopped"
    finally:
        if orphan.poll() is None:
            orphan.kill()
            orphan.wait()



async def test_the_record_is_written_before_the_spawn(tmp_path: Path, port: int):
    """server.json names the token before Popen, so no moment exists in which a server lives
    that a resume cannot find. Seen through a spawn that fails: the record is already there."""
    server, _ = _server(tmp_path, port)
    server.argv = [str(tmp_path / "no-such-server")]
    with pytest.raises(ServerError, match="cannot run"):
        await server.start()
    record = read_record(tmp_path)
    assert record is not None and record.token == server.token and record.state == "stopped"


def test_a_stop_does_not_wait_out_a_group_of_zombies():
    """A zombie answers killpg(pgid, 0) until it is reaped. vLLM's EngineCore, orphaned when its
    API server exits, waits for init to reap it (slow on this box), and every stop of real vLLM
    took the whole grace (stop_timeout_s, 15 s) and then reported nothing killed. Here the orphan
    comes to this process (a subreaper for the test), which reaps it only afterwards."""
    import ctypes
    import os
    import signal
    import subprocess
    import sys

    from dspark_tui.engine.servers.procs import group_alive, terminate_tree

    pr_set_child_subreaper = 36
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.prctl(pr_set_child_subreaper, 1, 0, 0, 0) == 0
    code = ("import os, signal, time\n"
            "if os.fork() == 0:\n    os._exit(0)\n"  # a child that is never reaped by its parent
            "signal.signal(signal.SIGTERM, lambda *a: os._exit(0))\ntime.sleep(60)\n")
    leader = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    try:
        time.sleep(1.0)
        started = time.monotonic()
        killed = terminate_tree(pgid=leader.pid, refs=[], token=None, grace_s=10.0)
        took = time.monotonic() - started
        assert group_alive(leader.pid), "the orphan is a zombie until this process reaps it"
        assert killed == [] and took < 3.0, (killed, took)
    finally:
        if leader.poll() is None:
            os.killpg(leader.pid, signal.SIGKILL)
        leader.wait()
        libc.prctl(pr_set_child_subreaper, 0, 0, 0, 0)
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG) != (0, 0):
                pass
