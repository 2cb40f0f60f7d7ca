"""One runner per run directory: the lock on `runner.lock`, taken from the directory's creation
on, handed down to a launched runner, refused in one line naming the holder, and dropped by the
kernel when the holder dies."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dspark_tui.engine.run.runner import prepare_run
from dspark_tui.engine.rundir.liveness import runner_alive
from dspark_tui.engine.start.headless import lock_for_resume
from dspark_tui.engine.start.launch import RunnerProcess
from dspark_tui.model import UserError, load_plan
from dspark_tui.results import RunStore, manifest_for_plan
from dspark_tui.results.run_lock import LOCK_FILE, RunLock, RunLocked, lock_held, lock_holder
from dspark_tui.results.scan import scan_runs
from tests.cli import CLI, cli_env
from tests.engine.helpers import write_sim_plan

TINY_CELLS = ('[[scenarios]]\nname = "t"\ninput_len = 16\noutput_len = 8\n'
              'concurrencies = [1]\nnum_prompts = 2\n')
TRIALS = 50


def _new_run(folder: Path, port: int) -> Path:
    """A run directory as a killed runner leaves it: status running, nobody holding it."""
    folder.mkdir(parents=True, exist_ok=True)
    plan = write_sim_plan(folder, port, arms=(3,), warmup=0, speed=200, cells=TINY_CELLS)
    return RunStore.create(folder / "results", manifest_for_plan(load_plan(plan))).path


def _contender(run_dir: Path, pipes: tuple[int, int, int, int], out: Path) -> int:
    """A forked process doing the resume's lock step the moment `go` is readable; a winner
    keeps the lock until `hold` closes, as a runner keeps it for its life."""
    go, go_w, hold, hold_w = pipes
    pid = os.fork()
    if pid:
        return pid
    code = 0
    try:
        os.close(go_w)  # only the test may write, or no reader would ever see the end
        os.close(hold_w)
        os.read(go, 1)
        try:
            lock = lock_for_resume(run_dir, None)
        except UserError as exc:
            out.write_text(f"refused {exc}")
        else:
            out.write_text(f"won {os.getpid()}")
            os.read(hold, 1)  # EOF when the test lets go
            lock.release()
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def test_fifty_pairs_of_resumes_started_together_leave_exactly_one_runner_each(tmp_path: Path):
    """50 pairs of processes doing what `run --resume` does before it runs (the liveness check,
    then the lock), each pair released at the same instant: one wins, the other is refused in
    one line naming the winner's pid. (50 pairs of real runners would take minutes here; a few
    real ones are the next test.)"""
    dirs = [_new_run(tmp_path / f"t{n}", 0) for n in range(TRIALS)]
    go_r, go_w = os.pipe()
    hold_r, hold_w = os.pipe()
    children = []
    try:
        for n, run_dir in enumerate(dirs):
            for side in "ab":
                children.append(_contender(run_dir, (go_r, go_w, hold_r, hold_w),
                                           tmp_path / f"t{n}" / side))
        os.write(go_w, b"x" * len(children))  # every contender of every pair at once
        deadline = time.monotonic() + 20
        while not all((tmp_path / f"t{n}" / s).exists() for n in range(TRIALS) for s in "ab"):
            assert time.monotonic() < deadline, "contenders did not decide"
            time.sleep(0.05)
        for n, run_dir in enumerate(dirs):
            sides = sorted((tmp_path / f"t{n}" / s).read_text() for s in "ab")
            refused, won = sides
            assert won.startswith("won ") and refused.startswith("refused "), sides
            winner = int(won.split()[1])
            assert f"(pid {winner})" in refused and "\n" not in refused, refused
            assert lock_held(run_dir) is True and lock_holder(run_dir) == winner
    finally:
        os.close(hold_w)
        os.close(go_w)
        for pid in children:
            os.waitpid(pid, 0)
        os.close(go_r)
        os.close(hold_r)
    assert not any(lock_held(run_dir) for run_dir in dirs)  # the kernel let go with the holders


def test_real_resumes_started_together_run_once(tmp_path: Path, port: int):
    """`run --resume DIR` twice at the same moment, a few times: exactly one runner, one
    run_started and one run_finished; the other exits 2 with one line naming it."""
    env = cli_env()
    for trial in range(3):
        run_dir = _new_run(tmp_path / f"t{trial}", port)
        argv = [*CLI, "run", "--resume", str(run_dir), "--headless", "--lang", "en"]
        pair = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=env, stdin=subprocess.DEVNULL) for _ in range(2)]
        outputs = [p.communicate(timeout=90) for p in pair]
        codes = sorted(p.returncode for p in pair)
        assert codes == [0, 2], outputs
        (refusal,) = [err for p, (_, err) in zip(pair, outputs, strict=True) if p.returncode == 2]
        winner = next(p.pid for p in pair if p.returncode == 0)
        assert refusal.count("\n") == 1 and f"(pid {winner})" in refusal, refusal
        kinds = [json.loads(line)["kind"] for line in (run_dir / "events.jsonl").read_text().splitlines()]
        assert kinds.count("run_started") == 1 and kinds.count("run_finished") == 1, kinds
        assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"


def test_a_new_run_directory_is_locked_from_its_creation(tmp_path: Path, port: int):
    plan = load_plan(write_sim_plan(tmp_path, port, arms=(3,)))
    store = prepare_run(plan, tmp_path / "results")
    assert store.lock is not None and lock_holder(store.path) == os.getpid()
    with pytest.raises(RunLocked, match=rf"another runner \(pid {os.getpid()}\) holds this run"):
        RunLock.acquire(store.path, patience_s=0.05)
    assert runner_alive(store.path)  # History shows it running before any runner exists
    assert [r.status for r in scan_runs([tmp_path / "results"])] == ["running"]
    store.lock.release()
    assert not runner_alive(store.path)
    RunLock.acquire(store.path).release()


def test_a_detached_launch_cannot_be_raced_by_a_resume(tmp_path: Path, port: int):
    """The launcher hands the locked descriptor to its runner: at no moment between creating the
    directory and the runner's end can a resume take it — not even while the runner is still
    starting up."""
    plan = write_sim_plan(tmp_path, port, arms=(3,), warmup=0, speed=200, cells=TINY_CELLS)
    process = RunnerProcess.start(str(plan), results_root=tmp_path / "results", detach=True,
                                  lang="en")
    try:
        # Right away: the runner is still importing, the launcher has let go of its copy.
        with pytest.raises(UserError, match=rf"\(pid {process.pid}\)"):
            lock_for_resume(process.run_dir, None)
        assert lock_holder(process.run_dir) == process.pid
        with pytest.raises(UserError, match=rf"\(pid {process.pid}\)"):
            RunnerProcess.start("", results_root=tmp_path / "results", resume=process.run_dir,
                                detach=True)
        assert process.wait(60) == 0
    finally:
        process.stop()
    assert lock_held(process.run_dir) is False
    assert json.loads((process.run_dir / "run.json").read_text())["status"] == "completed"
    kinds = [json.loads(line)["kind"]
             for line in (process.run_dir / "events.jsonl").read_text().splitlines()]
    assert kinds.count("run_started") == 1


def test_a_killed_runner_frees_its_run_at_once(tmp_path: Path):
    """kill -9: no cleanup runs, the kernel drops the lock, and the run reads as not alive even
    though its heartbeat is fresh (the pid rule would wait 30 s for it to go stale)."""
    run_dir = _new_run(tmp_path, 0)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom dspark_tui.results.run_lock import RunLock\n"
         "RunLock.acquire(sys.argv[1]); print('locked', flush=True); time.sleep(60)", str(run_dir)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        manifest = json.loads((run_dir / "run.json").read_text())
        manifest["runner_pid"] = holder.pid
        (run_dir / "run.json").write_text(json.dumps(manifest))
        (run_dir / "heartbeat").touch()
        assert runner_alive(run_dir)
        with pytest.raises(UserError, match=rf"another runner \(pid {holder.pid}\) holds this run"):
            lock_for_resume(run_dir, None)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        if holder.stdout is not None:
            holder.stdout.close()
    assert not runner_alive(run_dir)
    lock_for_resume(run_dir, None).release()


def test_a_run_from_before_the_lock_keeps_the_pid_rule(tmp_path: Path):
    run_dir = _new_run(tmp_path, 0)
    assert not (run_dir / LOCK_FILE).exists() and lock_held(run_dir) is None
    manifest = json.loads((run_dir / "run.json").read_text())
    manifest["runner_pid"] = os.getpid()  # alive, with a fresh heartbeat: an old live runner
    (run_dir / "run.json").write_text(json.dumps(manifest))
    (run_dir / "heartbeat").touch()
    assert runner_alive(run_dir)
    with pytest.raises(UserError, match=rf"another runner \(pid {os.getpid()}\) holds this run"):
        lock_for_resume(run_dir, None)


def test_a_handed_down_descriptor_must_be_the_runs_lock(tmp_path: Path):
    run_dir = _new_run(tmp_path, 0)
    other = os.open(tmp_path / "not-the-lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        with pytest.raises(UserError, match=f"descriptor {other} is not its {LOCK_FILE}"):
            RunLock.adopt(run_dir, other)
    finally:
        os.close(other)
