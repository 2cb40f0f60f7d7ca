"""Arms whose server something else runs (`url = "http://host:port"`): the test starts the
simulators itself, as their owner would; dspark-tui checks them, measures them, records what they
say about themselves and leaves them running."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from dspark_tui.engine.start.launch import RunnerProcess
from dspark_tui.model import PlanError, parse_plan
from dspark_tui.results import RunStore, load_run
from tests.cli import run_cli, slow_cells, wait_for
from tests.engine.helpers import CHAT_SCENARIO
from tests.simulator import running_sim, stop_process_group, wait_ready


def _plan_text(*urls: str, model: str = "test-model", rounds: int = 2, extra: str = "") -> str:
    arms = "".join(f'[[arms]]\nname = "K={k}"\nvars = {{ spec_tokens = {k} }}\nurl = "{url}"\n\n'
                   for k, url in zip((3, 5), urls, strict=True))
    return f"""name = "external"
model = "{model}"
backend_label = "vllm run by someone else"
{extra}
{arms}[bench]
driver = "native"
warmup_requests = 2
cell_timeout_s = 30
scrape_interval_s = 0.2
rounds = {rounds}
repeats = 1
adaptive_rounds = 0

{CHAT_SCENARIO}"""


def _run(plan: Path, results: Path) -> subprocess.CompletedProcess[str]:
    return run_cli("run", str(plan), "--headless", "--results", str(results), "--lang", "en",
                   timeout=120)


@contextlib.contextmanager
def bare_endpoint(port: int) -> Iterator[str]:
    """tests/fakes/bare_endpoint.py serving on `port` (no /metrics), its url while it lives."""
    fake = Path(__file__).resolve().parent.parent / "fakes" / "bare_endpoint.py"
    proc = subprocess.Popen([sys.executable, str(fake), "--port", str(port), "--model", "test-model"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(proc, url, 20.0, Path(os.devnull))
        yield url
    finally:
        stop_process_group(proc)


def test_two_external_simulators_are_measured_recorded_and_left_running(tmp_path: Path):
    with running_sim(spec_tokens=3) as k3, running_sim(spec_tokens=5) as k5:
        plan = tmp_path / "plan.toml"
        plan.write_text(_plan_text(k3.url, k5.url + "/"))
        done = _run(plan, tmp_path / "results")
        assert done.returncode == 0, done.stdout + done.stderr

        # Nothing was stopped: both still serve after the run.
        for sim in (k3, k5):
            assert sim.proc.poll() is None
            assert httpx.get(sim.url + "/health", timeout=5).status_code == 200

    (run_dir,) = list((tmp_path / "results").iterdir())
    run = load_run(run_dir)
    assert run.manifest.status == "completed" and not run.problems
    assert len(run.ok_cells()) == 4
    # No server of ours: no record for a resume to clean up, no log of ours.
    assert not (run_dir / "server.json").exists() and not (run_dir / "servers").exists()
    assert not list(run_dir.glob("logs/*"))

    # run.json: what each server said about itself.
    manifest = json.loads((run_dir / "run.json").read_text())
    servers = {arm["name"]: arm["external_server"] for arm in manifest["arms"]}
    assert servers["K=3"]["url"] == k3.url and servers["K=5"]["url"] == k5.url
    for server in servers.values():
        assert server["version"] == "0.33.0"
        assert server["info"]["vllm:cache_config_info"]["block_size"] == "16"

    # One server session per arm across both rounds: rounds are no sessions here.
    sessions = {(m.arm, m.session) for m in run.measurements}
    assert sessions == {("K=3", "ext-K_3"), ("K=5", "ext-K_5")}
    assert {m.round for m in run.measurements} == {1, 2}

    analysis = json.loads((run_dir / "analysis.json").read_text())
    assert analysis["session_replication"] is False
    assert analysis["unreplicated_arms"] == ["K=3", "K=5"]
    assert analysis["session_noise"] == "within-session only"
    assert [n["session_replication"] for n in analysis["noise"]] == [False]

    report = (run_dir / "report.en.md").read_text()
    assert "paired t intervals over 2 rounds per arm" in report  # not "server sessions"
    assert "No session replication: the server of `K=3`, `K=5` was not restarted between rounds" in report
    assert f"- External server `K=3`: {k3.url}, vLLM 0.33.0" in report
    assert "(not started or stopped by dspark-tui)" in report


def test_a_url_that_does_not_serve_the_plan_model_is_refused_before_any_run_directory(tmp_path: Path):
    with running_sim(spec_tokens=3) as right, running_sim(spec_tokens=5, model="other-model") as wrong:
        plan = tmp_path / "plan.toml"
        plan.write_text(_plan_text(right.url, wrong.url))
        done = _run(plan, tmp_path / "results")
        assert wrong.proc.poll() is None and right.proc.poll() is None

    assert done.returncode == 2, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.strip()]
    assert errors == [f'dspark-tui: error: arms["K=5"].url: {wrong.url}/v1/models serves '
                      "'other-model', not 'test-model' (the plan's model, or "
                      "server.served_model_name)"], done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "results").exists() or not list((tmp_path / "results").iterdir())


def test_a_url_nobody_serves_is_one_line_naming_the_arm(tmp_path: Path, port: int):
    with running_sim(spec_tokens=3) as k3:
        plan = tmp_path / "plan.toml"
        plan.write_text(_plan_text(k3.url, f"http://127.0.0.1:{port}"))
        done = _run(plan, tmp_path / "results")
    assert done.returncode == 2
    (line,) = [line for line in done.stderr.splitlines() if line.strip()]
    assert line.startswith(f'dspark-tui: error: arms["K=5"].url: http://127.0.0.1:{port}/health '
                           "did not answer")


# -- the plan ---------------------------------------------------------------------------------

def test_an_all_external_plan_needs_no_server_table():
    plan = parse_plan(_plan_text("http://10.0.0.5:8000/", "https://gpu-box.example"))
    assert [arm.url for arm in plan.arms] == ["http://10.0.0.5:8000", "https://gpu-box.example"]
    assert plan.local_arms() == [] and plan.server_argv(plan.arms[0]) == []


def test_a_plan_mixing_both_kinds_needs_the_command_for_the_arm_it_starts():
    text = _plan_text("http://10.0.0.5:8000", "http://10.0.0.6:8000").replace(
        'url = "http://10.0.0.6:8000"\n', "")
    with pytest.raises(PlanError, match=r"server\.command is required: arm 'K=5' gives no url"):
        parse_plan(text)
    mixed = parse_plan(text.replace('backend_label = "vllm run by someone else"\n',
                                    'backend_label = "x"\n[server]\ncommand = ["vllm", "serve", '
                                    '"{model}", "--spec-tokens", "{spec_tokens}"]\n'))
    assert [a.name for a in mixed.local_arms()] == ["K=5"]
    assert mixed.server_argv(mixed.arms[0]) == []


@pytest.mark.parametrize(("url", "message"), [
    ("10.0.0.5:8000", "is not an http:// or https:// address"),
    ("http://user:secret@10.0.0.5:8000", "an API key goes in bench.api_key"),
    ("http://10.0.0.5:8000/v1", "without /v1"),
    ("http://10.0.0.5:99999", "invalid port"),
])
def test_a_bad_url_is_one_line_naming_the_arm(url: str, message: str):
    with pytest.raises(PlanError) as caught:
        parse_plan(_plan_text(url, "http://10.0.0.6:8000"), "plan.toml")
    text = str(caught.value)
    assert text.startswith('plan.toml:8: arms["K=3"].url: ') and message in text
    assert "\n" not in text and "secret" not in text  # a password is never echoed


def test_an_endpoint_without_metrics_is_a_warning_not_a_refusal(tmp_path: Path, port: int):
    with bare_endpoint(port) as url, running_sim(spec_tokens=5) as k5:
        plan = tmp_path / "plan.toml"
        plan.write_text(_plan_text(url, k5.url))
        done = run_cli("plan", "check", str(plan), "--preflight", "--results",
                       str(tmp_path / "results"), timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (f'preflight: warning: arms["K=3"].url: {url}/metrics answered 404; the run goes on '
            "without server evidence (acceptance, KV cache, preemptions)") in done.stdout
    assert 'arms["K=5"]' not in done.stdout  # the simulator's /metrics answers
    assert "preflight: ok" in done.stdout
    assert "server starts: 0 planned" in done.stdout


def test_kill_9_then_resume_has_no_server_to_stop_and_finishes_on_the_same_servers(tmp_path: Path):
    with running_sim(spec_tokens=3, speed=2) as k3, running_sim(spec_tokens=5, speed=2) as k5:
        text = _plan_text(k3.url, k5.url, rounds=1).split("[[scenarios]]")[0] + slow_cells((1, 2, 3))
        plan = tmp_path / "plan.toml"
        plan.write_text(text.replace("warmup_requests = 2", "warmup_requests = 0"))
        runner = RunnerProcess.start(str(plan), results_root=tmp_path / "results", detach=True)
        run_dir = runner.run_dir
        try:
            # At least two: exactly two lasts one cell (0.5 s), and a poll stalled past it (a
            # loaded box) never saw it again and timed out.
            wait_for(lambda: [e.kind for e in RunStore(run_dir).read_events()].count(
                "cell_started") >= 2, what="the second cell")
            os.kill(runner.pid, signal.SIGKILL)
            runner.wait(5)
            assert not (run_dir / "server.json").exists()
            resumed = run_cli("run", "--resume", str(run_dir), "--headless", timeout=120)
        finally:
            runner.stop(timeout=5)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert "stopped the server left by" not in resumed.stdout
        for sim in (k3, k5):
            assert sim.proc.poll() is None
            assert httpx.get(sim.url + "/health", timeout=5).status_code == 200
    run = load_run(run_dir)
    assert run.manifest.status == "completed" and len(run.ok_cells()) == 6
    assert {m.session for m in run.measurements} == {"ext-K_3", "ext-K_5"}


def test_the_sglang_driver_is_refused_a_url_it_cannot_reach_by_host_and_port():
    from dspark_tui.engine.checks.preflight import check_endpoints

    text = _plan_text("http://127.0.0.1:9/gateway", "https://127.0.0.1:9").replace(
        'driver = "native"', 'driver = "sglang"')
    messages = [str(f) for f in check_endpoints(parse_plan(text))]
    assert messages == [f'arms["{arm}"].url: the sglang driver reaches a server by host and port '
                        'only; for https or a path prefix use bench.driver = "native" or "vllm"'
                        for arm in ("K=3", "K=5")]


def test_an_endpoint_without_metrics_is_warned_of_once_over_both_rounds(tmp_path: Path, port: int):
    with bare_endpoint(port) as url, running_sim(spec_tokens=5) as k5:
        plan = tmp_path / "plan.toml"
        plan.write_text(_plan_text(url, k5.url, rounds=2))
        done = _run(plan, tmp_path / "results")
    # Its cells fail (the bare endpoint streams no text): what matters is what was told.
    (run_dir,) = (tmp_path / "results").iterdir()
    assert "round 2" in done.stdout, done.stdout + done.stderr
    notices = [event["message"] for line in (run_dir / "events.jsonl").read_text().splitlines()
               if (event := json.loads(line)).get("kind") == "notice"]
    warned = [n for n in notices if n.startswith("server evidence incomplete")]
    assert warned == [f"server evidence incomplete for K=3 (first failure: {url}/metrics answered "
                      "HTTP 404); cells without it report server metrics as not measured (told once "
                      "an arm)"], notices
    counted = [n for n in notices if "brought no server evidence this session" in n]
    # Told at the end of each K=3 session whose scrape came back (a gap sample): a session whose
    # warmup failed before its first scrape answered stopped that scrape and counted none (seen
    # on CI in round 2), and "0 of 0" is not said.
    sessions, arm = [], None
    for line in (run_dir / "events.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event.get("kind") == "session_started":
            arm = event["arm"]
            sessions.append([arm, 0])
        elif event.get("kind") == "metrics_sample" and event.get("gap") and event["arm"] == "K=3":
            assert arm == "K=3", event  # one session at a time: its samples fall inside it
            sessions[-1][1] += 1
    scraped = [gaps for name, gaps in sessions if name == "K=3" and gaps]
    assert [name for name, _ in sessions].count("K=3") == 2, sessions
    assert len(scraped) >= 1, sessions
    assert [n.split(" scrapes")[0] for n in counted] == [f"K=3: {g} of {g}" for g in scraped], counted
