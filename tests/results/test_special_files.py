"""A run directory is data someone else may have made: a FIFO named runner.lock, run files that
are symlinks to /dev/zero. Every reader opens them without waiting, takes regular files only
and reads at most a cap (model/safe_files.py); each command answers within seconds, naming the
file in one line. (Before: `runs`, `ctl`, `attach` and `report` waited on a FIFO forever, and a
/dev/zero link was read until memory ran out.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from dspark_tui.model import safe_files
from dspark_tui.results import RunStore, scan_runs
from dspark_tui.results.jsonl import read_complete_lines
from dspark_tui.results.run_lock import lock_held, lock_holder
from tests.cli import run_cli
from tests.conftest import SAMPLE_RUN
from tests.engine.helpers import write_sim_plan

ANSWER_S = 60  # a command that waits on a FIFO never answers; one that reads /dev/zero fills memory


def _run(root: Path, name: str) -> Path:
    run = root / name
    shutil.copytree(SAMPLE_RUN, run)
    manifest = json.loads((run / "run.json").read_text())
    manifest["status"] = "running"  # what a reader then probes: the lock, the events, server.json
    manifest["runner_pid"] = os.getpid()
    (run / "run.json").write_text(json.dumps(manifest))
    return run


def _hostile_root(root: Path) -> dict[str, Path]:
    root.mkdir(parents=True)
    runs = {name: _run(root, name) for name in
            ("fifo_lock", "zero_lock", "zero_run", "fifo_run", "zero_events", "zero_cell",
             "zero_server")}
    os.mkfifo(runs["fifo_lock"] / "runner.lock")
    (runs["zero_lock"] / "runner.lock").symlink_to("/dev/zero")
    for name in ("zero_run", "fifo_run"):
        (runs[name] / "run.json").unlink()
    (runs["zero_run"] / "run.json").symlink_to("/dev/zero")
    os.mkfifo(runs["fifo_run"] / "run.json")
    (runs["zero_events"] / "events.jsonl").symlink_to("/dev/zero")
    (runs["zero_server"] / "server.json").symlink_to("/dev/zero")
    cell = sorted((runs["zero_cell"] / "cells").glob("*/*.json"))[0]
    cell.unlink()
    cell.symlink_to("/dev/zero")
    runs["cell"] = cell
    return runs


def _answered(*args: str) -> subprocess.CompletedProcess[str]:
    done = run_cli(*args, timeout=ANSWER_S)
    assert "Traceback" not in done.stderr, (args, done.stderr)
    return done


@pytest.mark.slow
@pytest.mark.timeout(400)  # ten commands, ~10 s each on a loaded box; a hang is ANSWER_S each
def test_every_command_answers_over_a_fifo_lock_and_dev_zero_links(tmp_path: Path, port: int):
    root = tmp_path / "results"
    runs = _hostile_root(root)

    listed = _answered("runs", "--paths", "--results", str(root))
    assert listed.returncode == 0
    lines = listed.stdout.splitlines()
    assert any("fifo_run" in line and "problem: run.json is unreadable (not a regular file "
               "(a FIFO))" in line for line in lines), listed.stdout
    assert any("zero_run" in line and "problem: run.json is unreadable (a symlink, not "
               "followed)" in line for line in lines), listed.stdout

    for name in ("fifo_lock", "zero_lock", "zero_server"):
        ctl = _answered("ctl", str(runs[name]), "pause")
        assert ctl.returncode == 2 and ctl.stderr.count("\n") == 1, ctl.stderr
        assert "no runner is alive" in ctl.stderr
    attach = _answered("attach", str(runs["zero_events"]), "--headless")
    assert (attach.returncode, attach.stderr) == (
        2, f"dspark-tui: error: {runs['zero_events'] / 'events.jsonl'}: cannot read it "
           "(a symlink, not followed)\n")
    attach = _answered("attach", str(runs["fifo_run"]), "--headless")
    assert attach.returncode == 2 and attach.stderr == (
        f"dspark-tui: error: {runs['fifo_run'] / 'run.json'}: cannot read it (not a regular "
        "file (a FIFO))\n")
    attach = _answered("attach", str(runs["fifo_lock"]), "--headless")
    assert "is not alive" in attach.stdout

    report = _answered("report", str(runs["zero_cell"]), "--stdout")
    assert report.returncode == 0 and report.stdout.startswith("#")
    assert report.stderr == (f"dspark-tui: warning: {runs['cell']}: unreadable (a symlink, not "
                             "followed)\n")

    plan = write_sim_plan(tmp_path, port, arms=(3,))
    checked = _answered("plan", "check", str(plan), "--preflight", "--results", str(root))
    assert checked.returncode == 0 and "preflight: ok" in checked.stdout, checked.stdout


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path):
    fifo = tmp_path / "runner.lock"
    os.mkfifo(fifo)
    found: list[object] = []

    def probe() -> None:
        found.extend([lock_held(tmp_path), lock_holder(tmp_path)])
        try:
            safe_files.read_bytes(fifo, 100)
        except OSError as exc:
            found.append(exc.strerror)

    worker = threading.Thread(target=probe, daemon=True)
    worker.start()
    worker.join(5)
    if worker.is_alive():  # release the blocked open so that the thread can end
        os.close(os.open(fifo, os.O_RDWR | os.O_NONBLOCK))
        pytest.fail("an open of a FIFO waited for a writer")
    assert found == [None, None, "not a regular file (a FIFO)"]


def test_dev_zero_and_oversized_files_are_refused_not_read(tmp_path: Path):
    zero = tmp_path / "run.json"
    zero.symlink_to("/dev/zero")
    with pytest.raises(OSError, match="a symlink, not followed"):
        safe_files.read_bytes(zero, 1 << 20)
    with pytest.raises(OSError, match="not a regular file \\(a character device\\)"):
        safe_files.read_bytes("/dev/zero", 1 << 20)
    big = tmp_path / "big.json"
    big.write_bytes(b"x" * 5000)
    with pytest.raises(OSError, match="larger than 4 KiB"):
        safe_files.read_bytes(big, 4096)
    assert safe_files.read_bytes(big, 4096, partial=True) == b"x" * 4096
    # An appended file is read a cap at a time: the complete lines within, the rest next time.
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"a" * 10 + b"\n" + b"b" * 10 + b"\n")
    assert read_complete_lines(log, 0, cap=15) == ([b"a" * 10], 11)
    assert read_complete_lines(log, 11, cap=15) == ([b"b" * 10], 22)


def test_scan_and_store_name_special_files_in_one_line(tmp_path: Path):
    root = tmp_path / "results"
    runs = _hostile_root(root)
    started = time.monotonic()
    problems = {s.path.name: s.problem for s in scan_runs([root])}
    assert problems["fifo_run"] == "run.json is unreadable (not a regular file (a FIFO))"
    assert problems["zero_run"] == "run.json is unreadable (a symlink, not followed)"
    _, cell_problems = RunStore(runs["zero_cell"]).load_measurements()
    assert [p.reason for p in cell_problems] == ["unreadable (a symlink, not followed)"]
    assert time.monotonic() - started < 10
