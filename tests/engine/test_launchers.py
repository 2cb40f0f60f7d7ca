"""The Slurm and Kubernetes launchers against fake `srun`/`squeue`/`scancel`/`scontrol` and
`kubectl` (tests/fakes), which run the simulator on this machine as the cluster's "node": a run
through each completes, and after kill -9 of the runner a resume cancels the job or deletes
the pod it left — its simulator is gone — and nothing is left running."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import psutil
import pytest
import yaml

from dspark_tui.engine.launch import RunnerProcess
from dspark_tui.engine.launchers import launcher_problems
from dspark_tui.engine.launchers.kubernetes import pod_name, read_template, render_manifest
from dspark_tui.engine.launchers.slurm import srun_argv
from dspark_tui.engine.server import ServerError
from dspark_tui.model import PlanError, parse_plan
from dspark_tui.results import RunStore, load_run
from tests.cli import run_cli, slow_cells, wait_for
from tests.engine.helpers import FAKES, sim_plan_text

SLURM_TOOLS = ("srun", "squeue", "scancel", "scontrol")
SLURM_TABLE = """
[server.slurm]
partition = "gpu"
gres = "gpu:8"
time = "00:30:00"
account = "bench"
extra_args = ["--exclusive"]
"""
KUBE_TABLE = """
[server.kubernetes]
namespace = "bench"
image = "vllm/vllm-openai:v0.33.0"
gpus = 8
context = "lab"
"""


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake tools first on PATH (small wrapper scripts, as the real tools are programs),
    their state under tmp_path; RunnerProcess and the CLI inherit this environment."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in (*SLURM_TOOLS, "kubectl"):
        script = FAKES / ("fake_kubectl.py" if tool == "kubectl" else "fake_slurm.py")
        wrapper = bin_dir / tool
        wrapper.write_text(f'#!/bin/sh\nFAKE_SLURM_TOOL={tool} exec "{sys.executable}" '
                           f'"{script}" "$@"\n')
        wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SLURM_DIR", str(tmp_path / "slurm"))
    monkeypatch.setenv("FAKE_KUBE_DIR", str(tmp_path / "kube"))
    monkeypatch.setenv("DSPARK_CONFIG_DIR", "/nonexistent-dspark-config")
    return tmp_path


def _plan(folder: Path, port: int, launcher: str, *sim_flags: str, **kwargs: object) -> Path:
    table = SLURM_TABLE if launcher == "slurm" else KUBE_TABLE
    text = sim_plan_text(port, *sim_flags, warmup=0, launcher=f'"{launcher}"',
                         **kwargs) + table  # type: ignore[arg-type]
    path = folder / "plan.toml"
    path.write_text(text)
    return path


def _jobs(root: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((root / "slurm" / "jobs").glob("*.json"))]


def _pods(root: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text())
            for p in sorted((root / "kube" / "bench" / "pods").glob("*.json"))}


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _record(run_dir: Path) -> dict:
    return json.loads((run_dir / "launcher.json").read_text())


# -- through each launcher, a run completes ------------------------------------------------------

def test_a_run_through_slurm_completes_and_cancels_each_job(cluster: Path, port: int,
                                                           monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("FAKE_SLURM_PENDING_S", "1")  # each job waits in the queue first
    plan = _plan(cluster, port, "slurm", arms=(3, 5))
    done = run_cli("run", str(plan), "--headless", "--results", str(cluster / "results"),
                   "--lang", "en", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    (run_dir,) = list((cluster / "results").iterdir())
    assert len(load_run(run_dir).ok_cells()) == 4
    jobs = _jobs(cluster)
    # One job a session, asked for with the plan's options, ended by scancel at its stop.
    assert [job["state"] for job in jobs] == ["CANCELLED", "CANCELLED"]
    assert {(j["partition"], j["gres"], j["time"], j["account"]) for j in jobs} == {
        ("gpu", "gpu:8", "00:30:00", "bench")}
    assert all(_gone(job["pid"]) for job in jobs)
    assert _record(run_dir)["state"] == "stopped"
    evidence = json.loads((run_dir / "servers" / "st_5-s2.launcher.json").read_text())
    assert evidence["job_id"] == jobs[1]["id"] and evidence["node"] == "127.0.0.1"
    # The server's output came back through srun into the session's log.
    log = (run_dir / "logs" / "server-st_3-s1.log").read_text()
    assert "queued and waiting for resources" in log and "Starting vLLM API server" in log
    lines = [e.line for e in RunStore(run_dir).read_events() if e.kind == "server_log"]
    assert f"Slurm job {jobs[0]['id']} runs on 127.0.0.1" in lines


def test_a_run_through_kubernetes_completes_and_deletes_each_pod(cluster: Path, port: int):
    plan = _plan(cluster, port, "kubernetes", arms=(3, 5))
    done = run_cli("run", str(plan), "--headless", "--results", str(cluster / "results"),
                   "--lang", "en", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    (run_dir,) = list((cluster / "results").iterdir())
    assert len(load_run(run_dir).ok_cells()) == 4
    assert _pods(cluster) == {}  # both pods deleted at their stops, their Services too
    assert not list((cluster / "kube" / "bench" / "services").glob("*.json"))
    record = _record(run_dir)
    assert record["state"] == "stopped"
    assert record["kubectl"] == ["kubectl", "--context=lab", "--namespace=bench"]
    log = (run_dir / "logs" / "server-st_5-s2.log").read_text()
    assert "Starting vLLM API server" in log  # through `kubectl logs -f`
    lines = [e.line for e in RunStore(run_dir).read_events() if e.kind == "server_log"]
    assert any(line.startswith("pod/dspark-st-3-s1-") and line.endswith(" created")
               for line in lines)
    # The bench client reached the pod through the port-forward the tool owned, not the port.
    forwards = (run_dir / "logs" / "server-st_3-s1.port-forward.log").read_text()
    assert f"-> {port}" in forwards and f"127.0.0.1:{port} " not in forwards


@pytest.mark.parametrize("launcher", ["slurm", "kubernetes"])
def test_a_server_that_fails_to_start_is_told_and_its_job_or_pod_is_ended(
        cluster: Path, port: int, launcher: str):
    plan = _plan(cluster, port, launcher, "--fail-start", arms=(3,))
    done = run_cli("run", str(plan), "--headless", "--results", str(cluster / "results"),
                   "--lang", "en", timeout=120)
    assert done.returncode != 0
    assert "server exited with code 1 while starting" in done.stdout, done.stdout
    (run_dir,) = list((cluster / "results").iterdir())
    assert _record(run_dir)["state"] == "stopped"
    if launcher == "slurm":
        (job,) = _jobs(cluster)
        assert job["state"] == "FAILED" and _gone(job["pid"])
    else:
        assert _pods(cluster) == {}


# -- kill -9 of the runner, then resume -----------------------------------------------------------

def _kill_runner_mid_cell(plan: Path, cluster: Path) -> tuple[RunnerProcess, Path]:
    runner = RunnerProcess.start(str(plan), results_root=cluster / "results", detach=True)
    run_dir = runner.run_dir
    wait_for(lambda: [e for e in RunStore(run_dir).read_events() if e.kind == "cell_started"],
             timeout=60, what="a cell in flight")
    os.kill(runner.pid, signal.SIGKILL)
    runner.wait(5)
    return runner, run_dir


def test_resume_after_kill_9_cancels_the_slurm_job_left_behind(cluster: Path, port: int):
    plan = _plan(cluster, port, "slurm", arms=(3,), speed=2, cells=slow_cells((1, 2, 3)))
    runner, run_dir = _kill_runner_mid_cell(plan, cluster)
    try:
        (job,) = _jobs(cluster)
        assert job["state"] == "RUNNING" and _record(run_dir)["job_id"] == job["id"]
        assert not _gone(job["pid"])  # the job outlives its runner, as on a cluster
        resumed = run_cli("run", "--resume", str(run_dir), "--headless", "--lang", "en",
                          timeout=120)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert f"cancelled Slurm job {job['id']}, left by the previous runner" in resumed.stdout
        assert _gone(job["pid"])
        first, second = _jobs(cluster)
        assert first["state"] == "CANCELLED" and second["state"] == "CANCELLED"
        assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"
    finally:
        runner.stop(timeout=5)


def test_resume_after_kill_9_deletes_the_pod_left_behind(cluster: Path, port: int):
    plan = _plan(cluster, port, "kubernetes", arms=(3,), speed=2, cells=slow_cells((1, 2, 3)))
    runner, run_dir = _kill_runner_mid_cell(plan, cluster)
    try:
        ((name, pod),) = _pods(cluster).items()
        assert _record(run_dir)["objects"] == [f"pod/{name}", f"service/{name}"]
        assert not _gone(pod["pid"])
        resumed = run_cli("run", "--resume", str(run_dir), "--headless", "--lang", "en",
                          timeout=120)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert f"deleted pod/{name}, service/{name}, left by the previous runner" in resumed.stdout
        assert _gone(pod["pid"])
        assert _pods(cluster) == {}
        assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"
    finally:
        runner.stop(timeout=5)


# -- the parts, without processes ----------------------------------------------------------------

def _parsed(port: int, launcher: str, extra: str = "") -> object:
    table = SLURM_TABLE if launcher == "slurm" else KUBE_TABLE
    return parse_plan(sim_plan_text(port, launcher=f'"{launcher}"') + table + extra)


def test_srun_carries_the_plans_options_before_the_command():
    plan = _parsed(8000, "slurm")
    argv = srun_argv(plan.server.slurm, "dspark-x")  # type: ignore[attr-defined]
    assert argv == ["srun", "--job-name=dspark-x", "--nodes=1", "--ntasks=1", "--partition=gpu",
                    "--gres=gpu:8", "--time=00:30:00", "--account=bench", "--exclusive", "--"]


def test_the_shipped_manifest_fills_to_a_pod_and_a_service():
    plan = _parsed(8123, "kubernetes")
    arm = plan.arms[0]  # type: ignore[attr-defined]
    template, where = read_template(plan.server.kubernetes)  # type: ignore[attr-defined]
    pod, service = yaml.safe_load_all(render_manifest(plan, arm, "dspark-p", "s1", template, where))  # type: ignore[arg-type]
    container = pod["spec"]["containers"][0]
    assert container["command"] == plan.server_argv(arm)  # type: ignore[attr-defined]
    assert container["image"] == "vllm/vllm-openai:v0.33.0"
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 8
    assert container["ports"] == [{"containerPort": 8123}]
    assert pod["metadata"]["namespace"] == "bench" and pod["metadata"]["annotations"] == {
        "dspark-tui/arm": "st=3", "dspark-tui/session": "s1"}
    assert service["kind"] == "Service" and service["spec"]["ports"][0]["targetPort"] == 8123


def test_a_template_with_an_unknown_placeholder_is_one_line_naming_file_and_line(tmp_path: Path):
    template = tmp_path / "pod.yaml"
    template.write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: {nmae}\n")
    plan = parse_plan(sim_plan_text(8000, launcher='"kubernetes"')
                      + KUBE_TABLE + f'manifest = "{template}"\n')
    problems = launcher_problems(plan)
    assert any(f"{template}:4: unknown placeholder {{nmae}}" in line for line in problems)
    with pytest.raises(ServerError, match="cannot read"):
        read_template(plan.server.kubernetes.model_copy(update={"manifest": str(tmp_path / "no")}))


def test_pod_names_are_dns_labels():
    name = pod_name("Very Long Arm=Name_with/odd*chars" * 3, "s12", "0123456789abcdef")
    assert len(name) <= 63 and name == name.lower()
    assert all(c.isalnum() or c == "-" for c in name) and not name.endswith("-")


def test_a_missing_cluster_tool_stops_preflight(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("PATH", str(tmp_path))
    problems = launcher_problems(_parsed(8000, "slurm"))  # type: ignore[arg-type]
    assert problems == ["server.launcher = 'slurm': srun, squeue, scancel not on PATH; install "
                        "the cluster's client tools here or run from a login node"]


def test_a_misspelt_launcher_key_is_one_plan_error():
    text = sim_plan_text(8000, launcher='"slurm"') + '\n[server.slurm]\npartiton = "gpu"\n'
    line = text.splitlines().index('partiton = "gpu"') + 1
    with pytest.raises(PlanError, match=rf"^<plan>:{line}: server\.slurm\.partiton: unknown key"):
        parse_plan(text)
    with pytest.raises(PlanError, match=r"server\.launcher: .*'local', 'slurm' or 'kubernetes'"):
        parse_plan(sim_plan_text(8000, launcher='"pbs"'))
