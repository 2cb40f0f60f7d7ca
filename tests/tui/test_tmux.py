"""The real `dspark-tui` in a real terminal (tmux): what a person over SSH would see and do.

Each test runs its own tmux server on a private socket and kills it, so nothing is left behind.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.cli import attach_and_resume, hold_paused
from tests.simulator import demo_plan_text

pytestmark = [pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
              pytest.mark.timeout(90)]
RECORDED = Path(__file__).parent / "data" / "demo_run"


class Tmux:
    def __init__(self, socket: str) -> None:
        self.socket = socket

    def __call__(self, *args: str, check: bool = True) -> str:
        result = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True,
                                text=True, timeout=10, check=check)
        return result.stdout

    def start(self, command: list[str], env: dict[str, str], size: tuple[int, int] = (100, 30)) -> None:
        exports = " ".join(f"{k}={v}" for k, v in env.items())
        self("new-session", "-d", "-s", "app", "-x", str(size[0]), "-y", str(size[1]),
             f"env -u COLUMNS -u LINES {exports} {' '.join(command)}")

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "app", check=False)

    def alive(self) -> bool:
        return subprocess.run(["tmux", "-L", self.socket, "has-session", "-t", "app"],
                              capture_output=True, timeout=10).returncode == 0

    def wait_for(self, text: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.2)
        raise AssertionError(f"{text!r} never appeared; the screen was:\n{screen}")


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    session = Tmux(f"dspark-test-{uuid.uuid4().hex[:8]}")
    yield session
    session("kill-server", check=False)


def app_env(tmp_path: Path) -> dict[str, str]:
    return {"DSPARK_CONFIG_DIR": str(tmp_path / "config"), "DSPARK_RESULTS_ROOT": str(tmp_path / "results"),
            "TERM": "screen", "DSPARK_TEST_SESSION": os.environ["DSPARK_TEST_SESSION"],
            "HOME": str(tmp_path)}


def test_real_app_in_tmux_replays_a_run_and_quits_with_q(tmux: Tmux, tmp_path: Path):
    run_dir = tmp_path / "results" / "demo_run"
    shutil.copytree(RECORDED, run_dir)
    tmux.start([sys.executable, "-m", "dspark_tui", "attach", str(run_dir)], app_env(tmp_path))
    screen = tmux.wait_for("cells 10/10")
    assert "[completed]" in screen and "✓ c128" in screen and "Winner" in screen
    tmux("send-keys", "-t", "app", "escape")
    screen = tmux.wait_for("History — 2 runs")
    row = next(line for line in screen.splitlines() if " demo " in line)
    assert "completed" in row and "10/10" in row and "dspark_st_comparison" in screen
    tmux("send-keys", "-t", "app", "q")
    deadline = time.monotonic() + 10
    while tmux.alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not tmux.alive(), tmux.screen()


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_lost_terminal_hands_the_run_off_and_attach_finds_it(tmux: Tmux, tmp_path: Path):
    """The SSH session drops (the tmux server dies: SIGHUP to the app): by default the run goes
    on, detached, `dspark-tui attach` finds it while it runs, and it completes."""
    plan = tmp_path / "slow-demo.toml"
    plan.write_text(demo_plan_text("4"))
    tmux.start([sys.executable, "-m", "dspark_tui", "run", str(plan), "--scenarios", "chat_short"],
               app_env(tmp_path))
    tmux.wait_for("cell 1/", timeout=40)
    run_dir = next((tmp_path / "results").glob("demo_*"))
    runner_pid = json.loads((run_dir / "run.json").read_text())["runner_pid"]
    events = run_dir / "events.jsonl"
    # Held paused between cells until attach has picked it: left going, the run's last 3-6 s
    # after the hand-off were all the time attach had to start, and one 6 s late (a loaded
    # box) found no running run.
    hold_paused(run_dir)
    tmux("kill-server")  # the terminal goes away: SIGHUP to the app
    _wait_in(events, "terminal closed, detached")
    assert psutil.pid_exists(runner_pid)
    attach = attach_and_resume(run_dir, app_env(tmp_path), timeout=240)
    out = attach.stdout
    assert str(run_dir) in out, out + attach.stderr
    assert "run completed" in out and "summary:" in out
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"


def _wait_in(events: Path, text: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while text not in events.read_text() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert text in events.read_text(), f"no {text!r} in the run's events"


@pytest.mark.slow
def test_lost_terminal_with_no_detach_on_hangup_stops_the_runner_it_started(tmux: Tmux, tmp_path: Path):
    plan = tmp_path / "slow-demo.toml"
    plan.write_text(demo_plan_text("1"))  # --speed 1: cells last seconds
    tmux.start([sys.executable, "-m", "dspark_tui", "run", str(plan), "--no-detach-on-hangup"],
               app_env(tmp_path))
    tmux.wait_for("cell 1/10", timeout=40)
    run_dir = next((tmp_path / "results").glob("demo_*"))
    runner_pid = json.loads((run_dir / "run.json").read_text())["runner_pid"]
    assert psutil.pid_exists(runner_pid)
    tmux("kill-server")  # the terminal goes away: SIGHUP to the app
    deadline = time.monotonic() + 40
    while psutil.pid_exists(runner_pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not psutil.pid_exists(runner_pid) or psutil.Process(runner_pid).status() == "zombie"
    manifest = json.loads((run_dir / "run.json").read_text())
    # Not "aborted by user": nobody asked; the run is interrupted and can be resumed.
    assert manifest["status"] == "interrupted"
    assert manifest["notes"][-1].endswith(" interrupted: terminal closed")
    resumed = subprocess.Popen([sys.executable, "-m", "dspark_tui", "run", "--resume", str(run_dir),
                                "--headless"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, text=True,
                               env={**os.environ, **app_env(tmp_path)})
    try:
        deadline = time.monotonic() + 40
        events = run_dir / "events.jsonl"
        while events.read_text().count('"run_started"') < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert events.read_text().count('"run_started"') == 2  # the resume took the run up
    finally:
        resumed.send_signal(signal.SIGINT)
        out, _ = resumed.communicate(timeout=40)
    assert "Traceback" not in out


def test_report_viewer_in_80x24_shows_a_wrapped_sentence_whole(tmux: Tmux, tmp_path: Path):
    """`r` in History at 80x24: a sentence of report.md longer than the terminal is on screen
    whole, wrapped at the pane's edge rather than cut (zh, the locale's language here)."""
    import re

    from dspark_tui.report.markdown import render_report
    from dspark_tui.results import load_run
    from dspark_tui.tui.report_blocks import report_blocks

    run_dir = tmp_path / "results" / "demo_run"
    shutil.copytree(RECORDED, run_dir)
    text = render_report(load_run(run_dir), lang="zh")
    (run_dir / "report.md").write_text(text, encoding="utf-8")
    before = (run_dir / "report.md").stat().st_mtime_ns

    def cells(line: str) -> int:
        return sum(2 if ord(char) > 0x2E80 else 1 for char in line)

    prose = [line.removeprefix("- ").replace("`", "") for block in report_blocks(text)
             for line in block.text.splitlines()]
    sentence = next(line for line in prose if cells(line) > 90 and not re.search(r"[*|#\[]", line))
    env = {**app_env(tmp_path), "LANG": "zh_CN.UTF-8"}
    tmux.start([sys.executable, "-m", "dspark_tui"], env, size=(80, 24))
    tmux.wait_for(" demo ")
    tmux("send-keys", "-t", "app", "r")
    tmux.wait_for("[zh] 已保存： demo_run/report.md")  # the screen in zh too

    def squeezed(screen: str) -> str:
        return re.sub(r"[\s▎▊▏▉▌▍█▁▂▃▄▅▆▇]", "", screen)

    wanted = squeezed(sentence)
    seen = ""
    for _ in range(12):
        seen = tmux.screen()
        if wanted in squeezed(seen):
            break
        tmux("send-keys", "-t", "app", "PageDown")
        time.sleep(0.3)
    assert wanted in squeezed(seen), f"{sentence!r} not whole on screen:\n{seen}"
    assert max(len(line) for line in seen.splitlines()) <= 80
    assert (run_dir / "report.md").stat().st_mtime_ns == before  # viewing wrote nothing
    tmux("send-keys", "-t", "app", "q")
