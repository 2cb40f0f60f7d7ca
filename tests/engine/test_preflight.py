"""Preflight: a run that cannot start on this machine is refused before any run directory exists,
one line a problem; a run that can start is told only what it should know."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dspark_tui.engine.checks import preflight as pf
from dspark_tui.engine.checks.preflight import Note, Problem, check_plan
from dspark_tui.engine.run.runner import Runner, prepare_run
from dspark_tui.engine.servers.server_record import ServerRecord, write_record
from dspark_tui.model import Plan
from dspark_tui.plans import resolve_plan
from dspark_tui.results import RunStore, manifest_for_plan
from tests.cli import run_cli
from tests.engine.helpers import Recorder, fake_server_plan

REAL_PLAN = "dspark-st3-vs-st5"


def _cli(*args: str, path: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The CLI with PATH narrowed to `path`: no vllm, no `python`, whatever this box has."""
    return run_cli(*args, timeout=120, env={"PATH": path}, cwd=cwd)


@pytest.mark.parametrize("mode", [["--headless"], ["--detach"], []])  # [] is the TUI's start
def test_the_shipped_real_plan_is_refused_one_line_a_missing_piece_and_creates_nothing(
        tmp_path: Path, mode: list[str]):
    if Path(resolve_plan(REAL_PLAN)[0].model).exists():
        pytest.skip("this machine has the real plan's model")
    empty = tmp_path / "bin"
    empty.mkdir()
    results = tmp_path / "results"
    done = _cli("run", REAL_PLAN, *mode, "--results", str(results), path=str(empty), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.splitlines()
    assert all(line.startswith("dspark-tui: error: ") for line in lines), done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    problems = [line.removeprefix("dspark-tui: error: ") for line in lines]
    assert problems[:3] == [
        "server.command[0]: 'vllm' is not on PATH; install the server or give its full path "
        "in the plan",
        "bench.python: 'python' is not on PATH; set bench.python to the interpreter that has "
        "sglang installed",
        "model: /data/models/DeepSeek-V4-Flash-DSpark does not exist on this machine; fix "
        "`model` in the plan or copy the weights there",
    ]
    assert all(p.startswith("port 8000") for p in problems[3:])  # only if this box holds 8000
    assert not results.exists()  # no run directory, so no junk run in History


def test_plan_check_preflight_lists_the_problems_and_passes_a_simulator_plan(tmp_path: Path):
    empty = tmp_path / "bin"
    empty.mkdir()
    real = _cli("plan", "check", REAL_PLAN, "--preflight", path=str(empty), cwd=tmp_path)
    assert real.returncode == 2, real.stderr
    assert "a run of this plan would not start" in real.stdout
    assert "server.command[0]: 'vllm' is not on PATH" in real.stderr
    demo = _cli("plan", "check", "demo", "--preflight", "--results", str(tmp_path / "r"),
                path=os.environ["PATH"], cwd=tmp_path)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert demo.stderr == ""
    assert ("preflight: note: GPUs: not checked; the server is the simulator, which uses none"
            in demo.stdout)
    assert "preflight: ok" in demo.stdout


# -- the checks one by one, in this process ---------------------------------------------------

def _plan(tmp_path: Path, *, env: dict[str, str] | None = None, model: str | None = None,
          command: list[str] | None = None, **bench: Any) -> Plan:
    weights = tmp_path / "weights"
    weights.mkdir(exist_ok=True)
    return Plan.model_validate({
        "name": "pf", "model": model or str(weights),
        "server": {"command": command or [sys.executable, "-c", "pass", "{model}"], "port": 0,
                   "env": env or {}},
        "arms": [{"name": "a", "vars": {}}],
        "bench": {"driver": "native", **bench},
        "scenarios": [{"name": "s", "input_len": 8, "output_len": 4, "concurrencies": [1],
                       "num_prompts": 1}],
    })


def test_a_missing_model_path_is_a_problem_and_a_hugging_face_id_a_note(tmp_path: Path):
    missing = check_plan(_plan(tmp_path, model=str(tmp_path / "nowhere")), [])
    assert [p.check for p in missing.problems] == ["model"]
    hub = check_plan(_plan(tmp_path, model="deepseek-ai/DeepSeek-V4"), [])
    assert not hub.problems
    assert any("Hugging Face id, not checked (offline)" in n.message for n in hub.notes)


def test_a_server_binary_given_by_path_must_be_executable(tmp_path: Path):
    script = tmp_path / "serve.sh"
    script.write_text("#!/bin/sh\n")
    result = check_plan(_plan(tmp_path, command=[str(script), "{model}"]), [])
    assert [p.message for p in result.problems] == [
        f"server.command[0]: {str(script)!r} is not an executable file; install the server or "
        "give its full path in the plan"]
    script.chmod(0o755)
    assert not check_plan(_plan(tmp_path, command=[str(script), "{model}"]), []).problems


def test_the_server_binary_is_looked_up_on_the_servers_own_path(tmp_path: Path):
    (tmp_path / "sbin").mkdir()
    server = tmp_path / "sbin" / "my-server"
    server.write_text("#!/bin/sh\n")
    server.chmod(0o755)
    plan = _plan(tmp_path, command=["my-server"], env={"PATH": str(tmp_path / "sbin")})
    assert not check_plan(plan, []).problems


def test_the_disk_check_weighs_the_plans_expected_output(tmp_path: Path):
    root = tmp_path / "results" / "not-yet"  # created with the run: its parent's disk counts
    assert pf.check_disk(_plan(tmp_path), root) == []
    plan = _plan(tmp_path)
    free = shutil.disk_usage(tmp_path).free
    scenario = plan.scenarios[0]
    # Enough prompts that their raw lines alone outgrow this disk.
    huge = plan.model_copy(update={"scenarios": [scenario.model_copy(
        update={"num_prompts": free // 50, "concurrencies": [1, 2, 4, 8]})]})
    (problem,) = pf.check_disk(huge, root)
    assert problem.check == "disk" and "not enough disk space" in problem.message
    assert str(tmp_path) in problem.message and "--results" in problem.message


# -- the bench client: a real interpreter asked to import it ----------------------------------

def _shim(tmp_path: Path) -> Path:
    shim = tmp_path / "shim"
    (shim / "sglang").mkdir(parents=True)
    (shim / "sglang" / "__init__.py").write_text("")
    (shim / "sglang" / "bench_serving.py").write_text("")
    return shim


@pytest.mark.slow
def test_the_sglang_client_must_import_in_bench_python(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch):
    pf._imports.cache_clear()
    plan = _plan(tmp_path, driver="sglang", python=sys.executable)
    (problem,) = check_plan(plan, []).problems
    assert problem.message.startswith(f"bench.python: {sys.executable} cannot import "
                                      "sglang.bench_serving (ModuleNotFoundError: No module named")
    monkeypatch.setenv("PYTHONPATH", str(_shim(tmp_path)))
    pf._imports.cache_clear()
    assert not check_plan(plan, []).problems


@pytest.mark.slow
def test_the_vllm_client_must_resolve_and_import(tmp_path: Path):
    pf._imports.cache_clear()
    missing = check_plan(_plan(tmp_path, driver="vllm", vllm_executable="no-such-vllm"), [])
    assert [p.message.split(":")[0] for p in missing.problems] == ["bench.vllm_executable"]
    script = tmp_path / "vllm"
    script.write_text(f"#!{sys.executable}\nimport vllm\n")
    script.chmod(0o755)
    (problem,) = check_plan(_plan(tmp_path, driver="vllm", vllm_executable=str(script)), []).problems
    assert "cannot import vllm (ModuleNotFoundError" in problem.message


# -- the GPUs, through a stand-in nvidia-smi --------------------------------------------------

def _fake_smi(folder: Path, busy_pid: int, used_mib: tuple[int, int] = (3, 70123)) -> None:
    """Two GPUs; GPU 1 runs `busy_pid`."""
    folder.mkdir(exist_ok=True)
    path = folder / "nvidia-smi"
    path.write_text(f"""#!/bin/sh
case "$*" in
  *--query-gpu=index,*) printf '0, GPU-aaaa, NVIDIA H100, {used_mib[0]}, 0\\n'
                        printf '1, GPU-bbbb, NVIDIA H100, {used_mib[1]}, 97\\n' ;;
  *--query-gpu=*) printf '0, 3, 60\\n97, 70123, 400\\n' ;;
  *--query-compute-apps=gpu_uuid,pid*) printf 'GPU-bbbb, {busy_pid}\\n' ;;
  *) exit 9 ;;
esac
""")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    try:
        import pynvml  # noqa: F401

        pytest.skip("nvidia-ml-py is installed; NVML would be asked, not the stand-in")
    except ImportError:
        pass
    folder = tmp_path / "smi"
    _fake_smi(folder, os.getpid())
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return folder


def _gpu_findings(plan: Plan, roots: list[Path] | None = None) -> list[Problem | Note]:
    result = check_plan(plan, roots or [])
    return [f for f in [*result.problems, *result.notes] if f.check == "gpu"]


@pytest.mark.parametrize(("visible", "busy"), [
    (None, True), ("0", False), ("1", True), ("GPU-bbbb", True), ("GPU-aaaa", False)])
def test_the_gpus_the_server_will_use_must_be_idle(tmp_path: Path, smi: Path, visible: str | None,
                                                   busy: bool):
    env = {"CUDA_VISIBLE_DEVICES": visible} if visible is not None else {}
    findings = _gpu_findings(_plan(tmp_path, env=env))
    if not busy:
        assert findings == []
        return
    (problem,) = findings
    assert isinstance(problem, Problem)
    assert problem.message.startswith(f"GPU 1 (NVIDIA H100) is busy: pid {os.getpid()} (")
    assert "CUDA_VISIBLE_DEVICES in [server.env]" in problem.message


def test_a_gpu_this_machine_does_not_have_and_memory_held_by_an_unseen_process(
        tmp_path: Path, smi: Path):
    (problem,) = _gpu_findings(_plan(tmp_path, env={"CUDA_VISIBLE_DEVICES": "7"}))
    assert problem.message == ("CUDA_VISIBLE_DEVICES names GPU '7', which this machine does not "
                               "have (it has 0, 1)")
    _fake_smi(smi, busy_pid=0, used_mib=(20480, 3))  # no process listed, 20 GiB taken on GPU 0
    (held,) = _gpu_findings(_plan(tmp_path, env={"CUDA_VISIBLE_DEVICES": "0"}))
    assert "GPU 0 (NVIDIA H100) is busy: 20,480 MiB in use by a process this user cannot see" in held.message


def test_no_gpu_tools_is_one_note(no_gpu_tools: Path):
    (note,) = _gpu_findings(_plan(no_gpu_tools))
    assert isinstance(note, Note) and not note.warning
    assert note.message.startswith("GPUs: not checked (neither NVML")


def _live_run(root: Path, plan: Plan) -> Path:
    """A run directory whose runner is this test process: alive by the pid + heartbeat rule."""
    store = RunStore.create(root, manifest_for_plan(plan))
    manifest = store.read_manifest()
    manifest.status = "running"
    manifest.runner_pid = os.getpid()
    store.write_manifest(manifest)
    (store.path / "heartbeat").touch()
    return store.path


def test_a_second_run_on_the_gpus_of_a_live_one_is_warned_naming_it(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no GPU tools: the warning needs none
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    root = tmp_path / "results"
    running = _live_run(root, _plan(tmp_path, env={"CUDA_VISIBLE_DEVICES": "0,1"}))
    (warning,) = [f for f in _gpu_findings(_plan(tmp_path, env={"CUDA_VISIBLE_DEVICES": "1,2"}),
                                           [root]) if isinstance(f, Note) and f.warning]
    assert warning.message == (f"GPUs 1 are also used by the live run pf ({running}, runner pid "
                               f"{os.getpid()}); measurements of both runs will disturb each other")
    apart = _gpu_findings(_plan(tmp_path, env={"CUDA_VISIBLE_DEVICES": "2,3"}), [root])
    assert not [f for f in apart if isinstance(f, Note) and f.warning]
    # the run being resumed is no rival of itself
    itself = check_plan(_plan(tmp_path, env={"CUDA_VISIBLE_DEVICES": "1"}), [root], exclude=running)
    assert not itself.warnings


def test_a_gpu_busy_with_a_live_runs_server_names_that_run(tmp_path: Path, smi: Path):
    root = tmp_path / "results"
    running = _live_run(root, _plan(tmp_path))
    write_record(running, ServerRecord(arm="a", pid=os.getpid(), pgid=os.getpid(), create_time=0.0,
                                       token="t", host="127.0.0.1", port=8000))
    (problem,) = [f for f in _gpu_findings(_plan(tmp_path), [root]) if isinstance(f, Problem)]
    assert problem.message.startswith(f"GPU 1 (NVIDIA H100) is busy: pid {os.getpid()}, the "
                                      f"server of the live run pf ({running}); ")


async def test_the_runner_tells_its_watchers_whose_gpus_it_shares(tmp_path: Path, port: int,
                                                                 monkeypatch: pytest.MonkeyPatch):
    """The warning reaches every view (run screen, printer, attach) as a notice event."""
    monkeypatch.setenv("PATH", str(tmp_path))  # no GPU tools: the warning needs none
    rivals = tmp_path / "rivals"
    running = _live_run(rivals, _plan(tmp_path, env={"CUDA_VISIBLE_DEVICES": "0"}))
    plan = fake_server_plan(port, env={"CUDA_VISIBLE_DEVICES": "0"})
    runner = Runner(plan, prepare_run(plan, tmp_path / "results"), gpu=None, charts=False,
                    other_roots=[rivals])
    recorder = Recorder()
    runner.subscribe(recorder)
    await runner.run()  # the fake server serves no real cell; the start is what counts here
    warnings = [e.message for e in recorder.of("notice") if e.level == "warning"]
    assert f"GPUs 0 are also used by the live run pf ({running}, runner pid {os.getpid()}); " \
           "measurements of both runs will disturb each other" in warnings


async def test_the_apps_start_shows_every_problem_in_a_dialog_that_stays_and_creates_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Issue 23: a dialog, not a notice gone in seconds; it lists every problem, says that
    nothing started, and is still there when a notice would have gone."""
    from dspark_tui.tui.screens.plan_picker import StartRequest
    from dspark_tui.tui.screens.refusal import NOTHING_STARTED, RefusalScreen
    from tests.tui.helpers import make_app, screen_text, wait_until

    if Path(resolve_plan(REAL_PLAN)[0].model).exists():
        pytest.skip("this machine has the real plan's model")
    monkeypatch.setenv("PATH", str(tmp_path))
    app = make_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        app.start_run(StartRequest(plan=REAL_PLAN))
        await wait_until(pilot, lambda: isinstance(app.screen, RefusalScreen), timeout=30,
                         what="the refusal")
        refusal = app.screen
        assert isinstance(refusal, RefusalScreen)
        text = screen_text(app)
        assert f"Not started: {REAL_PLAN}" in text and "Nothing was started" in text, text
        assert NOTHING_STARTED.startswith("Nothing was started: no server, no run directory.")
        assert "'vllm' is not on PATH" in text and "does not exist on this" in text, text
        await pilot.press("j", "k", "tab")  # keys that are no answer leave it standing
        await pilot.pause(0.5)
        assert app.screen is refusal
        assert refusal.problems[:3] == [
            "server.command[0]: 'vllm' is not on PATH; install the server or give its full "
            "path in the plan",
            "bench.python: 'python' is not on PATH; set bench.python to the interpreter that "
            "has sglang installed",
            "model: /data/models/DeepSeek-V4-Flash-DSpark does not exist on this machine; fix "
            "`model` in the plan or copy the weights there",
        ]
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, RefusalScreen), what="closed")
    assert not (tmp_path / "results").exists()
