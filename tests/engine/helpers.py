"""Plans and small utilities shared by the engine tests."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dspark_tui.model import Plan
from dspark_tui.model.events import Event
from tests.cli import run_cli
from tests.plan_text import scenario_table, spec_token_arms

if TYPE_CHECKING:
    from dspark_tui.engine.run.runner import Runner

FAKES = Path(__file__).resolve().parent.parent / "fakes"
FAKE_SERVER = FAKES / "fake_server_http.py"


def fake_server_plan(port: int, *flags: str, **server: Any) -> Plan:
    """A one-arm plan whose server is tests/fakes/fake_server_http.py with the given flags."""
    return Plan.model_validate({
        "name": "fake",
        "model": "fake-model",
        "server": {
            "command": [sys.executable, str(FAKE_SERVER), "--port", "{port}", *flags],
            "port": port,
            "startup_timeout_s": server.pop("startup_timeout_s", 10),
            "stop_timeout_s": server.pop("stop_timeout_s", 2),
            **server,
        },
        "arms": [{"name": "a=1", "vars": {}}],
        "bench": {"warmup_requests": 0, "scrape_interval_s": 0.2, "rounds": 1,
                  "adaptive_rounds": 0},
        "scenarios": [{"name": "s", "input_len": 8, "output_len": 4, "concurrencies": [1],
                       "num_prompts": 1}],
    })


class Recorder:
    """A subscriber that keeps every event, for assertions."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.kind == kind]


# The one small grid most engine tests measure: two cells of about 0.1 s each at --speed 50.
CHAT_SCENARIO = scenario_table("chat", 64, 32, [1, 4], 4)


def sim_server_table(port: int, speed: float, *, k_args: str = "", tail: str = ', "{speculative}"',
                     **server: Any) -> str:
    """A plan's `[server]` table that starts the simulator. `k_args` say an arm's K by a flag
    (`"--spec-tokens", "{spec_tokens}", `); by default the arm's speculative table reaches it
    as `{speculative}` after the speed (`tail`: what ends the command)."""
    server = {"startup_timeout_s": 20, "stop_timeout_s": 3, **server}
    extra = "".join(f"{k} = {v}\n" for k, v in server.items())
    return f"""[server]
command = ["{{python}}", "-m", "dspark_tui.sim", "serve", "{{model}}", "--host", "{{host}}",
           "--port", "{{port}}", {k_args}"--speed", "{speed}"{tail}]
port = {port}
{extra}"""


def sim_plan_text(port: int, *sim_flags: str, arms: tuple[int, ...] = (3, 5), speed: float = 50,
                  warmup: int = 2, cells: str | None = None, rounds: int = 1, repeats: int = 1,
                  adaptive_rounds: int = 0, parallel: int = 1, **server: Any) -> str:
    """A plan TOML against the simulator; `cells` replaces the default one-scenario grid. One
    round, one repeat, no adaptive round unless a test is about them."""
    flags = "".join(f', "{f}"' for f in sim_flags)
    scenarios = cells or CHAT_SCENARIO
    return f"""name = "enginetest"
model = "test-model"
backend_label = "simulator"

{sim_server_table(port, speed, k_args='"--spec-tokens", "{spec_tokens}", ', tail=flags, **server)}
{spec_token_arms(arms)}[bench]
driver = "native"
warmup_requests = {warmup}
cell_timeout_s = 30
scrape_interval_s = 0.2
rounds = {rounds}
repeats = {repeats}
adaptive_rounds = {adaptive_rounds}
{f"parallel = {parallel}" if parallel > 1 else ""}
{scenarios}"""


def write_sim_plan(folder: Path, port: int, *sim_flags: str, **kwargs: Any) -> Path:
    path = folder / "plan.toml"
    path.write_text(sim_plan_text(port, *sim_flags, **kwargs))
    return path


def headless_run(plan: Path, results: Path, *extra: str, timeout: float) -> Path:
    """`dspark-tui run PLAN --headless --results RESULTS *extra` to a clean exit: the one run
    directory it made."""
    done = run_cli("run", str(plan), *extra, "--headless", "--results", str(results), timeout=timeout)
    assert done.returncode == 0, done.stdout + done.stderr
    (run_dir,) = list(results.iterdir())
    return run_dir


def stated_sweep(folder: Path, plan: Path, truth: dict[str, dict[int, float]], scenario: str,
                 schedule: dict[str, Any] | None = None) -> Path:
    """A finished K sweep of `plan` as its run leaves it for `run --verify`, its measurements
    stated instead of measured: run.json (the plan's, completed), one cell file a measurement
    (tests/report/k_sweep_builders.py `stated_cells`: arm -> concurrency -> Total tok/s, in the
    plan's rounds, with the running batch read 40 times at the client's concurrency, as a
    closed loop without a queue holds it), and schedule.json as the product computes it from
    those files, or `schedule` as the test states it. What it recommends is the truth's (or the
    test's), on any machine at any load."""
    import json

    from dspark_tui.model import ServerSummary, load_plan
    from dspark_tui.results import RunStore, load_run, manifest_for_plan
    from tests.report.k_sweep_builders import finished_sweep, stated_cells

    loaded = load_plan(plan)
    folder.mkdir(parents=True)
    store = RunStore(folder)
    manifest = manifest_for_plan(loaded, plan_source=str(plan))
    for cell in stated_cells(truth, scenario, rounds=loaded.bench.rounds):
        c = cell.concurrency
        store.save_cell(cell.model_copy(update={"server": ServerSummary(
            samples=40, running_mean=c, running_peak=c, running_steady=c, running_samples=40)}))
    if schedule is None:
        store.write_manifest(manifest)
        return finished_sweep(load_run(folder))
    manifest.status = "completed"
    store.write_manifest(manifest)
    (folder / "schedule.json").write_text(json.dumps(schedule))
    return folder


def sim_runner(tmp_path: Path, port: int, *flags: str, **kwargs: Any) -> tuple[Runner, Recorder]:
    """A Runner of a simulator plan (sim_plan_text's keywords) in tmp_path/results, with a
    Recorder subscribed to its events."""
    from dspark_tui.engine.run.runner import Runner, prepare_run
    from dspark_tui.model import load_plan

    plan = load_plan(write_sim_plan(tmp_path, port, *flags, **kwargs))
    runner = Runner(plan, prepare_run(plan, tmp_path / "results"), gpu=None, charts=False)
    recorder = Recorder()
    runner.subscribe(recorder)
    return runner, recorder
