"""A run directory is data, never code nor a kill list (issue 25, items 2 and 3).

A resume runs `scancel`/`kubectl` from PATH with only the ids a record holds, and only for the
plan's own launcher; it signals a recorded pid only when the process carries the run's token;
and a resume refused before its runner starts stops what the killed runner left first."""

from __future__ import annotations

import concurrent.futures
import json
import os
import signal
import subprocess
import tomllib
from pathlib import Path

import psutil
import pytest

from dspark_tui.engine.checks.preflight import check_bench_secrets
from dspark_tui.engine.servers.launchers import stop_orphaned_launch
from dspark_tui.engine.servers.ports import port_is_free
from dspark_tui.engine.servers.procs import TOKEN_VAR
from dspark_tui.engine.servers.server_record import ServerRecord, stop_orphaned_server, write_record
from dspark_tui.model import Plan
from tests.cli import hold_paused, run_cli, slow_cells, wait_for
from tests.engine.helpers import sim_plan_text

POD = "pod/dspark-st-3-s1-0123abcd"
TOKEN = "0123456789abcdef0123456789abcdef"


def _recording_tools(folder: Path) -> Path:
    """`kubectl` and `scancel` on PATH that only write down how they were called."""
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    for tool in ("kubectl", "scancel"):
        script = bin_dir / tool
        script.write_text(f'#!/bin/sh\necho "{tool} $*" >> "{folder}/calls.txt"\n')
        script.chmod(0o755)
    return bin_dir


def _calls(folder: Path) -> list[str]:
    path = folder / "calls.txt"
    return path.read_text().splitlines() if path.exists() else []


def _crafted_launch_records(run_dir: Path, mark: Path) -> None:
    """A launcher.json whose `kubectl` is a shell, a session copy whose job name is a command,
    and one naming a pod this tool never makes."""
    (run_dir / "servers").mkdir(parents=True)
    (run_dir / "launcher.json").write_text(json.dumps({
        "launcher": "kubernetes", "arm": "st=3", "session": "s1", "state": "running",
        "kubectl": ["sh", "-c", f"touch {mark}; exit 0", "sh"], "objects": [POD]}))
    (run_dir / "servers" / "st_3-s2.launcher.json").write_text(json.dumps({
        "launcher": "slurm", "arm": "st=3", "session": "s2", "state": "running",
        "job_name": f"x; touch {mark}", "job_id": "12; touch {mark}"}))
    (run_dir / "servers" / "st_3-s3.launcher.json").write_text(json.dumps({
        "launcher": "kubernetes", "arm": "st=3", "session": "s3", "state": "running",
        "namespace": "--kubeconfig=/tmp/evil", "objects": ["deployment/production-db"]}))


def test_a_crafted_launcher_record_runs_no_program_it_names(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    bin_dir = _recording_tools(tmp_path)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    run_dir, mark = tmp_path / "run", tmp_path / "MARK"
    _crafted_launch_records(run_dir, mark)

    said = stop_orphaned_launch(run_dir, "kubernetes")
    assert not mark.exists()
    # kubectl from PATH, given the pod (the only value taken from the record) and nothing else.
    assert _calls(tmp_path) == [f"kubectl delete {POD} --ignore-not-found --wait=true "
                                "--timeout=120s"]
    assert said is not None
    assert f"deleted {POD}" in said
    assert "st_3-s3.launcher.json: namespace '--kubeconfig=/tmp/evil' is not what the tool " \
           "writes there, left alone" in said
    assert "st_3-s2.launcher.json: job_name 'x; touch" in said


def test_records_of_another_launcher_than_the_plans_are_left_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    bin_dir = _recording_tools(tmp_path)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    run_dir = tmp_path / "run"
    (run_dir / "servers").mkdir(parents=True)
    (run_dir / "launcher.json").write_text(json.dumps({
        "launcher": "kubernetes", "arm": "st=3", "session": "s1", "state": "running",
        "namespace": "bench", "objects": [POD]}))
    said = stop_orphaned_launch(run_dir, "local")
    assert _calls(tmp_path) == []
    assert said == "kubernetes record of st=3 left alone: the plan's launcher is local"
    # The plan's own launcher: kubectl from PATH with the record's namespace.
    stop_orphaned_launch(run_dir, "kubernetes")
    assert _calls(tmp_path) == [f"kubectl --namespace=bench delete {POD} --ignore-not-found "
                                "--wait=true --timeout=120s"]


def _stranger(**env: str) -> subprocess.Popen[bytes]:
    """A process of this user that no run started: the kind a crafted record would aim at."""
    return subprocess.Popen(["sleep", "60"], env={**os.environ, **env}, start_new_session=True)


def test_a_crafted_server_record_signals_no_process_without_the_runs_token(tmp_path: Path):
    strangers = [_stranger(), _stranger(**{TOKEN_VAR: "another-runs-token-0123456789"})]
    try:
        for index, victim in enumerate(strangers):
            created = psutil.Process(victim.pid).create_time()  # as /proc/PID/stat tells anyone
            write_record(tmp_path, ServerRecord(
                arm="a", pid=victim.pid, pgid=victim.pid, create_time=created, token=TOKEN,
                host="127.0.0.1", port=1, session=f"s{index + 1}", state="running"))
        assert stop_orphaned_server(tmp_path, grace_s=1.0) == []
        for victim in strangers:
            assert victim.poll() is None, "a process without the run's token was signalled"
    finally:
        for victim in strangers:
            victim.kill()
            victim.wait()
    # The control: the same record, and the process carries the token: it is stopped.
    ours = _stranger(**{TOKEN_VAR: TOKEN})
    try:
        write_record(tmp_path, ServerRecord(
            arm="a", pid=ours.pid, pgid=ours.pid, create_time=psutil.Process(ours.pid).create_time(),
            token=TOKEN, host="127.0.0.1", port=1, session="s9", state="running"))
        assert stop_orphaned_server(tmp_path, grace_s=1.0) == [ours.pid]
        ours.wait(5)  # (reaped by the stop itself, so its code says nothing)
        assert _gone(ours.pid)
    finally:
        if ours.poll() is None:
            ours.kill()
            ours.wait()


def test_a_secret_in_extra_args_is_refused_when_the_plan_starts():
    text = sim_plan_text(8000, arms=(3,)).replace(
        'driver = "native"', 'driver = "native"\nextra_args = ["--header", '
        '"Authorization=Bearer sk-extra-args-0006"]')
    plan = Plan.model_validate(tomllib.loads(text))
    (problem,) = check_bench_secrets(plan)
    assert "bench.extra_args holds a secret" in problem.message
    assert "sk-extra" not in problem.message
    harmless = plan.model_copy(update={"bench": plan.bench.model_copy(
        update={"extra_args": ["--disable-tqdm"]})})
    assert check_bench_secrets(harmless) == []


def _server_pids(run_dir: Path) -> list[int]:
    record = json.loads((run_dir / "server.json").read_text())
    return [record["pid"], *(d["pid"] for d in record["descendants"])]


def _gone(pid: int) -> bool:
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_a_refused_resume_stops_the_orphaned_server_and_trusts_no_crafted_record(
        tmp_path: Path, port: int):
    """A run whose server needs a secret variable, its runner killed with -9 while it runs: the
    resume without the variable is refused — and the server it left is stopped first. The
    crafted records planted meanwhile run nothing and signal nothing."""
    text = sim_plan_text(port, "--spawn-workers", "1", arms=(3,), speed=2, warmup=0,
                         cells=slow_cells())
    text = text.replace("\n[[arms]]", '\n[server.env]\nSIM_API_TOKEN = "sk-secret-var-0001"\n'
                        "\n[[arms]]", 1)
    plan = tmp_path / "plan.toml"
    plan.write_text(text)
    done = run_cli("run", str(plan), "--detach", "--results", str(tmp_path / "results"))
    assert done.returncode == 0, done.stderr
    run_dir = Path(done.stdout.strip().splitlines()[0])
    stranger = _stranger()
    mark = tmp_path / "MARK"
    try:
        wait_for(lambda: (run_dir / "events.jsonl").exists()
                 and "cell_started" in (run_dir / "events.jsonl").read_text(),
                 timeout=60, what="the first cell")
        # Killed while held paused after a cell, its server up: left going, the run's last
        # 3-4 s were the window, and a kill 4 s late (a loaded box) found the server stopped.
        hold_paused(run_dir)
        # the record names the server's worker once the runner has seen it (not always by the
        # first cell's start on a loaded box)
        wait_for(lambda: len(_server_pids(run_dir)) == 2, timeout=30, what="the worker recorded")
        runner_pid = json.loads((run_dir / "run.json").read_text())["runner_pid"]
        os.kill(runner_pid, signal.SIGKILL)
        wait_for(lambda: _gone(runner_pid), what="the runner to die")
        pids = _server_pids(run_dir)
        assert len(pids) == 2 and not any(map(_gone, pids))
        # Planted: a kubectl that is a shell, and a record of the stranger's pid and start time.
        (run_dir / "launcher.json").write_text(json.dumps({
            "launcher": "kubernetes", "arm": "st=3", "state": "running",
            "kubectl": ["sh", "-c", f"touch {mark}; exit 0", "sh"], "objects": [POD]}))
        (run_dir / "servers" / "zz-s9.json").write_text(ServerRecord(
            arm="zz", pid=stranger.pid, pgid=stranger.pid, token=TOKEN, host="127.0.0.1",
            port=port, create_time=psutil.Process(stranger.pid).create_time(),
            session="s9").model_dump_json())

        assert "SIM_API_TOKEN" not in os.environ
        refused = run_cli("run", "--resume", str(run_dir), "--headless")
        assert refused.returncode == 2, refused.stdout + refused.stderr
        (line,) = [line for line in refused.stderr.splitlines() if "error:" in line]
        assert "export SIM_API_TOKEN to resume this run" in line
        stopped = line.split("stopped the server the previous runner left (pids ")[1].split(")")[0]
        assert set(pids) <= set(map(int, stopped.split(", ")))  # the relay too
        assert str(stranger.pid) not in stopped
        assert "kubernetes record of st=3 left alone: the plan's launcher is local" in line
        assert all(map(_gone, pids))
        assert port_is_free("127.0.0.1", port)
        assert not mark.exists()
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()
        stop_orphaned_server(run_dir)


def test_a_fifo_or_dev_zero_launcher_record_is_left_alone_at_once(tmp_path: Path):
    # launcher.json and a session's copy are read like every run file: a FIFO would block the
    # resume forever, a link to /dev/zero would fill memory; both are named and left alone.
    run_dir = tmp_path / "run"
    (run_dir / "servers").mkdir(parents=True)
    os.mkfifo(run_dir / "launcher.json")
    (run_dir / "servers" / "st_3-s1.launcher.json").symlink_to("/dev/zero")
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        said = pool.submit(stop_orphaned_launch, run_dir, "slurm").result(timeout=30)
    assert said is not None
    assert "launcher.json: unreadable (not a regular file (a FIFO)), left alone" in said
    assert "st_3-s1.launcher.json: unreadable (a symlink, not followed), left alone" in said
