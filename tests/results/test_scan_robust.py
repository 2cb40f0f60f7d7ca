"""One bad entry in a results root must not crash everyone: symlink loops, directories this user
cannot read (another user's run, created 0700), run.json of the wrong shape, unreadable or
looping run.json and events.jsonl. Each is skipped or reported with one line; the rest is listed.

Permission tests need a reader that file modes stop. As root they run the CLI in a user
namespace (`unshare --user`): the same files, but without root's power to read through a
mode of 000. (setpriv to another uid would also do where that uid can reach the interpreter and
pytest's 0700 temporary folders; here it cannot.)"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from dspark_tui.engine.rundir.liveness import live_runs, orphan_server_on_port
from dspark_tui.model import UserError, load_plan
from dspark_tui.results import RunStore, load_run, manifest_for_plan, scan_runs
from dspark_tui.results.follow import EventFollower
from tests.cli import run_cli
from tests.conftest import SAMPLE_RUN
from tests.engine.helpers import write_sim_plan

TINY_CELLS = ('[[scenarios]]\nname = "t"\ninput_len = 16\noutput_len = 8\n'
              'concurrencies = [1]\nnum_prompts = 2\n')
LOOP = "Too many levels of symbolic links"


def _good_run(root: Path, name: str = "good") -> Path:
    run = root / name
    shutil.copytree(SAMPLE_RUN, run)
    return run


def _bad_neighbours(root: Path) -> dict[str, Path]:
    """A symlink loop, a pair of links pointing at each other, two run.json of the wrong shape."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "loop").symlink_to("loop")
    (root / "ping").symlink_to("pong")
    (root / "pong").symlink_to("ping")
    typed = {}
    for name, wrong in (("abc", {"total_cells": "abc"}), ("five", {"arms": 5})):
        run = root / f"wrong-{name}"
        run.mkdir()
        (run / "run.json").write_text(json.dumps({"name": f"wrong-{name}", **wrong}))
        typed[name] = run
    return typed


def test_scan_lists_the_rest_and_warns_once_per_bad_entry(tmp_path: Path,
                                                          caplog: pytest.LogCaptureFixture):
    root = tmp_path / "results"
    typed = _bad_neighbours(root)
    good = _good_run(root)
    with caplog.at_level(logging.WARNING):
        first = scan_runs([root])
        again = scan_runs([root, root])  # rescans (History every few seconds) do not repeat it
    for runs in (first, again):
        by_path = {run.path: run for run in runs}
        assert set(by_path) == {good, *typed.values()}
        assert by_path[good].readable and by_path[good].status == "completed"
        assert by_path[typed["abc"]].problem == (
            "run.json is unreadable (total_cells: Input should be a valid integer, unable to "
            "parse string as an integer)")
        assert by_path[typed["five"]].problem.startswith("run.json is unreadable (arms: ")
    warnings = [r.getMessage() for r in caplog.records]
    assert sorted(warnings) == sorted(
        f"dspark-tui: warning: {root / name}: skipped, cannot read it ({LOOP})"
        for name in ("loop", "ping", "pong"))


def test_the_engine_scans_pass_the_same_entries(tmp_path: Path):
    """live_runs and the orphan check (every run, resume and detach asks them) crashed on
    resolve() and is_file() in a loop."""
    root = tmp_path / "results"
    _bad_neighbours(root)
    _good_run(root)
    assert live_runs([root], exclude=root / "loop") == []
    assert orphan_server_on_port([root], 8000) is None


def test_a_looping_run_directory_or_file_is_one_line(tmp_path: Path):
    looping = tmp_path / "looping-run"
    looping.symlink_to(looping.name)
    with pytest.raises(UserError, match=rf"^{looping / 'run.json'}: cannot read it \({LOOP}\)$"):
        RunStore(looping).read_manifest()
    with pytest.raises(UserError, match="no such run directory"):
        load_run(looping)

    run = _good_run(tmp_path)
    (run / "events.jsonl").symlink_to("events.jsonl")
    with pytest.raises(UserError, match=rf"events.jsonl: cannot read it \({LOOP}\)$"):
        EventFollower(run).poll()
    (run / "run.json").unlink()
    (run / "run.json").mkdir()
    loaded = load_run(run)  # the cells still load; run.json is named as the problem
    assert loaded.cells and [str(p) for p in loaded.problems] == [
        "run.json: cannot read it (Is a directory)"]


# -- the CLI, as a user whom file modes stop --------------------------------------------------


@cache
def _unprivileged_prefix() -> tuple[str, ...] | None:
    if os.geteuid() != 0:
        return ()
    if shutil.which("unshare") and subprocess.run(
            ["unshare", "--user", "true"], capture_output=True, check=False).returncode == 0:
        return ("unshare", "--user")
    return None


def _cli(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    prefix = _unprivileged_prefix()
    if prefix is None:
        pytest.skip("root without user namespaces: a mode of 000 does not stop root's reads")
    return run_cli(*args, timeout=timeout, prefix=prefix)


@pytest.fixture
def closed_run(tmp_path: Path) -> Iterator[Path]:
    """Another user's run directory in a shared results root: there, and nothing in it readable."""
    root = tmp_path / "results"
    root.mkdir(parents=True, exist_ok=True)
    closed = _good_run(root, "someone-elses")
    closed.chmod(0)
    yield closed
    closed.chmod(0o700)  # so that pytest can clean up


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("dspark-tui: warning:")]


def test_runs_lists_the_rest_past_unreadable_looping_and_wrong_runs(tmp_path: Path,
                                                                   closed_run: Path):
    root = closed_run.parent
    typed = _bad_neighbours(root)
    good = _good_run(root)
    done = _cli("runs", "--paths", "--results", str(root))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert str(good) in done.stdout and "completed" in done.stdout
    for run in typed.values():
        line = next(line for line in done.stdout.splitlines() if line.endswith(str(run)))
        assert "problem: run.json is unreadable (" in line
    assert sorted(_warnings(done.stderr)) == sorted(
        [f"dspark-tui: warning: {closed_run}: skipped, cannot read it (Permission denied)"]
        + [f"dspark-tui: warning: {root / n}: skipped, cannot read it ({LOOP})"
           for n in ("loop", "ping", "pong")])
    assert str(closed_run) not in done.stdout


def test_run_resume_and_detach_pass_bad_neighbours(tmp_path: Path, port: int, closed_run: Path):
    """Each of these crashed in the liveness scan; a resume was stamped `failed: internal error`."""
    root = closed_run.parent
    _bad_neighbours(root)
    plan = write_sim_plan(tmp_path, port, arms=(3,), warmup=0, speed=200, cells=TINY_CELLS)
    interrupted = RunStore.create(root, manifest_for_plan(load_plan(plan))).path

    resumed = _cli("run", "--resume", str(interrupted), "--headless", "--lang", "en")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "Traceback" not in resumed.stderr
    assert json.loads((interrupted / "run.json").read_text())["status"] == "completed"
    # One line per bad entry, however many times the runner scanned (start, port checks).
    warnings = _warnings(resumed.stderr)
    assert len(warnings) == len(set(warnings)) == 4, resumed.stderr

    fresh = _cli("run", str(plan), "--headless", "--results", str(root), "--lang", "en")
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    detached = _cli("run", str(plan), "--detach", "--results", str(root), "--lang", "en")
    assert detached.returncode == 0 and "Traceback" not in detached.stderr, detached.stderr
    run_dir = Path(detached.stdout.strip().splitlines()[0])
    attached = _cli("attach", str(run_dir), "--headless")  # follows it to its end
    assert attached.returncode == 0, attached.stdout + attached.stderr
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"
    runner_log = (run_dir / "runner.log").read_text()
    assert "Traceback" not in runner_log and "internal error" not in runner_log


def test_unreadable_run_json_and_events_are_one_line(tmp_path: Path):
    run = _good_run(tmp_path)
    (run / "events.jsonl").write_text("")
    (run / "events.jsonl").chmod(0)
    attached = _cli("attach", str(run), "--headless")
    assert attached.returncode == 2, attached.stdout + attached.stderr
    assert attached.stderr == (f"dspark-tui: error: {run / 'events.jsonl'}: cannot read it "
                               "(Permission denied)\n")

    (run / "run.json").chmod(0)
    expected = f"dspark-tui: error: {run / 'run.json'}: cannot read it (Permission denied)\n"
    for args in (["attach", str(run), "--headless"], ["run", "--resume", str(run), "--headless"],
                 ["run", "--resume", str(run), "--detach"]):
        done = _cli(*args)
        assert (done.returncode, done.stderr) == (2, expected), (args, done.stdout, done.stderr)
    reported = _cli("report", str(run), "--stdout", "--lang", "en")
    assert "Traceback" not in reported.stderr, reported.stderr
    assert reported.stderr.splitlines() == [
        f"dspark-tui: warning: {run / 'run.json'}: cannot read it (Permission denied)"]
    assert reported.returncode == 0 and "| chat_short" in reported.stdout


def test_a_looping_run_directory_is_one_line_for_every_command(tmp_path: Path):
    looping = tmp_path / "looping-run"
    looping.symlink_to(looping.name)
    for args in (["attach", str(looping), "--headless"], ["run", "--resume", str(looping), "--headless"],
                 ["run", "--resume", str(looping), "--detach"], ["report", str(looping)]):
        done = _cli(*args)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, (args, done.stderr)
        assert "Traceback" not in done.stderr
