"""Bad input through the real command line: one clear line naming what and where, nothing lost."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from dspark_tui.engine.rundir.save_errors import save_advice, save_problem
from dspark_tui.model import CellResult, ClientMetrics
from dspark_tui.results import RunStore
from tests.cli import CLI, reaped, run_cli, run_cli_here, slow_cells
from tests.conftest import SAMPLE_RUN
from tests.engine.helpers import sim_runner, write_sim_plan


def test_a_newer_run_json_is_refused_everywhere_and_never_rewritten(tmp_path: Path):
    run_dir = tmp_path / "results" / "newer"
    shutil.copytree(SAMPLE_RUN, run_dir)
    manifest = json.loads((run_dir / "run.json").read_text())
    manifest["schema_version"] = 99
    manifest["a_key_from_the_future"] = {"kept": True}
    (run_dir / "run.json").write_text(json.dumps(manifest))
    before = (run_dir / "run.json").read_bytes()
    refusal = (f"dspark-tui: error: {run_dir / 'run.json'}: written by a newer dspark-tui "
               "(run schema 99; this one reads up to 2); upgrade to open it")
    for args in (("report", str(run_dir), "--stdout"), ("run", "--resume", str(run_dir), "--headless"),
                 ("attach", str(run_dir), "--headless"), ("attach", str(run_dir))):
        done = run_cli_here(*args)
        assert (done.returncode, done.stdout, done.stderr.splitlines()) == (2, "", [refusal]), args
    listed = run_cli_here("runs", "--paths", "--results", str(tmp_path / "results"))
    assert listed.returncode == 0 and "Traceback" not in listed.stderr
    [line] = [line for line in listed.stdout.splitlines() if str(run_dir) in line]
    assert "problem: run.json written by a newer dspark-tui (run schema 99" in line
    assert (run_dir / "run.json").read_bytes() == before


def test_a_300_character_arm_name_fails_plan_check_naming_the_key(tmp_path: Path, port: int):
    plan = write_sim_plan(tmp_path, port)
    plan.write_text(plan.read_text().replace('name = "st=5"', f'name = "{"k" * 300}"'))
    done = run_cli_here("plan", "check", str(plan))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr == (f'dspark-tui: error: {plan}:17: arms["{"k" * 31}…"].name: String should '
                           "have at most 100 characters (names become file names)\n")


@pytest.mark.slow
def test_a_resume_leaves_cells_outside_the_plan_out_of_its_counts(tmp_path: Path, port: int):
    plan = write_sim_plan(tmp_path, port, arms=(3,))
    results = tmp_path / "results"
    first = run_cli("run", str(plan), "--headless", "--results", str(results))
    assert first.returncode == 0, first.stdout + first.stderr
    (run_dir,) = results.iterdir()
    store = RunStore(run_dir)
    for arm, scenario in (("st=9", "chat"), ("st=9", "chat"), ("st=3", "other")):
        store.save_cell(CellResult(arm=arm, scenario=scenario, concurrency=1 if scenario == "other" else 4,
                                   round=1 if scenario == "other" else 2,
                                   metrics=ClientMetrics(total_throughput=1.0, completed=4)))
    resumed = run_cli("run", "--resume", str(run_dir), "--headless")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "run completed: 2/2 cells ok" in resumed.stdout
    warnings = [line for line in resumed.stdout.splitlines() if "outside the plan" in line]
    assert warnings == ["warning: cells: 2 measurement files of arms or scenarios outside the plan "
                        "(arm 'st=3' scenario 'other', arm 'st=9' scenario 'chat'); left out of "
                        "the comparison"]
    assert "st=9" not in (run_dir / "report.md").read_text().split("outside the plan")[0]


@pytest.mark.slow
async def test_a_cut_stream_is_named_once_in_the_failure(tmp_path: Path, port: int):
    runner, _ = sim_runner(tmp_path, port, "--cut-stream-every", "3", arms=(3,), warmup=0)
    assert await runner.run() == "failed"
    errors = {key.id: cell.error for key, cell in runner.store.load_cells()[0].items()}
    # c1 sends requests 1-4 (the 3rd is cut), c4 requests 5-8 (the 6th is cut)
    assert errors == {f"st=3/chat/c{c}": "1 of 4 requests failed; first: RemoteProtocolError: "
                      "the server closed the stream early" for c in (1, 4)}


@pytest.mark.slow
async def test_no_restart_is_announced_when_the_server_dies_in_its_last_cell(tmp_path: Path, port: int):
    # The readiness probe, the 4 requests of `short`, then 2 of the last cell's 4, one at a time
    # and long enough to be in flight when the server dies 50 ms after the 7th request.
    cells = ('[[scenarios]]\nname = "short"\ninput_len = 64\noutput_len = 16\nconcurrencies = [1]\n'
             'num_prompts = 4\n\n[[scenarios]]\nname = "last"\ninput_len = 64\noutput_len = 512\n'
             'concurrencies = [1]\nnum_prompts = 4\n')
    runner, events = sim_runner(tmp_path, port, "--crash-after-requests", "7", arms=(3,), warmup=0,
                             speed=5, cells=cells)
    assert await runner.run() == "failed"
    cells = {key.id: cell for key, cell in runner.store.load_cells()[0].items()}
    assert cells["st=3/short/c1"].ok and "server exited" in (cells["st=3/last/c1"].error or "")
    states = [e.state for e in events.of("server_state")]
    assert "restarting" not in states and states.count("starting") == 1
    assert not [e for e in events.of("notice") if "remaining cells" in e.message]


@pytest.mark.parametrize(("error", "said"), [
    (PermissionError(errno.EACCES, "Permission denied", "/r/cells/st_3/.c__c1.json.ab12cd34.tmp"),
     "permission denied on /r/cells/st_3; the run stopped with every earlier cell kept: give "
     "your user write access there"),
    (OSError(errno.ENOSPC, "No space left on device", "/r/cells/st_3/.c__c1.json.ab12cd34.tmp"),
     "No space left on device (/r/cells/st_3); the run stopped with every earlier cell kept: "
     "free space"),
    (OSError(errno.EROFS, "Read-only file system", "/r/cells/st_3"),
     "Read-only file system (/r/cells/st_3); the run stopped with every earlier cell kept: "
     "make the file system writable"),
])
def test_a_refused_save_says_what_it_is(error: OSError, said: str):
    message = f"{save_problem(error, Path('/r'))}; the run stopped with every earlier cell kept: " \
              f"{save_advice(error)}"
    assert message == said


def _as_unprivileged() -> list[str]:
    """Root writes through chmod 555: run the CLI as nobody when this suite runs as root (CI)."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: a permission test cannot be made")
    prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    # The runner starts the simulator with its own interpreter: nobody must be able to run it
    # (not so when it lives under a 0700 /root, as a pyenv one may).
    probe = subprocess.run([*prefix, sys.executable, "-c", "import subprocess, sys; "
                            "subprocess.run([sys.executable, '-c', 'import dspark_tui'], check=True)"],
                           capture_output=True, cwd="/", timeout=30, check=False)
    if probe.returncode != 0:
        pytest.skip(f"{sys.executable} cannot start itself as an unprivileged user here")
    return prefix


@pytest.mark.slow
def test_permission_denied_while_saving_is_named_and_the_run_resumes(port: int):
    prefix = _as_unprivileged()
    folder = Path(tempfile.mkdtemp(prefix="dspark-perm-"))  # not under root's 0700 pytest tmp
    try:
        folder.chmod(0o777)
        plan = write_sim_plan(folder, port, arms=(3,), speed=2, warmup=0, cells=slow_cells())
        plan.chmod(0o644)
        results = folder / "results"
        env = {**os.environ, "DSPARK_CONFIG_DIR": str(folder / "cfg"), "HOME": str(folder)}
        run = [*prefix, *CLI, "run", str(plan), "--headless", "--results", str(results)]
        proc = subprocess.Popen(run, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                stdin=subprocess.DEVNULL, env=env)
        with reaped(proc):
            deadline = time.monotonic() + 60
            while not list(results.glob("*/cells/st_3/slow__c1__r1p1.json")):
                assert time.monotonic() < deadline and proc.poll() is None, "no first cell"
                time.sleep(0.1)
            (cells,) = results.glob("*/cells/st_3")
            cells.chmod(0o555)  # the next save is refused
            out, _ = proc.communicate(timeout=60)
        assert proc.returncode != 0 and "Traceback" not in out, out
        assert f"permission denied on {cells}; the run stopped with every earlier cell kept: " \
               "give your user write access there, then dspark-tui run --resume" in out
        assert "free space" not in out
        cells.chmod(0o755)
        resumed = subprocess.run([*prefix, *CLI, "run", "--resume", str(cells.parent.parent),
                                  "--headless"], capture_output=True, text=True, env=env,
                                 stdin=subprocess.DEVNULL, timeout=90, check=False)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert len(list(cells.glob("*.json"))) == 4
    finally:
        shutil.rmtree(folder, ignore_errors=True)
