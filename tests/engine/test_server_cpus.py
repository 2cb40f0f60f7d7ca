"""`[server] cpus`: the started server's whole process tree on the plan's CPUs, the runner's
client on the rest, and one line for a plan that cannot be pinned (model/cpus.py,
engine/servers/cpus.py). Real processes: the affinity is read from /proc of the server, of a
child it started, and of the runner's own threads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from dspark_tui.engine.servers.cpus import plan_split
from dspark_tui.engine.servers.server import ServerError, ServerProcess
from dspark_tui.engine.servers.server_record import read_record
from dspark_tui.model import PlanError, UserError, parse_plan
from dspark_tui.model.client_health import ClientHealth
from dspark_tui.model.cpus import cpu_list
from dspark_tui.model.events import Event
from tests.cli import cli_env, run_cli, run_cli_here
from tests.engine.helpers import Recorder, fake_server_plan, sim_plan_text, sim_runner

AFFINITY = hasattr(os, "sched_getaffinity") and hasattr(os, "sched_setaffinity")
ALLOWED = sorted(os.sched_getaffinity(0)) if AFFINITY else []
two_cpus = pytest.mark.skipif(len(ALLOWED) < 2, reason="pinning needs 2 CPUs this process may "
                              f"use (it may use {len(ALLOWED)}) and Linux's sched_setaffinity")


def _allowed_list(pid: int, tid: int | None = None) -> str:
    """Linux's own word for a process's (or thread's) CPUs, as /proc says it."""
    status = Path(f"/proc/{pid}/task/{tid}/status" if tid else f"/proc/{pid}/status").read_text()
    return next(line.split(":", 1)[1].strip() for line in status.splitlines()
                if line.startswith("Cpus_allowed_list:"))


def _threads_of_this_process() -> dict[int, str]:
    pid = os.getpid()
    tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    found = {}
    for tid in tids:
        try:
            found[tid] = _allowed_list(pid, tid)
        except OSError:  # a thread that ended meanwhile
            continue
    return found


@two_cpus
async def test_the_servers_whole_tree_runs_on_the_plans_cpus(tmp_path: Path, port: int):
    last = ALLOWED[-1]
    plan = fake_server_plan(port, "--spawn-workers", "2", cpus=[last])
    events = Recorder()
    server = ServerProcess(plan, plan.arms[0], log_path=tmp_path / "logs" / "s.log",
                           run_dir=tmp_path, emit=events)
    before = os.sched_getaffinity(0)
    await server.start()
    try:
        assert os.sched_getaffinity(0) == before  # the spawning thread got its own mask back
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(read_record(tmp_path).descendants) < 2:
            await server.probe_health()
            time.sleep(0.2)
        record = read_record(tmp_path)
        assert server.pid is not None and len(record.descendants) >= 2
        assert _allowed_list(server.pid) == str(last)
        # the workers the server started itself inherited the server's CPUs
        assert {_allowed_list(child.pid) for child in record.descendants} == {str(last)}
        loading = next(e for e in events.of("server_state") if e.state == "loading")
        assert loading.message.endswith(f"its process tree on CPU {last}")
    finally:
        await server.stop()


@two_cpus
async def test_the_runner_keeps_its_client_off_the_servers_cpus(tmp_path: Path, port: int):
    last = ALLOWED[-1]
    rest = [cpu for cpu in ALLOWED if cpu != last]
    runner, events = sim_runner(tmp_path, port, "--spawn-workers", "1", arms=(3,), cpus=f"[{last}]")
    seen: dict[str, object] = {}

    def on_ready(event: Event) -> None:
        """While the server serves: its tree's CPUs and those of the runner's threads."""
        if event.kind == "server_state" and event.state == "ready" and "server" not in seen:
            seen["server"] = _allowed_list(event.pid)
            children = psutil.Process(event.pid).children(recursive=True)
            seen["children"] = {_allowed_list(child.pid) for child in children} or None
            seen["runner"] = set(_threads_of_this_process().values())

    runner.subscribe(on_ready)
    before = os.sched_getaffinity(0)
    assert await runner.run() == "completed"
    assert os.sched_getaffinity(0) == before  # put back when the run ended
    assert seen["server"] == str(last)
    assert seen["children"] == {str(last)}
    assert seen["runner"] == {cpu_list(rest)}
    notice = next(n.message for n in events.of("notice") if n.message.startswith("server.cpus"))
    assert f"server on CPU {last}, client on CPU {cpu_list(rest)}" in notice
    cells = list((runner.store.path / "cells").rglob("*.json"))
    assert cells
    for path in cells:
        assert json.loads(path.read_text())["client"]["cpus"] == rest
    snapshot = json.loads((runner.store.path / "run.json").read_text())["plan"]["server"]
    assert snapshot["cpus"] == [last]
    report = (runner.store.path / "report.en.md").read_text()
    assert (f"- CPUs: the server's whole process tree pinned to CPU {last} (server.cpus); the "
            f"benchmark client ran on CPU {cpu_list(rest)}") in report


def test_a_run_without_the_key_records_as_before(port: int):
    """Optional fields only: a plan without `cpus` snapshots without it, a measurement's client
    health without `cpus`, so old runs and their goldens read the same."""
    plan = parse_plan(sim_plan_text(port), "plan.toml")
    assert plan.server.cpus is None
    assert "cpus" not in plan.model_dump()["server"]
    assert "cpus" not in ClientHealth().model_dump()
    assert ClientHealth.model_validate({"gaps": 3}).cpus is None
    assert plan_split(plan) is None


@pytest.mark.parametrize(("cpus", "words"), [
    ("[-1]", "plan.toml:{line}: server.cpus: CPU ids are 0 or more"),
    ("[1, 1]", "plan.toml:{line}: server.cpus: a CPU id repeats"),
    ("[]", "plan.toml:{line}: server.cpus: List should have at least 1 item"),
    ('[1]\nlauncher = "slurm"', "plan.toml:{line}: server.cpus pins a server started on this "
     "machine; with server.launcher = 'slurm' it runs on a node: ask the cluster instead "
     "(srun's --cpu-bind in [server.slurm] extra_args)"),
    ('[1]\nlauncher = "kubernetes"', "plan.toml:{line}: server.cpus pins a server started on "
     "this machine; with server.launcher = 'kubernetes' it runs on a node"),
])
def test_a_plan_that_cannot_pin_is_refused_in_one_line(port: int, cpus: str, words: str):
    text = sim_plan_text(port, cpus=cpus)
    line = 1 + next(i for i, text_line in enumerate(text.splitlines())
                    if text_line.startswith("cpus ="))
    with pytest.raises(PlanError) as caught:
        parse_plan(text, "plan.toml")
    assert len(str(caught.value).splitlines()) == 1
    assert str(caught.value).startswith(words.format(line=line))


def test_every_arm_a_url_has_nothing_to_pin():
    text = """name = "p"
model = "m"
[server]
cpus = [0]
[[arms]]
name = "a"
url = "http://127.0.0.1:9"
[[scenarios]]
name = "s"
input_len = 1
output_len = 1
concurrencies = [1]
"""
    with pytest.raises(PlanError, match=r"^plan.toml:4: server.cpus pins the servers this tool "
                       "starts, but every arm gives a url$"):
        parse_plan(text, "plan.toml")


@pytest.mark.skipif(not AFFINITY, reason="Linux's sched_getaffinity")
def test_cpus_this_machine_lacks_or_that_leave_the_client_none(port: int):
    allowed = frozenset(ALLOWED)
    beyond = max(ALLOWED) + 1
    plan = parse_plan(sim_plan_text(port, cpus=f"[{beyond}]"), "plan.toml")
    with pytest.raises(UserError) as caught:
        plan_split(plan, "plan.toml", allowed)
    assert str(caught.value) == (f"plan.toml: server.cpus = [{beyond}]: CPU {beyond} is not among "
                                 f"the CPUs this process may use here ({cpu_list(allowed)}); name "
                                 "CPUs from that set")
    every = ", ".join(map(str, ALLOWED))
    plan = parse_plan(sim_plan_text(port, cpus=f"[{every}]"), "plan.toml")
    with pytest.raises(UserError, match=r"^plan.toml: server.cpus = \[.*\]: leaves the benchmark "
                       r"client no CPU \(this process may use .*\); leave at least one"):
        plan_split(plan, "plan.toml", allowed)
    # the same arithmetic on another machine's CPUs: 2 and 3 of 0-3
    split = plan_split(parse_plan(sim_plan_text(port, cpus="[2, 3]"), "p"), "p",
                       frozenset(range(4)))
    assert split is not None and split.said() == "server on CPU 2-3, client on CPU 0-1"


@pytest.mark.skipif(not AFFINITY, reason="Linux's sched_getaffinity")
def test_plan_check_and_a_run_name_the_file_and_the_key(tmp_path: Path, port: int):
    beyond = max(ALLOWED) + 1
    plan = tmp_path / "pinned.toml"
    plan.write_text(sim_plan_text(port, cpus=f"[{beyond}]"))
    expected = (f"dspark-tui: error: {plan}: server.cpus = [{beyond}]: CPU {beyond} is not among "
                f"the CPUs this process may use here ({cpu_list(ALLOWED)})")
    for args in (("plan", "check", str(plan)),
                 ("run", str(plan), "--headless", "--results", str(tmp_path / "results"))):
        done = run_cli_here(*args)
        assert done.returncode == 2, done.stdout + done.stderr
        errors = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(errors) == 1 and errors[0].startswith(expected), done.stderr
    assert not (tmp_path / "results").exists() or not list((tmp_path / "results").iterdir())


@pytest.mark.skipif(not AFFINITY, reason="Linux's sched_getaffinity")
async def test_a_runner_on_a_machine_without_the_cpus_fails_before_any_server(tmp_path: Path,
                                                                              port: int):
    """What a resume on another machine meets: the runner's own preflight names run.json (its
    plan is the run's snapshot), and nothing starts."""
    beyond = max(ALLOWED) + 1
    runner, events = sim_runner(tmp_path, port, arms=(3,), cpus=f"[{beyond}]")
    before = os.sched_getaffinity(0)
    assert await runner.run() == "failed"
    assert os.sched_getaffinity(0) == before
    errors = [n.message for n in events.of("notice") if n.level == "error"]
    assert errors == [f"{runner.store.path / 'run.json'}: server.cpus = [{beyond}]: CPU {beyond} "
                      f"is not among the CPUs this process may use here ({cpu_list(ALLOWED)}); "
                      "name CPUs from that set"]
    assert not events.of("server_state")


def test_a_platform_without_affinity_is_refused(tmp_path: Path, port: int):
    """macOS and Windows have no sched_setaffinity: a process whose `os` lacks it (deleted
    before the tool loads, the only way to be such a platform on Linux) refuses in one line."""
    plan = tmp_path / "pinned.toml"
    plan.write_text(sim_plan_text(port, cpus="[1]"))
    program = ("import os, sys\n"
               "for name in ('sched_setaffinity', 'sched_getaffinity'):\n"
               "    if hasattr(os, name): delattr(os, name)\n"
               "from dspark_tui.cli import main\n"
               "sys.exit(main(['plan', 'check', sys.argv[1]]))\n")
    done = subprocess.run([sys.executable, "-c", program, str(plan)], capture_output=True,
                          text=True, env=cli_env(), timeout=60, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip() == (f"dspark-tui: error: {plan}: server.cpus = [1]: pinning needs "
                                   f"Linux's sched_setaffinity, which this platform "
                                   f"({sys.platform}) lacks; remove the key")


@pytest.mark.skipif(not AFFINITY, reason="Linux's sched_getaffinity")
async def test_a_server_asked_onto_a_cpu_it_cannot_have_fails_its_start_in_one_line(
        tmp_path: Path, port: int):
    """Past the preflight (a ServerProcess used on its own): the start fails, nothing runs."""
    beyond = max(ALLOWED) + 1
    plan = fake_server_plan(port, cpus=[beyond])
    server = ServerProcess(plan, plan.arms[0], log_path=tmp_path / "logs" / "s.log",
                           run_dir=tmp_path, emit=Recorder())
    before = os.sched_getaffinity(0)
    with pytest.raises(ServerError) as caught:
        await server.start()
    assert os.sched_getaffinity(0) == before
    assert str(caught.value) == (f"server.cpus = [{beyond}]: cannot pin the server there: Invalid "
                                 f"argument (this thread may use {cpu_list(ALLOWED)})")
    assert server.pid is None
    assert read_record(tmp_path).state == "stopped"


@two_cpus
def test_vllms_omp_binding_outside_the_servers_cpus_is_refused(tmp_path: Path, port: int):
    """vLLM's CPU worker sets its threads' affinity from VLLM_CPU_OMP_THREADS_BIND, and a process
    may widen its own: ids outside server.cpus would move the worker off them."""
    first, last = ALLOWED[0], ALLOWED[-1]
    plan = tmp_path / "pinned.toml"
    text = sim_plan_text(port, cpus=f"[{last}]")
    plan.write_text(text + f'\n[server.env]\nVLLM_CPU_OMP_THREADS_BIND = "{first}"\n')
    done = run_cli_here("plan", "check", str(plan), "--preflight")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip() == (
        f"dspark-tui: error: {plan}: server.env.VLLM_CPU_OMP_THREADS_BIND = '{first}' binds "
        f"vLLM's worker to CPU {first}, outside server.cpus = [{last}] (a process may widen its "
        "own affinity): name CPUs of server.cpus in both")
    for same in (str(last), "auto", "nobind"):
        plan.write_text(text + f'\n[server.env]\nVLLM_CPU_OMP_THREADS_BIND = "{same}"\n')
        done = run_cli_here("plan", "check", str(plan), "--preflight")
        assert "VLLM_CPU_OMP_THREADS_BIND" not in done.stderr + done.stdout, done.stderr
    # A value this check cannot read is said, not passed over in silence (review)
    plan.write_text(text + '\n[server.env]\nVLLM_CPU_OMP_THREADS_BIND = "0:3"\n')
    done = run_cli_here("plan", "check", str(plan), "--preflight")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (f"preflight: warning: {plan}: server.env.VLLM_CPU_OMP_THREADS_BIND = '0:3' is not a "
            "CPU list this check reads (ids such as 0-3 or 0-3|4-7, or auto / nobind): whether "
            "vLLM's worker stays on server.cpus is not checked") in done.stdout.splitlines()
    # Set in the shell, not the plan: the server inherits it all the same (review)
    plan.write_text(text)
    done = run_cli("plan", "check", str(plan), "--preflight",
                   env={"VLLM_CPU_OMP_THREADS_BIND": str(first)})
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip() == (
        f"dspark-tui: error: {plan}: VLLM_CPU_OMP_THREADS_BIND (this shell's environment) = "
        f"'{first}' binds vLLM's worker to CPU {first}, outside server.cpus = [{last}] (a process "
        "may widen its own affinity): name CPUs of server.cpus in both")
