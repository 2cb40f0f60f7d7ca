"""The engine as a user drives it: `dspark-tui run|demo --headless`, `--detach`, `ctl`,
`attach`, `--resume` after `kill -9`, SIGHUP — real processes, real files, nothing left behind."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from dspark_tui.engine.rundir.control import send_control
from dspark_tui.engine.servers.ports import port_is_free
from dspark_tui.engine.start.launch import RunnerProcess
from dspark_tui.model import load_plan
from dspark_tui.results import RunStore, load_run, manifest_for_plan, scan_runs
from tests.cli import (
    CLI,
    attach_and_resume,
    cli_env,
    hold_paused,
    reaped,
    run_cli,
    run_cli_here,
    slow_cells,
    wait_for,
)
from tests.conftest import SAMPLE_RUN
from tests.disks import small_tmpfs
from tests.engine.helpers import write_sim_plan


def _kinds(run_dir: Path) -> list[str]:
    return [e.kind for e in RunStore(run_dir).read_events()]


def _status(run_dir: Path) -> str:
    return json.loads((run_dir / "run.json").read_text())["status"]


def _first_cell_started(results: Path) -> Path:
    """The one run directory under `results`, once its first cell has started."""
    wait_for(lambda: any('"cell_started"' in p.read_text() for p in results.glob("*/events.jsonl")),
             what="the first cell")
    (run_dir,) = list(results.iterdir())
    return run_dir


def _cell_files(run_dir: Path) -> dict[str, str]:
    """Cell file -> its saved started_at, to prove a finished cell is never redone."""
    return {
        str(p.relative_to(run_dir)): json.loads(p.read_text())["provenance"]["started_at"]
        for p in sorted((run_dir / "cells").glob("*/*.json"))
    }


def test_demo_headless_end_to_end(tmp_path: Path):
    # The demo plan's port is 0 (any free port), so it never clashes with another run.
    done = run_cli("demo", "--headless", "--results", str(tmp_path), "--scenarios", "chat_short",
                   "--lang", "en", timeout=110)
    assert done.returncode == 0, done.stdout + done.stderr
    (run_dir,) = list(tmp_path.iterdir())
    # The shipped demo: 2 rounds x 2 repeats per arm, plus adaptive rounds for unsure cells.
    assert "(4/4 cells complete)" in done.stdout
    assert "Total tok/s by arm" in done.stdout and "ETA" in done.stdout
    run = load_run(run_dir)
    assert len(run.ok_cells()) == 4 and not run.problems
    assert len(run.measurements) >= 4 * 4 and {m.round for m in run.measurements} >= {1, 2}
    analysis = json.loads((run_dir / "analysis.json").read_text())
    assert {p["verdict"] for p in analysis["pairs"]} <= {"wins", "tie", "unsure"}
    assert all(p["ci_low"] < p["ratio"] < p["ci_high"] for p in analysis["pairs"])
    assert run.manifest.status == "completed"
    assert run.manifest.plan["server"]["port"] > 0  # the chosen port is recorded for a resume
    assert run.manifest.plan["server"]["port_picked"] is True  # and that the run picked it
    report = (run_dir / "report.md").read_text()
    assert "chat_short" in report and "st=3" in report
    # Written before run.json is closed, the reports still know the run ended whole.
    assert "Incomplete run" not in (run_dir / "report.en.md").read_text() + done.stdout
    assert (run_dir / "results.csv").is_file()
    assert not (run_dir / "charts").exists()  # the suite's setting (DSPARK_CHARTS) reached the runner
    # Into a pipe (a log file over SSH): plain whole lines, no box drawing, nothing cut to 80
    # columns, and the log ends with the answer and where the reports are.
    assert not set("│┃━─") & set(done.stdout), done.stdout
    # A cut word ("chat_sh…"); "+1…+3%" is a range and a lone "…" an arm not measured yet.
    assert not re.search(r"\w…(\s|$)", done.stdout, re.MULTILINE), done.stdout
    assert "\x1b[" not in done.stdout
    tail = done.stdout[done.stdout.index("run completed"):].splitlines()
    summary = tail.index("summary:")
    assert tail[summary + 1].startswith("  - ") and any("How sure" in line for line in tail)
    assert tail[-1] == f"reports: {run_dir / 'report.md'}  {run_dir / 'report.en.md'}  " \
                       f"{run_dir / 'analysis.json'}"


def test_detach_ctl_attach_and_a_second_run_on_the_same_port(tmp_path: Path, port: int):
    # More cells (about a second each) than the test can use before its abort: with seven, the
    # run could end while a ctl process was still starting on a loaded box, and the runner,
    # writing its reports, never acknowledged the skip or the abort ("sent; the runner has not
    # acknowledged it yet"; load 15-18 here). The abort ends the run, so the rest cost nothing.
    cells = slow_cells(tuple(range(1, 41)))
    plan = write_sim_plan(tmp_path, port, arms=(3,), speed=2, warmup=0, cells=cells)
    results = tmp_path / "results"
    started = run_cli("run", str(plan), "--headless", "--detach", "--results", str(results))
    assert started.returncode == 0, started.stderr
    run_dir = Path(started.stdout.strip().splitlines()[0])
    assert run_dir.parent == results
    pid = int(started.stderr.split("runner pid ")[1].split(",")[0])
    try:
        wait_for(lambda: "cell_started" in _kinds(run_dir), what="the first cell")
        assert json.loads((run_dir / "run.json").read_text())["runner_pid"] == pid
        assert oct((run_dir / "run.json").stat().st_mode & 0o777) == "0o600"

        paused = run_cli("ctl", str(run_dir), "pause")
        assert paused.returncode == 0 and "pause: will pause after the current cell" in paused.stdout
        assert oct((run_dir / "control.jsonl").stat().st_mode & 0o777) == "0o600"
        current = _kinds(run_dir).count("cell_started")
        wait_for(lambda: _kinds(run_dir).count("cell_finished") == current,
                 what="the current cell to finish")
        time.sleep(1.5)
        assert _kinds(run_dir).count("cell_started") == current  # paused between cells

        second = run_cli_here("run", str(plan), "--headless", "--results", str(results))
        assert second.returncode == 2
        assert f"port {port} is used by the live run enginetest ({run_dir}" in second.stderr

        resumed = run_cli("ctl", str(run_dir), "resume")
        assert "resume: resumed" in resumed.stdout
        # A skip sent by another process (a Python start: seconds on a loaded machine) may find
        # the cell it aimed at already done; it says so, and the next cell is skipped instead.
        for started in range(current + 1, current + 5):
            wait_for(lambda n=started: _kinds(run_dir).count("cell_started") >= n, what="next cell")
            skipped = run_cli("ctl", str(run_dir), "skip")
            if "skip: skipping the current cell" in skipped.stdout:
                break
            assert "skip: no cell is running; nothing to skip" in skipped.stdout
        else:
            pytest.fail("no skip found a running cell in four tries")
        wait_for(lambda: "cell_skipped" in _kinds(run_dir), what="the skip")

        attach = subprocess.Popen([*CLI, "attach", str(run_dir), "--headless"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  stdin=subprocess.DEVNULL)
        aborted = run_cli("ctl", str(run_dir), "abort")
        assert "abort: aborted by user" in aborted.stdout
        out, err = attach.communicate(timeout=30)
        assert attach.returncode == 3, err
        assert "skip " in out and "run aborted" in out
        wait_for(lambda: _status(run_dir) == "aborted", what="aborted status")
        wait_for(lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie",
                 what="the runner to exit")
        late = run_cli_here("ctl", str(run_dir), "pause")
        assert late.returncode == 2 and "no runner is alive for this run" in late.stderr
    finally:
        if psutil.pid_exists(pid):
            os.kill(pid, signal.SIGKILL)
        from dspark_tui.engine.servers.server_record import stop_orphaned_server

        stop_orphaned_server(run_dir)
    cells = load_run(run_dir).cells
    events = RunStore(run_dir).read_events()
    (skip_event,) = [e for e in events if e.kind == "cell_skipped"]
    assert [k for k, c in cells.items() if not c.ok] == [skip_event.key]
    assert cells[skip_event.key].status.value == "skipped"
    assert len([c for c in cells.values() if c.ok]) == _kinds(run_dir).count("cell_finished")


def test_kill_9_mid_cell_then_resume_redoes_nothing_and_loses_nothing(tmp_path: Path, port: int):
    # 2048 tokens: the second cell, which the kill must find in flight, lasts about 2 s; at
    # slow_cells' 512 it lasted 0.5 s, and a kill 0.5 s late (a stalled test process on a
    # loaded box) found it saved. The first cell (kept across the kill) is 1024 tokens, ~2 s:
    # two of the runner's once-a-second looks, which record the server's workers, fall in it.
    # The last two, which only the resume measures, are 64 tokens (at 2048 the first and the
    # last two were 4 s and 2 x 2 s the test only waited through).
    cells = "\n".join([slow_cells((1,), output_len=1024),
                       slow_cells((2,), output_len=2048).replace('"slow"', '"long"'),
                       slow_cells((3, 4), output_len=64).replace('"slow"', '"quick"')])
    plan = write_sim_plan(tmp_path, port, "--spawn-workers", "2", arms=(3,), speed=2, warmup=0,
                          cells=cells)
    runner = RunnerProcess.start(str(plan), results_root=tmp_path / "results", detach=True)
    run_dir = runner.run_dir
    try:
        wait_for(lambda: _kinds(run_dir).count("cell_started") == 2, what="the second cell")
        record = json.loads((run_dir / "server.json").read_text())
        server_pids = [record["pid"]] + [d["pid"] for d in record["descendants"]]
        assert len(server_pids) == 3
        os.kill(runner.pid, signal.SIGKILL)
        runner.wait(5)
        time.sleep(0.5)
        assert all(psutil.pid_exists(p) for p in server_pids)  # orphaned, as after a crash
        assert not port_is_free("127.0.0.1", port)
        (summary,) = scan_runs([run_dir.parent])
        assert summary.status == "interrupted"
        before = _cell_files(run_dir)
        assert list(before) == ["cells/st_3/slow__c1__r1p1.json"]
        fresh = run_cli_here("run", str(plan), "--headless", "--results", str(run_dir.parent))
        assert fresh.returncode == 2
        assert f"held by the server left behind by the interrupted run {run_dir}" in fresh.stderr

        resumed = run_cli("run", "--resume", str(run_dir), "--headless", timeout=90)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert "stopped the server left by the previous runner of this run" in resumed.stdout
        assert "1 already done" in resumed.stdout
        after = _cell_files(run_dir)
        assert len(after) == 4
        assert after["cells/st_3/slow__c1__r1p1.json"] == before["cells/st_3/slow__c1__r1p1.json"]
        assert all(not psutil.pid_exists(p) for p in server_pids)
        assert _status(run_dir) == "completed"
        assert len(load_run(run_dir).ok_cells()) == 4
    finally:
        runner.stop(timeout=5)


def test_sighup_of_a_foreground_run_detaches_it_and_the_run_finishes(tmp_path: Path, port: int):
    """A headless run over SSH whose terminal goes away goes on by default: its events say so,
    `attach` finds it, and it completes (stdout here is a pipe, so it keeps printing)."""
    plan = write_sim_plan(tmp_path, port, arms=(3,), speed=2, warmup=0, cells=slow_cells())
    results = tmp_path / "results"
    env = {"DSPARK_CONFIG_DIR": str(tmp_path / "cfg"), "DSPARK_RESULTS_ROOT": str(results)}
    proc = subprocess.Popen([*CLI, "run", str(plan), "--headless", "--results", str(results)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL, start_new_session=True, env=cli_env(env))
    with reaped(proc):
        # Held paused after its first cell until attach has picked it: left going, a SIGHUP
        # 2 s late (a loaded box) left attach no running run to find.
        run_dir = _first_cell_started(results)
        hold_paused(run_dir)
        proc.send_signal(signal.SIGHUP)
        wait_for(lambda: "terminal closed, detached" in (run_dir / "events.jsonl").read_text(),
                 what="the hand-off")
        attach = attach_and_resume(run_dir, env, timeout=60)
        out, _ = proc.communicate(timeout=60)
    attached = attach.stdout
    assert proc.returncode == 0, out
    assert "control detach: terminal closed, detached" in out
    assert str(run_dir) in attached and "run completed: 4/4 cells ok" in attached, attach.stderr
    assert _status(run_dir) == "completed"
    assert json.loads((run_dir / "server.json").read_text())["state"] == "stopped"


def test_sighup_with_no_detach_on_hangup_stops_the_server_and_marks_the_run_interrupted(
        tmp_path: Path, port: int):
    plan = write_sim_plan(tmp_path, port, arms=(3,), speed=2, warmup=0, cells=slow_cells())
    results = tmp_path / "results"
    proc = subprocess.Popen([*CLI, "run", str(plan), "--headless", "--results", str(results),
                             "--no-detach-on-hangup"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    with reaped(proc):
        run_dir = _first_cell_started(results)
        hold_paused(run_dir)  # a SIGHUP after the run's end would find nothing to stop
        server_pid = json.loads((run_dir / "server.json").read_text())["pid"]
        proc.send_signal(signal.SIGHUP)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert "SIGHUP: stopping the server" in out
    assert _status(run_dir) == "interrupted"
    assert _kinds(run_dir)[-1] == "run_finished"
    assert not psutil.pid_exists(server_pid)
    assert json.loads((run_dir / "server.json").read_text())["state"] == "stopped"
    assert load_run(run_dir).ok_cells()


def test_a_runner_whose_parent_dies_aborts(tmp_path: Path, port: int):
    # The parent dies 1.5 s after the start and the runner looks once a second: up to 2.5 s.
    # At slow_cells' 512 tokens the run had only about 3 s of cells after its Python and
    # server starts, which a fast machine shortens (here a parent living 6 s saw it complete);
    # at 2048 tokens it has about 11 s, which the abort cuts, so they cost nothing.
    plan = write_sim_plan(tmp_path, port, arms=(3,), speed=2, warmup=0,
                          cells=slow_cells(output_len=2048))
    results = tmp_path / "results"
    # A parent that starts an attached runner, prints its pid and dies at once.
    script = (
        "import sys; from pathlib import Path; from dspark_tui.engine.start.launch import RunnerProcess;"
        f"r = RunnerProcess.start({str(plan)!r}, results_root=Path({str(results)!r}));"
        "print(r.pid, r.run_dir, flush=True); import time; time.sleep(1.5)"
    )
    parent = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=30, check=True)
    pid_text, run_dir_text = parent.stdout.split()
    run_dir, pid = Path(run_dir_text), int(pid_text)
    try:
        wait_for(lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie",
                 timeout=30, what="the orphaned runner to abort")
        assert _status(run_dir) == "aborted"
        finished = RunStore(run_dir).read_events()[-1]
        assert finished.kind == "run_finished"
        assert finished.message == "the process that started this runner is gone"
    finally:
        if psutil.pid_exists(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_runner_detached_by_its_parent_outlives_it_and_finishes(tmp_path: Path, port: int):
    """The TUI's "detach and quit": the runner is told, says so, and its parent may then go."""
    # Long enough that a runner slow to start (a loaded machine) is still running when asked.
    plan = write_sim_plan(tmp_path, port, arms=(3,), speed=2, warmup=0, cells=slow_cells())
    results = tmp_path / "results"
    script = (
        "from pathlib import Path; from dspark_tui.engine.start.launch import RunnerProcess;"
        "from dspark_tui.tui.run_link import OwnedRunner;"
        f"r = RunnerProcess.start({str(plan)!r}, results_root=Path({str(results)!r}));"
        "print(r.pid, r.run_dir, OwnedRunner(r).detach(30), flush=True)"
    )
    parent = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=60, check=True)
    pid_text, run_dir_text, detached = parent.stdout.split()
    run_dir, pid = Path(run_dir_text), int(pid_text)
    try:
        assert detached == "True"
        wait_for(lambda: _status(run_dir) != "running", timeout=60, what="the run to end")
        assert _status(run_dir) == "completed"
        acks = [e for e in RunStore(run_dir).read_events() if e.kind == "run_control"]
        assert {e.action for e in acks} == {"detach"}
    finally:
        if psutil.pid_exists(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_closed_terminal_does_not_stop_a_foreground_run(tmp_path: Path, port: int):
    """`dspark-tui run ... | head -1`: the printer goes quiet, the run and its cleanup go on."""
    plan = write_sim_plan(tmp_path, port, arms=(3,), warmup=0)
    results = tmp_path / "results"
    proc = subprocess.Popen([*CLI, "run", str(plan), "--headless", "--results", str(results)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL)
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith(b"run enginetest")
    proc.stdout.close()
    assert proc.wait(timeout=60) == 0
    (run_dir,) = list(results.iterdir())
    assert _status(run_dir) == "completed"
    assert json.loads((run_dir / "server.json").read_text())["state"] == "stopped"


def test_secrets_never_reach_the_run_directory_yet_a_detached_runner_has_them(
        tmp_path: Path, port: int):
    plan = write_sim_plan(tmp_path, port, "--api-key", "sk-in-command", arms=(3,), speed=20,
                          warmup=0)
    text = plan.read_text().replace('[bench]', '[server.env]\nHF_TOKEN = "hf-secret"\n\n[bench]')
    text = text.replace('driver = "native"', 'driver = "native"\napi_key = "sk-bench-key"')
    plan.write_text(text)
    done = run_cli("run", str(plan), "--detach", "--results", str(tmp_path / "results"))
    assert done.returncode == 0, done.stderr
    run_dir = Path(done.stdout.strip().splitlines()[0])
    deadline = time.monotonic() + 60
    while json.loads((run_dir / "run.json").read_text())["status"] == "running":
        assert time.monotonic() < deadline, (run_dir / "runner.log").read_text()
        time.sleep(0.3)
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"
    for path in run_dir.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for secret in (b"sk-in-command", b"hf-secret", b"sk-bench-key"):
                assert secret not in data, f"{secret!r} written to {path}"
    # A later resume without the secrets in the environment says what to export.
    resumed = run_cli_here("run", "--resume", str(run_dir), "--headless")
    assert resumed.returncode == 2
    assert "server.env.HF_TOKEN" in resumed.stderr and "Traceback" not in resumed.stderr


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A filesystem of our own, so a test can fill it: just big enough for what preflight
    expects this small plan to write."""
    with small_tmpfs(tmp_path, "8m") as mount:
        yield mount


def _fill(folder: Path) -> Path:
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as handle:  # unbuffered: no failing flush on close
        for chunk in (2**20, 4096):  # megabytes first, then the last crumbs
            try:
                while True:
                    handle.write(b"\0" * chunk)
            except OSError:
                pass
    return filler


def test_a_full_disk_stops_the_run_keeping_every_saved_cell_and_resume_finishes(
        tmp_path: Path, port: int, small_disk: Path):
    plan = write_sim_plan(tmp_path, port, arms=(3,), speed=2, warmup=0, cells=slow_cells())
    results = small_disk / "results"
    proc = subprocess.Popen([*CLI, "run", str(plan), "--headless", "--results", str(results)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            stdin=subprocess.DEVNULL)
    with reaped(proc):
        # Filled while held paused after the first cell, then resumed: left going, the rest of
        # the run took under 3 s after the first cell's file, and a fill 3 s late found the run
        # completed. (The resume's line fits the control file's page: no new space needed.)
        run_dir = _first_cell_started(results)
        hold_paused(run_dir)
        assert any(results.glob("*/cells/*/slow__c1__r1p1.json"))
        filler = _fill(small_disk)  # the disk is full when the second cell is saved
        send_control(run_dir, "resume")
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert "Traceback" not in out
    (run_dir,) = results.iterdir()
    assert "No space left on device" in out and "the run stopped with every earlier cell kept" in out
    before = _cell_files(run_dir)
    assert "cells/st_3/slow__c1__r1p1.json" in before
    assert all(c.ok for c in load_run(run_dir).cells.values())  # nothing torn on disk
    filler.unlink()
    resumed = run_cli("run", "--resume", str(run_dir), "--headless", timeout=90)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    after = _cell_files(run_dir)
    assert len(after) == 4 and all(after[k] == v for k, v in before.items())
    assert _status(run_dir) == "completed"


def test_attach_without_a_directory_follows_the_newest_running_run(tmp_path: Path, port: int):
    plan = write_sim_plan(tmp_path, port, arms=(3,), speed=2, warmup=0, cells=slow_cells())
    results = tmp_path / "results"
    env = {"DSPARK_CONFIG_DIR": str(tmp_path / "cfg"), "DSPARK_RESULTS_ROOT": str(results)}
    nothing = run_cli_here("attach", "--headless", env=env)
    assert nothing.returncode == 2 and "attach: no running run in" in nothing.stderr
    runner = RunnerProcess.start(str(plan), results_root=results, detach=True)
    run_dir = runner.run_dir
    try:
        wait_for(lambda: "cell_started" in _kinds(run_dir), what="the first cell")
        # Held until attach has picked it: left going, the run's last 3-6 s were all the time
        # attach had to start Python and scan, and one 6 s late found no running run.
        hold_paused(run_dir)
        attach = attach_and_resume(run_dir, env)
        out = attach.stdout
        assert attach.returncode == 0, out + attach.stderr
        assert str(run_dir) in out
        assert "run completed: 4/4 cells ok" in out
    finally:
        runner.stop(timeout=5)


def _reader_leaves_after_one_line(*args: str) -> subprocess.CompletedProcess[str]:
    """`dspark-tui ARGS | head -1`: a real pipe whose reader closes it after the first line.

    The pipe is shrunk to one page before the command starts: with Linux's default 64 KiB
    a fast machine wrote the whole listing into the pipe and exited 0 before the reader left
    (CI, stop 27), so the test judged a race, not the command."""
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)
    proc = subprocess.Popen([*CLI, *args], stdout=write_end, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, env=cli_env())
    os.close(write_end)
    assert proc.stderr is not None
    first = b""
    while not first.endswith(b"\n"):  # byte by byte: nothing past the first line is taken
        byte = os.read(read_end, 1)
        if not byte:
            break
        first += byte
    os.close(read_end)
    err = proc.stderr.read().decode()
    proc.stderr.close()
    proc.wait(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, first.decode(), err)


def test_a_reader_that_leaves_early_ends_printing_commands_quietly(tmp_path: Path):
    # Far more than the one-page pipe holds, so `runs` is still printing when the reader goes.
    results = tmp_path / "results"
    manifest = (SAMPLE_RUN / "run.json").read_text()
    for i in range(600):
        run_dir = results / f"run_{i:04d}"
        run_dir.mkdir(parents=True)
        (run_dir / "run.json").write_text(manifest)
    done = _reader_leaves_after_one_line("runs", "--results", str(results))
    assert done.stdout.startswith("NAME ")  # the header, the one line read
    assert done.stderr == "", done.stderr  # no BrokenPipeError traceback, no "ignored" line
    assert done.returncode == 141  # as a process killed by SIGPIPE


def test_attach_with_nothing_running_names_each_folder_once(tmp_path: Path):
    results = tmp_path / "results"
    results.mkdir()
    done = run_cli("attach", timeout=60, env={"DSPARK_CONFIG_DIR": str(tmp_path / "cfg"),
                                              "DSPARK_RESULTS_ROOT": str(results)})
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("dspark-tui: error: attach: no running run in ")
    assert done.stderr.count(str(results)) == 1, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr  # one line, with where to look next


@pytest.mark.parametrize("headless", [False, True])
def test_attach_with_nothing_running_names_the_interrupted_runs_and_their_resume(
        tmp_path: Path, headless: bool):
    results = tmp_path / "results"
    results.mkdir()
    for name, status in (("lost", "running"), ("stopped", "interrupted"), ("done", "completed")):
        shutil.copytree(SAMPLE_RUN, results / name)
        manifest = json.loads((results / name / "run.json").read_text())
        manifest["status"] = status  # "running" with its runner long gone: interrupted
        (results / name / "run.json").write_text(json.dumps(manifest))
    done = run_cli("attach", *(["--headless"] if headless else []), timeout=60,
                   env={"DSPARK_CONFIG_DIR": str(tmp_path / "cfg"), "DSPARK_RESULTS_ROOT": str(results)})
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0].startswith("dspark-tui: error: attach: no running run in ")
    resumes = sorted(line.split("resume: ")[1] for line in lines[1:])
    assert resumes == [f"dspark-tui run --resume {results / 'lost'}",
                       f"dspark-tui run --resume {results / 'stopped'}"], done.stderr
    assert "done" not in done.stderr.replace(str(tmp_path), "")


def test_attach_waits_for_a_runner_winding_down_and_ends_with_its_status(tmp_path: Path):
    """A runner writes its final status to run.json, then (its reports can take seconds of CPU
    before that) the run_finished event. Between the two, attach saw no live runner after more
    than 3 s without events and said the runner was lost (exit 1 after a clean abort)."""
    from dspark_tui.model.events import RunFinished
    from dspark_tui.results.run_lock import RunLock

    plan = load_plan(write_sim_plan(tmp_path, 8000))
    store = RunStore.create(tmp_path / "results", manifest_for_plan(plan, "plan.toml"))
    lock = RunLock.acquire(store.path)  # this process plays the runner, alive and winding down
    try:
        manifest = store.read_manifest()
        manifest.status = "aborted"
        manifest.runner_pid = os.getpid()
        store.write_manifest(manifest)
        attach = subprocess.Popen([*CLI, "attach", str(store.path), "--headless"], env=cli_env(),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  stdin=subprocess.DEVNULL)
        try:
            # past attach's 3 s of quiet (its start included), with the status final
            with pytest.raises(subprocess.TimeoutExpired):
                attach.wait(timeout=8)
            store.append_event(RunFinished(status="aborted", done=0, failed=0, total=4,
                                           message="aborted by user"))
        finally:
            lock.release()
        out, err = attach.communicate(timeout=60)
    finally:
        if attach.poll() is None:
            attach.kill()
            attach.wait()
    assert attach.returncode == 3, out + err
    assert "run aborted" in out and "is not alive" not in out + err
