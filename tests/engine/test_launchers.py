"""The Slurm and Kubernetes launchers against fake `srun`/`squeue`/`scancel`/`scontrol` and
`kubectl` (tests/fakes), which run the simulator on this machine as the cluster's "node": a run
through each completes, and after kill -9 of the runner a resume cancels the job or deletes
the pod it left — its simulator is gone — and nothing is left running. With several "nodes"
(loopback addresses), a placement puts a server on the node asked for, and a resume undoes
every session's job, as rounds in parallel leave several."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml

from dspark_tui.engine.servers.launchers import (
    Placement,
    launcher_problems,
    make_server,
    stop_orphaned_launch,
)
from dspark_tui.engine.servers.launchers.kubernetes import pod_name, read_template, render_manifest
from dspark_tui.engine.servers.launchers.record import LaunchRecord, write_launch_record
from dspark_tui.engine.servers.launchers.slurm import srun_argv
from dspark_tui.engine.servers.server import ServerError
from dspark_tui.engine.start.launch import RunnerProcess
from dspark_tui.model import Plan, PlanError, SlurmOptions, parse_plan
from dspark_tui.results import RunStore, load_run
from tests.cli import hold_paused, run_cli, slow_cells, wait_for
from tests.engine import clusters
from tests.engine.clusters import KUBE_TABLE, SLURM_TABLE, TWO_NODES, cluster_plan, gone, pods
from tests.engine.helpers import Recorder, sim_plan_text


def _record(run_dir: Path) -> dict:
    return json.loads((run_dir / "launcher.json").read_text())


# -- through each launcher, a run completes ------------------------------------------------------

def _run_completes(cluster: Path, port: int, launcher: str) -> Path:
    """A two-arm run through `launcher` to its end, every cell ok; its directory."""
    plan = cluster_plan(cluster, port, launcher, arms=(3, 5))
    done = run_cli("run", str(plan), "--headless", "--results", str(cluster / "results"),
                   "--lang", "en", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    (run_dir,) = list((cluster / "results").iterdir())
    assert len(load_run(run_dir).ok_cells()) == 4
    return run_dir


def test_a_run_through_slurm_completes_and_cancels_each_job(cluster: Path, port: int,
                                                           monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("FAKE_SLURM_PENDING_S", "1")  # each job waits in the queue first
    run_dir = _run_completes(cluster, port, "slurm")
    jobs = clusters.jobs(cluster)
    # One job a session, asked for with the plan's options, ended by scancel at its stop.
    assert [job["state"] for job in jobs] == ["CANCELLED", "CANCELLED"]
    assert {(j["partition"], j["gres"], j["time"], j["account"]) for j in jobs} == {
        ("gpu", "gpu:8", "00:30:00", "bench")}
    assert all(gone(job["pid"]) for job in jobs)
    assert _record(run_dir)["state"] == "stopped"
    evidence = json.loads((run_dir / "servers" / "st_5-s2.launcher.json").read_text())
    assert evidence["job_id"] == jobs[1]["id"] and evidence["node"] == "127.0.0.1"
    # The server's output came back through srun into the session's log.
    log = (run_dir / "logs" / "server-st_3-s1.log").read_text()
    assert "queued and waiting for resources" in log and "Starting vLLM API server" in log
    lines = [e.line for e in RunStore(run_dir).read_events() if e.kind == "server_log"]
    assert f"Slurm job {jobs[0]['id']} runs on 127.0.0.1" in lines


def test_a_run_through_kubernetes_completes_and_deletes_each_pod(cluster: Path, port: int):
    run_dir = _run_completes(cluster, port, "kubernetes")
    assert pods(cluster) == {}  # both pods deleted at their stops, their Services too
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
    plan = cluster_plan(cluster, port, launcher, "--fail-start", arms=(3,))
    done = run_cli("run", str(plan), "--headless", "--results", str(cluster / "results"),
                   "--lang", "en", timeout=120)
    assert done.returncode != 0
    assert "server exited with code 1 while starting" in done.stdout, done.stdout
    (run_dir,) = list((cluster / "results").iterdir())
    assert _record(run_dir)["state"] == "stopped"
    if launcher == "slurm":
        (job,) = clusters.jobs(cluster)
        assert job["state"] == "FAILED" and gone(job["pid"])
    else:
        assert pods(cluster) == {}


# -- kill -9 of the runner, then resume -----------------------------------------------------------

def _kill_runner_while_it_runs(plan: Path, cluster: Path) -> tuple[RunnerProcess, Path]:
    """Start the plan detached and kill -9 its runner while it is held paused after its first
    cell, its job or pod up. Left going, the run's last 2-4 s after the first cell started
    were the window, and a kill 4 s late (a loaded box) found the job already cancelled."""
    runner = RunnerProcess.start(str(plan), results_root=cluster / "results", detach=True)
    run_dir = runner.run_dir
    wait_for(lambda: [e for e in RunStore(run_dir).read_events() if e.kind == "cell_started"],
             timeout=60, what="a cell in flight")
    hold_paused(run_dir)
    os.kill(runner.pid, signal.SIGKILL)
    runner.wait(5)
    return runner, run_dir


def test_resume_after_kill_9_cancels_the_slurm_job_left_behind(cluster: Path, port: int):
    plan = cluster_plan(cluster, port, "slurm", arms=(3,), speed=2, cells=slow_cells((1, 2, 3)))
    runner, run_dir = _kill_runner_while_it_runs(plan, cluster)
    try:
        (job,) = clusters.jobs(cluster)
        assert job["state"] == "RUNNING" and _record(run_dir)["job_id"] == job["id"]
        assert not gone(job["pid"])  # the job outlives its runner, as on a cluster
        resumed = run_cli("run", "--resume", str(run_dir), "--headless", "--lang", "en",
                          timeout=120)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert f"cancelled Slurm job {job['id']}, left by the previous runner" in resumed.stdout
        assert gone(job["pid"])
        first, second = clusters.jobs(cluster)
        assert first["state"] == "CANCELLED" and second["state"] == "CANCELLED"
        assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"
    finally:
        runner.stop(timeout=5)


def test_resume_after_kill_9_deletes_the_pod_left_behind(cluster: Path, port: int):
    plan = cluster_plan(cluster, port, "kubernetes", arms=(3,), speed=2, cells=slow_cells((1, 2, 3)))
    runner, run_dir = _kill_runner_while_it_runs(plan, cluster)
    try:
        ((name, pod),) = pods(cluster).items()
        assert _record(run_dir)["objects"] == [f"pod/{name}", f"service/{name}"]
        assert not gone(pod["pid"])
        resumed = run_cli("run", "--resume", str(run_dir), "--headless", "--lang", "en",
                          timeout=120)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert f"deleted pod/{name}, service/{name}, left by the previous runner" in resumed.stdout
        assert gone(pod["pid"])
        assert pods(cluster) == {}
        assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"
    finally:
        runner.stop(timeout=5)


# -- the parts, without processes ----------------------------------------------------------------

def _parsed(port: int, launcher: str, extra: str = "") -> Plan:
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


def test_srun_asks_for_the_placements_node_and_excludes_the_nodes_to_avoid():
    options = SlurmOptions(gres="gpu:8", extra_args=["--exclusive"])
    assert srun_argv(options, "j", Placement(node="node07"))[-3:] == [
        "--exclusive", "--nodelist=node07", "--"]
    assert srun_argv(options, "j", Placement(avoid=("node01", "node02")))[-2:] == [
        "--exclude=node01,node02", "--"]
    both = srun_argv(options, "j", Placement(node="node07", avoid=("node01",)))
    assert both[-3:] == ["--nodelist=node07", "--exclude=node01", "--"]
    assert srun_argv(options, "j", Placement()) == srun_argv(options, "j")
    # Nodes the plan keeps off itself stay off when a placement avoids others (one --exclude:
    # a second one would replace the first).
    own = SlurmOptions(extra_args=["--exclusive", "--exclude=bad01", "-x", "bad02,bad03"])
    assert srun_argv(own, "j", Placement(avoid=("node08",)))[-3:] == [
        "--exclusive", "--exclude=bad01,bad02,bad03,node08", "--"]
    assert srun_argv(own, "j", Placement(node="node07"))[-2:] == ["--nodelist=node07", "--"]
    assert "--exclude=bad01" in srun_argv(own, "j", Placement(node="node07"))


def _pod_spec(plan: Plan, placement: Placement | None) -> dict:
    template, where = read_template(plan.server.kubernetes)
    pod, _ = yaml.safe_load_all(render_manifest(plan, plan.arms[0], "p", "s1", template, where,
                                                placement))
    return pod["spec"]


def test_the_affinity_placeholder_places_the_pod_on_its_node_and_off_the_others():
    plan = _parsed(8000, "kubernetes")
    assert _pod_spec(plan, None)["affinity"] == {}
    assert _pod_spec(plan, Placement())["affinity"] == {}
    spec = _pod_spec(plan, Placement(node="n7", avoid=("n1", "n2")))
    required = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert required == {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n7"]},
        {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["n1", "n2"]}]}]}
    assert spec["restartPolicy"] == "Never"  # the rest of the spec as it was


def test_a_template_without_affinity_cannot_run_rounds_in_parallel(tmp_path: Path):
    template = tmp_path / "pod.yaml"
    template.write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n"
                        "spec:\n  # affinity: {affinity} only in a comment\n"
                        "  containers: [{name: server, image: {image}, command: {command}}]\n")
    plan = parse_plan(sim_plan_text(8000, launcher='"kubernetes"')
                      + KUBE_TABLE + f'manifest = "{template}"\n')
    assert launcher_problems(plan) == []  # one round at a time: no node to keep
    # [bench] parallel is the lead's plan key; a copy carries it until it lands in this branch.
    parallel = plan.model_copy(update={"bench": plan.bench.model_copy(update={"parallel": 2})})
    assert launcher_problems(parallel) == [
        f"{template}: no {{affinity}} placeholder, but [bench] parallel = 2 runs rounds on "
        "several nodes at once and the template must place a round's arms on one node: add "
        "`affinity: {affinity}` under the Pod's spec"]
    shipped = parallel.model_copy(update={"server": parallel.server.model_copy(update={
        "kubernetes": parallel.server.kubernetes.model_copy(update={"manifest": None})})})
    assert launcher_problems(shipped) == []
    with pytest.raises(ServerError, match=r"no \{affinity\} placeholder"):
        render_manifest(plan, plan.arms[0], "p", "s1", template.read_text(), str(template),
                        Placement(node="n7"))


# -- rounds in parallel: nodes asked for, several live records -------------------------------

def _sim_argv(port: int) -> list[str]:
    return [sys.executable, "-m", "dspark_tui.sim", "serve", "m", "--host", "127.0.0.1",
            "--port", str(port), "--speed", "50"]


def _srun(name: str, port: int, placement: Placement) -> subprocess.Popen[bytes]:
    argv = srun_argv(SlurmOptions(gres="gpu:8"), name, placement) + _sim_argv(port)
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def _job_named(root: Path, name: str) -> dict:
    return next((job for job in clusters.jobs(root) if job["name"] == name), {})


def _answers(host: str, port: int) -> bool:
    try:
        return httpx.get(f"http://{host}:{port}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_fake_srun_puts_jobs_on_the_nodes_asked_for_each_bound_to_its_address(
        cluster: Path, port: int, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("FAKE_SLURM_NODES", TWO_NODES)
    sruns = [_srun("on-3", port, Placement(node="127.0.0.3")),
             _srun("not-3", port, Placement(avoid=("127.0.0.3",)))]
    try:
        # Two servers on one port, each on its node's address.
        wait_for(lambda: _answers("127.0.0.2", port) and _answers("127.0.0.3", port),
                 timeout=60, what="a simulator on each node")
        queue = subprocess.run(["squeue", "--noheader", "--format=%j %T %N"], capture_output=True,
                               text=True, check=True).stdout.splitlines()
        assert sorted(queue) == ["not-3 RUNNING 127.0.0.2", "on-3 RUNNING 127.0.0.3"]
        # A job asked for a busy node waits in the queue until that node is free.
        sruns.append(_srun("then-2", port, Placement(node="127.0.0.2")))
        wait_for(lambda: _job_named(cluster, "then-2"), what="the third job queued")
        assert _job_named(cluster, "then-2")["state"] == "PENDING"
        subprocess.run(["scancel", "--name=not-3"], check=True)
        wait_for(lambda: _job_named(cluster, "then-2").get("pid"), timeout=30,
                 what="the third job running once its node is free")
        assert _job_named(cluster, "then-2")["node"] == "127.0.0.2"
        assert _job_named(cluster, "on-3")["state"] == "RUNNING"
    finally:
        for name in ("on-3", "not-3", "then-2"):
            subprocess.run(["scancel", f"--name={name}"], check=False)
        for srun in sruns:
            srun.wait(30)
    assert all(gone(job["pid"]) for job in clusters.jobs(cluster))


def test_a_resume_undoes_the_job_of_every_session_left_live(
        cluster: Path, port: int, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("FAKE_SLURM_NODES", TWO_NODES)
    run_dir = cluster / "run"
    run_dir.mkdir()
    # A session whose scancel fails (its job id is unknown to Slurm) keeps its record.
    write_launch_record(run_dir, LaunchRecord(launcher="slurm", arm="st=5", session="s3",
                                              job_name="gone", job_id="999999", state="running"))
    records = {name: LaunchRecord(launcher="slurm", arm="st=3", session=session, job_name=name)
               for session, name in (("s1", "job-a"), ("s2", "job-b"))}
    sruns = []
    try:
        for name, record in records.items():  # as the launcher does: the record, then srun
            write_launch_record(run_dir, record)
            sruns.append(_srun(name, port, Placement()))
        wait_for(lambda: all(_job_named(cluster, n).get("pid") for n in records), timeout=30,
                 what="both jobs running")
        for name, record in records.items():  # what squeue told the launcher
            job = _job_named(cluster, name)
            record.job_id, record.node, record.state = job["id"], job["node"], "running"
            write_launch_record(run_dir, record)
        # launcher.json is s2's job: s1's is only in its own copy.
        assert _record(run_dir)["job_name"] == "job-b"
        jobs = {name: _job_named(cluster, name) for name in records}
        assert {job["node"] for job in jobs.values()} == {"127.0.0.2", "127.0.0.3"}
        said = stop_orphaned_launch(run_dir)
        for srun in sruns:
            srun.wait(30)  # srun ends with its job's task, as it does on a cluster
    finally:
        for name in records:
            subprocess.run(["scancel", f"--name={name}"], check=False)
        for srun in sruns:
            srun.wait(30)
    assert said is not None
    assert said.split("; ") == [
        f"cancelled Slurm job {jobs['job-a']['id']}", f"cancelled Slurm job {jobs['job-b']['id']}",
        "squeue could not check Slurm job 999999: slurm_load_jobs error: Invalid job id specified"]
    for job in jobs.values():
        assert _job_named(cluster, job["name"])["state"] == "CANCELLED" and gone(job["pid"])
    servers = run_dir / "servers"
    states = {p.name: json.loads(p.read_text())["state"] for p in servers.glob("*.launcher.json")}
    assert states == {"st_3-s1.launcher.json": "stopped", "st_3-s2.launcher.json": "stopped",
                      "st_5-s3.launcher.json": "running"}
    assert _record(run_dir)["state"] == "stopped"
    # The next resume tries again what failed, and only that.
    again = stop_orphaned_launch(run_dir)
    assert again is not None and again.startswith("squeue could not check Slurm job 999999")


def test_a_recorded_job_id_of_another_jobs_name_is_not_cancelled(cluster: Path, port: int):
    # A crafted (or stale) record whose id is now another job of this user: squeue names it,
    # the name differs from the record's, and the job keeps running.
    run_dir = cluster / "run"
    run_dir.mkdir()
    srun = _srun("train-big", port, Placement())
    try:
        wait_for(lambda: _job_named(cluster, "train-big").get("pid"), timeout=30,
                 what="the user's own job running")
        victim = _job_named(cluster, "train-big")
        write_launch_record(run_dir, LaunchRecord(launcher="slurm", arm="st=3", session="s1",
                                                  job_name="dspark-0123456789abcdef",
                                                  job_id=victim["id"], state="running"))
        said = stop_orphaned_launch(run_dir, "slurm")
        assert said == (f"Slurm job {victim['id']} is named 'train-big', not the recorded "
                        "'dspark-0123456789abcdef': left alone")
        assert _job_named(cluster, "train-big")["state"] == "RUNNING"
        assert _record(run_dir)["state"] == "running"  # kept: nothing was undone
    finally:
        subprocess.run(["scancel", "--name=train-big"], check=False)
        srun.wait(30)


def _kubectl(*args: str, input: str | None = None) -> str:
    done = subprocess.run(["kubectl", "--namespace=bench", *args], input=input,
                          capture_output=True, text=True, timeout=60, check=True)
    return done.stdout


def test_fake_kubectl_schedules_by_node_affinity_and_keeps_a_pod_that_fits_nowhere_pending(
        cluster: Path, port: int, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("FAKE_KUBE_NODES", TWO_NODES)
    plan = _parsed(port, "kubernetes")
    template, where = read_template(plan.server.kubernetes)

    def apply(name: str, placement: Placement) -> None:
        _kubectl("apply", "-f", "-", input=render_manifest(
            plan, plan.arms[0], name, "s1", template, where, placement))

    def node_of(name: str) -> str:
        return _kubectl("get", f"pod/{name}", "-o", "jsonpath={.spec.nodeName}")

    try:
        apply("pod-a", Placement(node="127.0.0.3"))
        apply("pod-b", Placement(avoid=("127.0.0.3",)))
        assert (node_of("pod-a"), node_of("pod-b")) == ("127.0.0.3", "127.0.0.2")
        wait_for(lambda: _answers("127.0.0.2", port) and _answers("127.0.0.3", port),
                 timeout=60, what="a simulator in each pod, on its node's address")
        apply("pod-c", Placement(node="127.0.0.3"))  # its node is taken
        assert node_of("pod-c") == "" and "pod-c   0/1   Pending" in _kubectl("get", "pods")
        _kubectl("delete", "pod/pod-a", "--wait=true")
        assert node_of("pod-c") == "127.0.0.3"
    finally:
        _kubectl("delete", "pod/pod-a", "pod/pod-b", "pod/pod-c", "--ignore-not-found")
    assert pods(cluster) == {}


@pytest.mark.parametrize("launcher", ["slurm", "kubernetes"])
async def test_a_rounds_later_arm_runs_on_the_node_its_first_arm_landed_on(
        cluster: Path, port: int, launcher: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("FAKE_SLURM_NODES", TWO_NODES)
    monkeypatch.setenv("FAKE_KUBE_NODES", TWO_NODES)
    plan = _parsed(port, launcher)

    async def serve(number: int, placement: Placement) -> str | None:
        """One session of arm `number`: started where asked, serving; the node it ran on."""
        server = make_server(plan, plan.arms[number - 1], log_path=cluster / "logs" / f"{number}.log",
                             run_dir=cluster, emit=Recorder(), gpu=None, session=f"s{number}",
                             placement=placement)
        try:
            await server.start()
            assert await server.probe_health()
            return server.node
        finally:
            await server.stop()

    first = await serve(1, Placement(avoid=("127.0.0.2",)))  # a round's first arm
    assert first == "127.0.0.3"
    assert await serve(2, Placement(node=first)) == "127.0.0.3"  # its later arm follows
    evidence = json.loads((cluster / "servers" / "st_5-s2.launcher.json").read_text())
    assert evidence["node"] == "127.0.0.3" and evidence["state"] == "stopped"


def test_a_job_whose_cancel_failed_at_its_stop_is_cancelled_when_the_run_ends(
        cluster: Path, port: int, monkeypatch: pytest.MonkeyPatch):
    """slurmctld unreachable at a session's stop: the job lives on (srun ended, the task not);
    no resume follows a completed run, so the runner's end tries again and says so."""
    monkeypatch.setenv("FAKE_SCANCEL_FAILS", "1")
    plan = cluster_plan(cluster, port, "slurm", arms=(3, 5))
    done = run_cli("run", str(plan), "--headless", "--results", str(cluster / "results"),
                   "--lang", "en", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    first, second = clusters.jobs(cluster)
    assert "Unable to contact slurm controller" in done.stdout
    assert f"cancelled Slurm job {first['id']}, left live by a stop that could not cancel it" \
        in done.stdout, done.stdout
    assert first["state"] == second["state"] == "CANCELLED"
    assert gone(first["pid"]) and gone(second["pid"])
