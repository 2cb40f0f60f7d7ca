"""Rounds in parallel (`bench.parallel`, issue 15 item 3) through the fake Slurm and Kubernetes
tools with two "nodes" (loopback addresses 127.0.0.2 and 127.0.0.3, each binding its own
simulator on the plan's port): two rounds run at the same time, each on one node running every
arm of its round in turn in the round's order; every measurement names its node, the analysis
pairs within a node, and after kill -9 of the runner a resume cancels both jobs it left."""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

import pytest

from dspark_tui.engine.start.launch import RunnerProcess
from dspark_tui.model import CellResult, PlanError, parse_plan
from dspark_tui.results import RunStore, load_run
from tests.cli import run_cli, slow_cells, wait_for
from tests.engine.clusters import cluster_plan, gone, jobs, pods
from tests.engine.helpers import sim_plan_text

NODES = ("127.0.0.2", "127.0.0.3")


@pytest.fixture
def two_nodes(cluster: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FAKE_SLURM_NODES", ",".join(NODES))
    monkeypatch.setenv("FAKE_KUBE_NODES", ",".join(NODES))
    return cluster


def _parallel_plan(root: Path, port: int, launcher: str, **kwargs: object) -> Path:
    return cluster_plan(root, port, launcher, arms=(3, 5), rounds=2,
                        parallel=2, **kwargs)  # type: ignore[arg-type]


def _by_round(measurements: list[CellResult]) -> dict[int, list[CellResult]]:
    rounds: dict[int, list[CellResult]] = {}
    for m in sorted(measurements, key=lambda m: m.provenance.started_at or ""):
        rounds.setdefault(m.round, []).append(m)
    return rounds


def _live_servers(root: Path, launcher: str) -> list[tuple[str, str, int]]:
    """(job id or pod name, node, the server's pid) of every job running or pod not deleted."""
    if launcher == "slurm":
        return [(j["id"], j["node"], j["pid"]) for j in jobs(root) if j["state"] == "RUNNING"]
    return [(name, pod["node"], pod["pid"]) for name, pod in pods(root).items()]


def _interval(results: list[CellResult]) -> tuple[str, str]:
    return (min(m.provenance.started_at or "" for m in results),
            max(m.provenance.finished_at or "" for m in results))


@pytest.mark.parametrize("launcher", ["slurm", "kubernetes"])
def test_two_rounds_run_at_once_each_on_one_node_in_its_own_arm_order(
        two_nodes: Path, port: int, launcher: str):
    plan = _parallel_plan(two_nodes, port, launcher, speed=4, cells=slow_cells((1, 2)))
    done = run_cli("run", str(plan), "--headless", "--results", str(two_nodes / "results"),
                   "--lang", "en", timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    (run_dir,) = list((two_nodes / "results").iterdir())
    loaded = load_run(run_dir)
    rounds = _by_round([m for m in loaded.measurements if m.ok])
    assert sorted(rounds) == [1, 2] and all(len(ms) == 4 for ms in rounds.values())
    # Each round on one node, the two rounds on two nodes.
    nodes = {r: {m.node for m in ms} for r, ms in rounds.items()}
    assert all(len(n) == 1 for n in nodes.values()), nodes
    assert nodes[1] | nodes[2] == set(NODES), nodes
    # Each node ran its round's arms in the round's order: A then B, and B then A.
    assert [m.arm for m in rounds[1]][::2] == ["st=3", "st=5"]
    assert [m.arm for m in rounds[2]][::2] == ["st=5", "st=3"]
    # At the same time: each round began before the other ended.
    (start1, end1), (start2, end2) = _interval(rounds[1]), _interval(rounds[2])
    assert start1 < end2 and start2 < end1, (start1, end1, start2, end2)
    # Every session event of the run says its lane; the lane's node is in SessionStarted.
    events = RunStore(run_dir).read_events()
    started = [e for e in events if e.kind == "session_started"]
    assert {e.lane for e in started} == {1, 2} and {e.node for e in started} == set(NODES)
    assert all(e.lane in (1, 2) for e in events if e.kind in ("cell_started", "server_state"))
    # The analysis pairs within a node and says how many it saw.
    analysis = json.loads((run_dir / "analysis.json").read_text())
    assert sorted(analysis["nodes"]) == sorted(NODES)
    assert analysis["unpaired_rounds"] == 0
    assert all(p["n"] == 2 for p in analysis["pairs"])
    # results.csv names each measurement's node.
    csv = (run_dir / "results.csv").read_text().splitlines()
    header = csv[0].split(",")
    assert {line.split(",")[header.index("node")] for line in csv[1:]} == set(NODES)
    if launcher == "slurm":
        assert [j["state"] for j in jobs(two_nodes)] == ["CANCELLED"] * 4
        assert all(gone(j["pid"]) for j in jobs(two_nodes))
    else:
        assert pods(two_nodes) == {}


@pytest.mark.parametrize("launcher", ["slurm", "kubernetes"])
def test_kill_9_of_a_parallel_run_then_resume_undoes_both_servers_and_finishes(
        two_nodes: Path, port: int, launcher: str, monkeypatch: pytest.MonkeyPatch):
    # Two cells an arm: after each node's first saved measurement, three more of its round are
    # left for the kill to interrupt and the resume to finish.
    plan = _parallel_plan(two_nodes, port, launcher, speed=2, cells=slow_cells((1, 2)))
    runner = RunnerProcess.start(str(plan), results_root=two_nodes / "results", detach=True)
    run_dir = runner.run_dir
    try:
        # Each node has saved a measurement of its round and measures the next.
        wait_for(lambda: {e.result.round for e in RunStore(run_dir).read_events()
                          if e.kind == "cell_finished"} == {1, 2},
                 timeout=90, what="a measurement saved on each node")
        os.kill(runner.pid, signal.SIGKILL)
        runner.wait(5)
        left = _live_servers(two_nodes, launcher)
        assert sorted(node for _, node, _ in left) == sorted(NODES)
        assert not any(gone(pid) for _, _, pid in left)  # they outlive the runner, as on a cluster
        # The nodes listed the other way round: a round placed anew would land on the other
        # node; each must go back to the node that measured its first cells.
        for var in ("FAKE_SLURM_NODES", "FAKE_KUBE_NODES"):
            monkeypatch.setenv(var, ",".join(reversed(NODES)))
        resumed = run_cli("run", "--resume", str(run_dir), "--headless", "--lang", "en",
                          timeout=180)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        for name, _, pid in left:
            said = f"cancelled Slurm job {name}" if launcher == "slurm" else f"deleted pod/{name}"
            assert said in resumed.stdout, resumed.stdout
            assert gone(pid)
        assert _live_servers(two_nodes, launcher) == []
        assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"
        measured = [m for m in load_run(run_dir).measurements if m.ok]
        assert len(measured) == 8  # 2 rounds x 2 arms x 2 cells
        for rnd in (1, 2):  # a resumed round stays on one node: its arms are still paired
            assert len({m.node for m in measured if m.round == rnd}) == 1
        analysis = json.loads((run_dir / "analysis.json").read_text())
        assert analysis["unpaired_rounds"] == 0 and all(p["n"] == 2 for p in analysis["pairs"])
    finally:
        runner.stop(timeout=5)


def test_parallel_rounds_need_a_cluster_launcher_and_a_node_a_round():
    local = sim_plan_text(8000, rounds=2, parallel=2)
    with pytest.raises(PlanError, match=re.escape(
            'rounds in parallel run on nodes of their own; set server.launcher = "slurm" or '
            '"kubernetes"')):
        parse_plan(local)
    too_many = sim_plan_text(8000, rounds=2, parallel=3, launcher='"slurm"')
    with pytest.raises(PlanError, match=r"bench.parallel = 3 exceeds bench.rounds = 2"):
        parse_plan(too_many)
    plan = parse_plan(sim_plan_text(8000, rounds=2, parallel=2, launcher='"slurm"'))
    assert plan.bench.parallel == 2
    # A plan that runs rounds one at a time snapshots as before the key existed.
    assert "parallel" not in parse_plan(sim_plan_text(8000)).model_dump()["bench"]
