"""Only our own server is measured (issue 25, item 1): a session is ready only when the server
that answers is the one it started — its listening socket in the session's process tree, its
per-session served name on /v1/models — and each measurement records what proved it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import time
import tomllib
from pathlib import Path

import psutil
import pytest

from dspark_tui.engine.servers.identity import (
    IDENTITY_PREFIX,
    session_model_name,
    takes_served_model_name,
    with_session_name,
)
from dspark_tui.engine.servers.server import ServerError, ServerProcess
from dspark_tui.model import Plan
from dspark_tui.results import load_run
from tests.cli import CLI, cli_env
from tests.conftest import free_port
from tests.engine.helpers import Recorder, sim_plan_text
from tests.simulator import running_sim, stop_process_group


def test_which_commands_serve_under_the_sessions_name():
    assert takes_served_model_name(["vllm", "serve", "/m", "--port", "8000"])
    assert takes_served_model_name(["/opt/venv/bin/vllm", "serve", "/m"])
    assert takes_served_model_name(["python", "-m", "vllm.entrypoints.openai.api_server"])
    assert takes_served_model_name(["python3", "-m", "dspark_tui.sim", "serve", "m"])
    assert takes_served_model_name(["dspark-tui", "sim", "serve", "m"])
    assert not takes_served_model_name(["sh", "-c", "vllm serve /m"])  # a wrapper: the socket
    assert not takes_served_model_name(["vllm", "bench", "serve"])
    assert not takes_served_model_name(["./start-server.sh"])
    assert not takes_served_model_name([])


def test_the_sessions_name_leads_and_the_names_given_still_follow():
    name = session_model_name("0123456789abcdef0123")
    assert name == IDENTITY_PREFIX + "0123456789abcdef"
    assert with_session_name(["vllm", "serve", "/m", "--port", "1"], name, "/m") == [
        "vllm", "serve", "/m", "--port", "1", "--served-model-name", name, "/m"]
    own = ["vllm", "serve", "/m", "--served-model-name", "a", "b", "--port", "1"]
    assert with_session_name(own, name, "/m") == [
        "vllm", "serve", "/m", "--port", "1", "--served-model-name", name, "a", "b"]
    assert with_session_name(["vllm", "serve", "--served-model-name=a"], name, "x")[-3:] == [
        "--served-model-name", name, "a"]


def _sim_server(tmp_path: Path, port: int, *flags: str) -> tuple[ServerProcess, Recorder]:
    plan = Plan.model_validate(tomllib.loads(sim_plan_text(port, *flags, arms=(3,))))
    recorder = Recorder()
    server = ServerProcess(plan, plan.arms[0], log_path=tmp_path / "logs" / "server-st_3-s1.log",
                           run_dir=tmp_path, emit=recorder, session="s1")
    return server, recorder


async def test_our_server_proves_itself_and_serves_under_the_sessions_name(tmp_path: Path,
                                                                           port: int):
    server, _ = _sim_server(tmp_path, port)
    assert server.identity_name is not None and server.served_model == server.identity_name
    assert server.argv[-3:] == ["--served-model-name", server.identity_name, "test-model"]
    await server.start()
    try:
        assert server.identity == (f"{server.identity_name} on /v1/models; port {port} listened "
                                   f"on by its process tree (pid {server.pid})")
        record = json.loads((tmp_path / "servers" / "st_3-s1.json").read_text())
        assert record["identity"] == server.identity
    finally:
        await server.stop()


async def test_a_server_bound_to_the_port_while_ours_loads_fails_the_start_naming_it(
        tmp_path: Path, port: int):
    """The issue's first case: a K=7 simulator started on the port while ours (K=3) loads
    answered every readiness check, and 9/9 cells were saved ok with its numbers."""
    server, events = _sim_server(tmp_path, port, "--startup-delay", "8")
    starting = asyncio.create_task(server.start())
    while server.pid is None:
        await asyncio.sleep(0.05)
    with running_sim(port=port, spec_tokens=7, wait=False) as other:
        t0 = time.monotonic()
        with pytest.raises(ServerError) as caught:
            await asyncio.wait_for(starting, 20)
        assert time.monotonic() - t0 < 8  # not our server's startup: the foreign one's answer
        reason = caught.value.reason
        assert "\n" not in reason
        assert reason.startswith(f"port {port} on 127.0.0.1 answers, but not from this "
                                 "session's server")
        assert f"held by pid {other.pid} (" in reason and "dspark_tui.sim serve" in reason
        assert other.proc.poll() is None  # the foreign server is not ours to stop
    assert server.exit_code() is not None  # ours was stopped with the failed start
    assert events.of("server_state")[-1].state == "failed"


def _results(root: Path) -> Path:
    (run_dir,) = [p for p in root.iterdir() if p.is_dir()]
    return run_dir


def test_two_runs_on_one_fixed_port_never_measure_each_others_server(tmp_path: Path, port: int):
    """The issue's second case: two users' runs on one port. Both pass preflight while the
    port is still closed; A's server binds first. B must fail its start naming A's server and
    save no ok cell; A measures its own server only, and each cell says what proved it."""
    procs = {}
    for name, delay, arm in (("a", "3", 3), ("b", "10", 5)):
        folder = tmp_path / name
        folder.mkdir()
        plan = folder / "plan.toml"
        plan.write_text(sim_plan_text(port, "--startup-delay", delay, arms=(arm,), warmup=1))
        procs[name] = subprocess.Popen(
            [*CLI, "run", str(plan), "--headless", "--results", str(folder / "results")],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=cli_env(), text=True, start_new_session=True)
    try:
        outs = {name: proc.communicate(timeout=90)[0] for name, proc in procs.items()}
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                stop_process_group(proc)  # type: ignore[arg-type]
    run_a, run_b = _results(tmp_path / "a" / "results"), _results(tmp_path / "b" / "results")
    assert procs["a"].returncode == 0, outs["a"]
    assert procs["b"].returncode != 0, outs["b"]
    (a_record,) = [json.loads(p.read_text()) for p in (run_a / "servers").glob("*-s1.json")]
    assert f"held by pid {a_record['pid']} (" in outs["b"], outs["b"]
    assert "answers, but not from this session's server" in outs["b"]
    assert not [c for c in load_run(run_b).measurements if c.ok]
    cells = load_run(run_a).measurements
    assert cells and all(c.ok for c in cells)
    assert {c.provenance.server_identity for c in cells} == {a_record["identity"]}
    assert a_record["identity"].startswith(IDENTITY_PREFIX + a_record["token"][:16])


FAKE_CONTAINER = Path(__file__).resolve().parent.parent / "fakes" / "fake_container.py"


def _container_server(tmp_path: Path, port: int, inner: int,
                      session_name: bool | None) -> ServerProcess:
    """A simulator served as from a container: the published port is a proxy's, and neither
    the proxy nor the server is in the session's process tree (tests/fakes/fake_container.py)."""
    data = tomllib.loads(sim_plan_text(port, arms=(3,)))
    sim = data["server"]["command"]
    assert sim[1:4] == ["-m", "dspark_tui.sim", "serve"]  # the image's entrypoint
    args = [str(inner) if arg == "{port}" else arg for arg in sim[4:]]
    data["server"]["command"] = ["{python}", str(FAKE_CONTAINER), "run", "-p", f"{port}:{inner}",
                                 "sim", *args]
    if session_name is not None:
        data["server"]["session_name"] = session_name
    plan = Plan.model_validate(data)
    return ServerProcess(plan, plan.arms[0], log_path=tmp_path / "logs" / "server-st_3-s1.log",
                         run_dir=tmp_path, emit=Recorder(), session="s1")


def _serving_on(inner: int) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        with contextlib.suppress(psutil.Error):
            if f"{FAKE_CONTAINER}" not in (proc.info["cmdline"] or []) and \
                    str(inner) in (proc.info["cmdline"] or []):
                found.append(proc)
    return found


async def test_a_server_in_a_container_proves_itself_by_name_behind_the_runtimes_proxy(
        tmp_path: Path, port: int):
    # Before server.session_name, a container's port (held by docker-proxy, outside the tree)
    # failed every start: the socket was the only proof of a command not known to take a name.
    inner = free_port()
    server = _container_server(tmp_path, port, inner, session_name=True)
    assert server.identity_name is not None
    assert server.argv[-3:] == ["--served-model-name", server.identity_name, "test-model"]
    await server.start()
    try:
        assert server.identity == (f"{server.identity_name} on /v1/models; port {port} held "
                                   "outside its process tree (a proxy to it)")
        inside = _serving_on(inner)
        assert inside  # the container's server, outside the tree
    finally:
        await server.stop()
    assert not any(proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
                   for proc in inside)


async def test_a_server_in_a_container_without_a_name_is_refused_with_the_way_out(
        tmp_path: Path, port: int):
    inner = free_port()
    server = _container_server(tmp_path, port, inner, session_name=None)
    assert server.identity_name is None  # a wrapper: not known to take --served-model-name
    with pytest.raises(ServerError) as caught:
        await asyncio.wait_for(server.start(), 30)
    reason = caught.value.reason
    assert "\n" not in reason
    assert reason.startswith(f"port {port} on 127.0.0.1 answers, but not from this session's "
                             "server")
    assert reason.endswith("server.session_name = true)")
    assert server.exit_code() is not None
