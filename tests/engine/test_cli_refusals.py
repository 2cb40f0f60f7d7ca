"""The command line's refusals and one-line answers (`run` on a taken port, a foreign host or a
file for a results folder; `--resume` with --arms; a broken config; a newer run; `ctl` on what
is no running run), run in this process: main() as the console script calls it, its stdout,
stderr and exit code (tests/cli.run_cli_here). No process is started, so none is needed; the
engine's process behaviour (signals, detaching, kill -9, pipes) is tests/engine/test_cli_runs.py's."""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path

import pytest

from dspark_tui.model import load_plan
from dspark_tui.results import RunStore, manifest_for_plan
from tests.cli import run_cli_here
from tests.conftest import SAMPLE_RUN
from tests.engine.helpers import write_sim_plan


def test_port_taken_is_one_line_and_creates_no_run(tmp_path: Path, port: int):
    plan = write_sim_plan(tmp_path, port, arms=(3,))
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        done = run_cli_here("run", str(plan), "--headless", "--results", str(tmp_path / "results"))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert f"port {port} on 127.0.0.1 is already in use by pid {os.getpid()}" in done.stderr
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(("host", "port_is_any"), [
    ("10.9.9.9", False),  # a valid address this machine does not have: errno 99 on bind
    ("no-such-host.invalid", True),  # does not resolve, reached through server.port = 0
])
def test_a_host_that_is_not_this_machine_is_one_line(tmp_path: Path, port: int, host: str,
                                                      port_is_any: bool):
    plan = write_sim_plan(tmp_path, 0 if port_is_any else port, arms=(3,), host=f'"{host}"')
    done = run_cli_here("run", str(plan), "--headless", "--results", str(tmp_path / "results"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"server.host {host!r} is not an address of this machine (" in done.stderr
    assert not (tmp_path / "results").exists()


def test_a_results_folder_that_is_a_file_is_one_line(tmp_path: Path, port: int):
    plan = write_sim_plan(tmp_path, port, arms=(3,))
    in_the_way = tmp_path / "hostname"
    in_the_way.write_text("not a folder\n")
    done = run_cli_here("run", str(plan), "--headless", "--results", str(in_the_way))
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"{in_the_way}: cannot create a run directory there (" in done.stderr


@pytest.mark.parametrize("detach", [False, True])
def test_resume_refuses_arms_and_scenarios(tmp_path: Path, port: int, detach: bool):
    plan = write_sim_plan(tmp_path, port, arms=(3,))
    run_dir = RunStore.create(tmp_path / "results", manifest_for_plan(load_plan(plan))).path
    before = sorted(p.name for p in run_dir.iterdir())
    for flag, value in (("--arms", "st=3"), ("--scenarios", "chat")):
        done = run_cli_here("run", "--resume", str(run_dir), flag, value, "--headless",
                       *(["--detach"] if detach else []))
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stderr == ("dspark-tui: error: --arms/--scenarios cannot be combined with "
                               "--resume; a resume runs the run's own plan\n"), done.stderr
    assert sorted(p.name for p in run_dir.iterdir()) == before  # no runner was started


def test_a_broken_config_is_one_warning_line_for_every_command(tmp_path: Path):
    (tmp_path / "config.toml").write_text("language = [\n")
    warning = f"dspark-tui: warning: {tmp_path / 'config.toml'}: ignored, not valid TOML ("
    for args in (["plan", "list"], ["attach", str(tmp_path / "no-run"), "--headless"]):
        done = run_cli_here(*args, env={"DSPARK_CONFIG_DIR": str(tmp_path)})
        lines = done.stderr.splitlines()
        assert lines and lines[0].startswith(warning), done.stderr
        assert "Traceback" not in done.stderr


def test_a_run_written_by_a_newer_version_is_refused_by_report_and_resume(tmp_path: Path):
    run_dir = tmp_path / "newer"
    shutil.copytree(SAMPLE_RUN, run_dir)
    manifest = json.loads((run_dir / "run.json").read_text())
    manifest["schema_version"] = 9
    (run_dir / "run.json").write_text(json.dumps(manifest))
    expected = [f"dspark-tui: error: {run_dir / 'run.json'}: written by a newer dspark-tui "
                "(run schema 9; this one reads up to 2); upgrade to open it"]
    for args in (("report", str(run_dir), "--stdout"), ("run", "--resume", str(run_dir), "--headless")):
        done = run_cli_here(*args)
        assert (done.returncode, done.stdout, done.stderr.splitlines()) == (2, "", expected)


def test_ctl_suggests_a_resume_only_for_a_run(tmp_path: Path):
    not_a_run = run_cli_here("ctl", str(tmp_path), "pause")
    assert (not_a_run.returncode, not_a_run.stderr) == (
        2, f"dspark-tui: error: {tmp_path}: not a run directory (no readable run.json); list "
           "runs with `dspark-tui runs`\n")
    finished = run_cli_here("ctl", str(SAMPLE_RUN), "pause")
    assert finished.stderr == (f"dspark-tui: error: {SAMPLE_RUN}: the run has completed; there "
                               "is nothing to control\n")
    interrupted = tmp_path / "interrupted"
    shutil.copytree(SAMPLE_RUN, interrupted)
    manifest = json.loads((interrupted / "run.json").read_text())
    manifest["status"] = "running"  # its runner is long gone
    (interrupted / "run.json").write_text(json.dumps(manifest))
    stale = run_cli_here("ctl", str(interrupted), "pause")
    assert f"resume it with `dspark-tui run --resume {interrupted}`" in stale.stderr
