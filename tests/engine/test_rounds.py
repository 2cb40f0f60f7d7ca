"""Rounds, repeats, sessions and adaptive rounds, against the real simulator and real files."""

from __future__ import annotations

import csv
import json
import os
import signal
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from dspark_tui.engine.run.runner import Runner, plan_of_run, prepare_run
from dspark_tui.engine.start.launch import RunnerProcess
from dspark_tui.model import CellResult, Plan, load_plan
from dspark_tui.results import RunStore, load_run
from tests.cli import run_cli
from tests.engine.helpers import Recorder, write_sim_plan

TINY = ('[[scenarios]]\nname = "chat"\ninput_len = 32\noutput_len = 8\n'
        'concurrencies = [1, 2]\nnum_prompts = 2\n')
# About a second a measurement at --speed 2, so a test can act while one is in flight.
SLOW = ('[[scenarios]]\nname = "slow"\ninput_len = 64\noutput_len = 512\nrange_ratio = 1.0\n'
        'concurrencies = [1, 2]\nnum_prompts = 2\n')
# For a kill -9 that must find a c = 2 measurement in flight: about 2 s of it, not SLOW's 0.5 s,
# which a kill 0.5 s late (a test process stalled on a loaded box) found already saved. Only
# that cell is long: the c = 1 cell before it in each round ("quick", 64 tokens) is a tenth of
# a second, where at 2048 tokens it took 4 s a round that the test only waited through.
IN_FLIGHT = ('[[scenarios]]\nname = "quick"\ninput_len = 64\noutput_len = 64\nrange_ratio = 1.0\n'
             'concurrencies = [1]\nnum_prompts = 2\n\n'
             + SLOW.replace("output_len = 512", "output_len = 2048")
             .replace("concurrencies = [1, 2]", "concurrencies = [2]"))


class ScriptedRemeasure:
    """A real remeasure function with a script: the cells to return at each look (empty after)."""

    def __init__(self, *answers: list[tuple[str, int]]) -> None:
        self.answers = list(answers)
        self.looks: list[int] = []
        self.seen: list[int] = []  # how many measurements each look was given

    def __call__(self, measurements: Sequence[CellResult], plan: Plan, look: int) -> list[tuple[str, int]]:
        self.looks.append(look)
        self.seen.append(len(measurements))
        return self.answers[look - 1] if look <= len(self.answers) else []


def _runner(tmp_path: Path, port: int, remeasure: ScriptedRemeasure | None = None,
            **kwargs: object) -> tuple[Runner, Recorder]:
    plan = load_plan(write_sim_plan(tmp_path, port, warmup=0, **kwargs))  # type: ignore[arg-type]
    extra = {"remeasure": remeasure} if remeasure is not None else {}
    runner = Runner(plan, prepare_run(plan, tmp_path / "results"), gpu=None, charts=False, **extra)  # type: ignore[arg-type]
    events = Recorder()
    runner.subscribe(events)
    return runner, events


def _files(run_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run_dir)): p.read_bytes()
            for p in sorted((run_dir / "cells").glob("*/*.json"))}


async def test_two_rounds_alternate_arms_each_measurement_in_its_own_file(tmp_path: Path, port: int):
    runner, events = _runner(tmp_path, port, cells=TINY, rounds=2, repeats=2)
    assert await runner.run() == "completed"
    store = runner.store
    sessions = events.of("session_started")
    assert [(s.round, s.arm, s.session) for s in sessions] == [
        (1, "st=3", "s1"), (1, "st=5", "s2"), (2, "st=5", "s3"), (2, "st=3", "s4")]
    planned = events.of("round_planned")
    assert [(r.round, r.arms, r.reason, r.repeats) for r in planned] == [
        (1, ["st=3", "st=5"], "planned", 2), (2, ["st=5", "st=3"], "planned", 2)]
    session_of = {(s.arm, s.round): s.session for s in sessions}
    run = load_run(store.path)
    assert len(run.measurements) == 16 and not run.problems
    for m in run.measurements:
        assert m.ok and m.session == session_of[(m.arm, m.round)]
        name = f"cells/{m.arm.replace('=', '_')}/chat__c{m.concurrency}__r{m.round}p{m.repeat}.json"
        assert json.loads((store.path / name).read_text())["session"] == m.session
    # Within a session: repeat 1 over the round's cells, then repeat 2.
    started = [(e.key.concurrency, e.round, e.repeat) for e in events.of("cell_started")
               if e.key.arm == "st=3" and e.round == 1]
    assert started == [(1, 1, 1), (2, 1, 1), (1, 1, 2), (2, 1, 2)]
    assert sorted(e.index for e in events.of("cell_started")) == list(range(1, 17))
    assert {e.total for e in events.of("cell_started")} == {16}
    with open(store.path / "results.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 16
    assert {(r["arm"], r["concurrency"], r["round"], r["repeat"]) for r in rows} == {
        (a, str(c), str(r), str(p)) for a in ("st=3", "st=5") for c in (1, 2)
        for r in (1, 2) for p in (1, 2)}
    assert all(r["session"] == session_of[(r["arm"], int(r["round"]))] for r in rows)
    logs = sorted(p.name for p in (store.path / "logs").iterdir())
    assert logs == ["server-st_3-s1.log", "server-st_3-s4.log", "server-st_5-s2.log",
                    "server-st_5-s3.log"]
    records = sorted(p.name for p in (store.path / "servers").iterdir())
    assert records == ["st_3-s1.json", "st_3-s4.json", "st_5-s2.json", "st_5-s3.json"]
    assert json.loads((store.path / "run.json").read_text())["cells_ok"] == 4
    raw = {m.provenance.raw_output for m in run.measurements}
    assert len(raw) == 16 and "raw/st_3__r2p1/chat__c1.jsonl" in raw
    assert all((store.path / path).is_file() for path in raw)  # type: ignore[operator]


async def test_adaptive_rounds_measure_only_the_cells_returned_within_the_budget(
        tmp_path: Path, port: int):
    always = ScriptedRemeasure([("chat", 2)], [("chat", 2)], [("chat", 2)])
    runner, events = _runner(tmp_path, port, always, cells=TINY, rounds=1, adaptive_rounds=2)
    assert await runner.run() == "completed"
    assert always.looks == [1, 2]  # the budget is two extra rounds: no third look
    assert always.seen == [4, 6]  # each look sees every measurement so far
    planned = events.of("round_planned")
    assert [(r.round, r.arms, r.cells, r.reason) for r in planned] == [
        (1, ["st=3", "st=5"], [("chat", 1), ("chat", 2)], "planned"),
        (2, ["st=5", "st=3"], [("chat", 2)], "adaptive"),
        (3, ["st=3", "st=5"], [("chat", 2)], "adaptive")]
    measured = sorted((m.arm, m.concurrency, m.round) for m in load_run(runner.store.path).measurements)
    assert measured == sorted([(a, 1, 1) for a in ("st=3", "st=5")]
                              + [(a, 2, r) for a in ("st=3", "st=5") for r in (1, 2, 3)])
    sessions = {(s.arm, s.round) for s in events.of("session_started")}
    assert len(sessions) == 6  # one a round and arm: no cell exceeds rounds + budget sessions


async def test_an_empty_look_ends_the_run_without_an_extra_round(tmp_path: Path, port: int):
    none = ScriptedRemeasure()
    runner, events = _runner(tmp_path, port, none, cells=TINY, rounds=1, adaptive_rounds=2)
    assert await runner.run() == "completed"
    assert none.looks == [1]
    assert [r.reason for r in events.of("round_planned")] == ["planned"]


async def test_resume_continues_the_adaptive_round_it_decided_without_deciding_again(
        tmp_path: Path, port: int):
    first = ScriptedRemeasure([("slow", 2)])
    runner, _ = _runner(tmp_path, port, first, arms=(3,), speed=2, cells=SLOW, rounds=1,
                             adaptive_rounds=1)

    def abort_in_the_adaptive_round(event: object) -> None:
        if getattr(event, "kind", "") == "cell_started" and getattr(event, "round", 1) == 2:
            runner.abort("stopped in the adaptive round")

    runner.subscribe(abort_in_the_adaptive_round)
    assert await runner.run() == "aborted"
    store = runner.store
    before = _files(store.path)
    assert sorted(before) == ["cells/st_3/slow__c1__r1p1.json", "cells/st_3/slow__c2__r1p1.json"]

    other = ScriptedRemeasure([("slow", 1)])  # would decide differently if it were asked
    resumed = Runner(plan_of_run(store), store, gpu=None, charts=False, remeasure=other)
    again = Recorder()
    resumed.subscribe(again)
    assert await resumed.run() == "completed"
    assert other.looks == []  # the budget was spent by the kept decision
    assert [(e.key.concurrency, e.round) for e in again.of("cell_started")] == [(2, 2)]
    after = _files(store.path)
    assert {k: after[k] for k in before} == before
    assert "cells/st_3/slow__c2__r2p1.json" in after
    assert [s.session for s in again.of("session_started")] == ["s3"]  # s2 was cut by the abort


def test_kill_9_mid_round_then_resume_loses_and_redoes_nothing(tmp_path: Path, port: int):
    plan = write_sim_plan(tmp_path, port, arms=(3,), speed=2, warmup=0, cells=IN_FLIGHT, rounds=2,
                          repeats=1)
    runner = RunnerProcess.start(str(plan), results_root=tmp_path / "results", detach=True)
    run_dir = runner.run_dir
    try:
        _kill_at_then_resume(runner, run_dir, started=4, what="the second measurement of round 2")
        events = RunStore(run_dir).read_events()
        assert [e.session for e in events if e.kind == "session_started"] == ["s1", "s2", "s3"]
        assert [e.round for e in events if e.kind == "round_planned"] == [1, 2]
    finally:
        runner.stop(timeout=5)


def _kill_at_then_resume(runner: RunnerProcess, run_dir: Path, started: int, what: str) -> None:
    """kill -9 the runner once `started` measurements began (the second one of round 2 is in
    flight), then resume: the three finished measurements are kept byte for byte, one is added."""
    _wait_until(lambda: _started(run_dir) >= started, what)
    os.kill(runner.pid, signal.SIGKILL)
    runner.wait(5)
    before = _files(run_dir)
    assert sorted(before) == ["cells/st_3/quick__c1__r1p1.json", "cells/st_3/quick__c1__r2p1.json",
                              "cells/st_3/slow__c2__r1p1.json"]
    _resume_keeps_every_file(run_dir, before, added="cells/st_3/slow__c2__r2p1.json")


def _resume_keeps_every_file(run_dir: Path, before: dict[str, bytes], added: str) -> None:
    """`run --resume` as a user types it: every file from before byte for byte, one more."""
    resumed = run_cli("run", "--resume", str(run_dir), "--headless", timeout=90)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    after = _files(run_dir)
    assert {k: after[k] for k in before} == before  # byte for byte
    assert sorted(after) == sorted([*before, added])


def _started(run_dir: Path) -> int:
    return sum(1 for e in RunStore(run_dir).read_events() if e.kind == "cell_started")


def _wait_until(predicate: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


async def test_kill_9_in_an_adaptive_round_then_resume_keeps_the_decision(tmp_path: Path, port: int):
    # A runner decides an adaptive round (both cells) and is stopped at its start; a detached
    # runner resumes it and is killed mid-round; the last resume finishes that round.
    decide = ScriptedRemeasure([("quick", 1), ("slow", 2)])
    runner, _ = _runner(tmp_path, port, decide, arms=(3,), speed=2, cells=IN_FLIGHT, rounds=1,
                        adaptive_rounds=1)
    runner.subscribe(lambda e: runner.abort() if e.kind == "cell_started" and e.round == 2 else None)
    assert await runner.run() == "aborted"
    run_dir = runner.store.path
    detached = RunnerProcess.start("", results_root=run_dir.parent, resume=run_dir, detach=True)
    try:
        _kill_at_then_resume(detached, run_dir, started=5,
                             what="the second measurement of the adaptive round")
        planned = [e for e in RunStore(run_dir).read_events() if e.kind == "round_planned"]
        assert [(e.round, e.reason) for e in planned] == [(1, "planned"), (2, "adaptive")]
        assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"
    finally:
        detached.stop(timeout=5)
