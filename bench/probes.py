"""Kill a run at random moments, resume it, and count what the issue-25 tester counted.

Each probe starts a small simulator run (`run PLAN --headless`, 2 arms x 2 cells x 2 rounds),
sends one of SIGKILL / SIGINT / SIGTERM / SIGHUP to the runner at a random moment after its
run directory appears (the seed fixes the moments and signals), then resumes the run to its end. It counts:

- cells lost: a measurement the events said finished before the signal whose file is missing
  or unreadable after it;
- orphans: processes carrying the run's server token (DSPARK_SERVER_TOKEN) alive once the
  resume has ended (a kill -9 leaves the server until the resume stops it: that is expected);
- tracebacks: "Traceback" in any output of the run or the resume;
- hangs: a runner or a resume that does not end within its limit;
- unfinished: a resume that did not bring every planned measurement in.

    python bench/probes.py [--probes 12] [--seed 7]     (about 20 s a probe on an idle box)
    python bench/probes.py --smoke                        (one probe of a one-cell plan)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from dspark_tui.engine.servers.procs import TOKEN_VAR, live_processes  # noqa: E402
from dspark_tui.model.cell import CellResult  # noqa: E402
from dspark_tui.results import RunStore  # noqa: E402
from tests.plan_text import scenario_table, spec_token_arms  # noqa: E402

SIGNALS = {"KILL": signal.SIGKILL, "INT": signal.SIGINT, "TERM": signal.SIGTERM,
           "HUP": signal.SIGHUP}
RUN_LIMIT_S = 180

PLAN = f"""name = "probe"
model = "probe-model"
backend_label = "simulator"

[server]
command = ["{{python}}", "-m", "dspark_tui.sim", "serve", "{{model}}", "--host", "{{host}}",
           "--port", "{{port}}", "--spec-tokens", "{{spec_tokens}}", "--speed", "20"]
port = 0
startup_timeout_s = 30
stop_timeout_s = 5

{spec_token_arms((3, 5))}[bench]
driver = "native"
warmup_requests = 2
rounds = 2
adaptive_rounds = 0
scrape_interval_s = 0.5

{scenario_table("chat", 64, 48, [1, 4], 8)}"""


# --smoke: one arm, one cell, one round: a kill, a resume and the counts, in seconds.
SMOKE_PLAN = (PLAN.replace('[[arms]]\nname = "st=5"\nvars = { spec_tokens = 5 }\n\n', "")
              .replace("rounds = 2", "rounds = 1").replace("concurrencies = [1, 4]",
                                                              "concurrencies = [1]")
              .replace("num_prompts = 8", "num_prompts = 4"))


@dataclass
class Totals:
    probes: int = 0
    lost: int = 0
    orphans: int = 0
    tracebacks: int = 0
    hangs: int = 0
    unfinished: int = 0
    notes: list[str] = field(default_factory=list)


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "dspark_tui", *args]


def _finished_keys(run_dir: Path) -> list[CellResult]:
    found = []
    with contextlib.suppress(OSError):
        for line in (run_dir / "events.jsonl").read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if event.get("kind") == "cell_finished":
                    found.append(CellResult.model_validate(event["result"]))
    return found


def _lost(run_dir: Path, finished: list[CellResult]) -> int:
    store = RunStore(run_dir)
    lost = 0
    for result in finished:
        path = store.cell_path(result.key, result.round, result.repeat)
        try:
            json.loads(path.read_text())
        except (OSError, ValueError):
            lost += 1
    return lost


def _tokens(run_dir: Path) -> set[str]:
    tokens = set()
    for path in [run_dir / "server.json", *(run_dir / "servers").glob("*.json")]:
        with contextlib.suppress(OSError, ValueError):
            token = json.loads(path.read_text()).get("token")
            if token:
                tokens.add(token)
    return tokens


def _carrying(tokens: set[str]) -> list[psutil.Process]:
    found = []
    for proc in live_processes():
        with contextlib.suppress(psutil.Error):
            if proc.environ().get(TOKEN_VAR) in tokens:
                found.append(proc)
    return found


def _run_dir(root: Path) -> Path | None:
    dirs = [p for p in root.iterdir() if p.is_dir()]
    return dirs[0] if dirs else None


def probe(index: int, name: str, delay: float, workdir: Path, totals: Totals) -> None:
    root = workdir / f"p{index}"
    root.mkdir()
    plan = workdir / "plan.toml"
    out = root.parent / f"p{index}.out"
    with out.open("wb") as sink:
        runner = subprocess.Popen(_cli("run", str(plan), "--headless", "--results", str(root)),
                                  stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  start_new_session=True)
        started = time.monotonic()  # the moment counts from the run's directory, not the spawn
        while (_run_dir(root) is None or not (_run_dir(root) / "run.json").exists()) \
                and time.monotonic() - started < 60 and runner.poll() is None:
            time.sleep(0.05)
        time.sleep(delay)
        run_dir = _run_dir(root)
        finished = _finished_keys(run_dir) if run_dir else []
        with contextlib.suppress(ProcessLookupError):
            os.kill(runner.pid, SIGNALS[name])
        try:
            runner.wait(RUN_LIMIT_S)
        except subprocess.TimeoutExpired:
            totals.hangs += 1
            totals.notes.append(f"probe {index} ({name} at {delay:.1f}s): runner still running")
            os.killpg(runner.pid, signal.SIGKILL)
            runner.wait()
    run_dir = _run_dir(root)
    if run_dir is None:
        totals.notes.append(f"probe {index} ({name} at {delay:.1f}s): no run directory yet")
        return
    totals.lost += _lost(run_dir, finished)
    manifest = json.loads((run_dir / "run.json").read_text())
    if manifest.get("status") != "completed":
        resume = subprocess.run(_cli("run", "--resume", str(run_dir), "--headless"),
                                capture_output=True, timeout=RUN_LIMIT_S * 2, stdin=subprocess.DEVNULL)
        out.write_bytes(out.read_bytes() + resume.stdout + resume.stderr)
        if json.loads((run_dir / "run.json").read_text()).get("status") != "completed":
            totals.unfinished += 1
            tail = (resume.stdout + resume.stderr).decode(errors="replace").strip().splitlines()[-1:]
            totals.notes.append(f"probe {index} ({name} at {delay:.1f}s): resume ended "
                                f"unfinished: {tail}")
    time.sleep(1)  # a stop's last child exits
    left = _carrying(_tokens(run_dir))
    if left:
        totals.orphans += len(left)
        totals.notes.append(f"probe {index}: left {[p.pid for p in left]}")
        for proc in left:
            with contextlib.suppress(psutil.Error):
                proc.kill()
    if b"Traceback" in out.read_bytes():
        totals.tracebacks += 1
        totals.notes.append(f"probe {index} ({name} at {delay:.1f}s): a traceback in {out}")
    totals.probes += 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--probes", type=int, default=12)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="two probes (KILL, HUP)")
    parser.add_argument("--smoke", action="store_true",
                        help="one KILL probe of a one-arm, one-cell plan (the suite's check)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    totals = Totals()
    with tempfile.TemporaryDirectory(prefix="dspark-probes-") as folder:
        workdir = Path(folder)
        (workdir / "plan.toml").write_text(SMOKE_PLAN if args.smoke else PLAN)
        count = 1 if args.smoke else 2 if args.quick else args.probes
        for index in range(count):
            name = ["KILL", "HUP"][index] if args.quick or args.smoke else rng.choice(list(SIGNALS))
            delay = 0.5 if args.smoke else rng.uniform(1.0, 12.0)
            probe(index, name, delay, workdir, totals)
            print(f"probe {index + 1}/{count}: SIG{name} at {delay:.1f}s", flush=True)
    print(f"probes {totals.probes}, cells lost {totals.lost}, orphans after resume "
          f"{totals.orphans}, tracebacks {totals.tracebacks}, hangs {totals.hangs}, "
          f"resumes unfinished {totals.unfinished}")
    for note in totals.notes:
        print("  " + note)
    bad = totals.lost + totals.orphans + totals.tracebacks + totals.hangs + totals.unfinished
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
