"""What the fake benchmark CLIs (fake_sglang.py, fake_vllm_bench.py) share: the workload
arguments both real tools take, the failure switches, the tqdm-like bar and the result block.

Environment switches:

  FAKE_BENCH_MODE       ok | exit (non-zero, an error on stderr) | hang | truncated | nooutput | partial
  FAKE_BENCH_COMPLETED  completed requests for `partial` (default: half)
  FAKE_BENCH_STEP_S     seconds per request while drawing the bar (default 0.002)
  FAKE_BENCH_ARGV_FILE  write argv (JSON) here, for tests that check the command line
  FAKE_BENCH_PIDFILE    write the pids of this process and its hanging child here
  FAKE_BENCH_ECHO_ARGV  1: print argv on stdout and stderr too (what a careless client logs)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Switches:
    mode: str
    step_s: float

    @classmethod
    def from_env(cls) -> Switches:
        return cls(mode=os.environ.get("FAKE_BENCH_MODE", "ok"),
                   step_s=float(os.environ.get("FAKE_BENCH_STEP_S", "0.002")))

    def completed(self, total: int) -> int:
        if self.mode == "partial":
            return int(os.environ.get("FAKE_BENCH_COMPLETED", str(total // 2)))
        return total


def add_workload_args(parser: argparse.ArgumentParser, *, dataset: str, output_len: int, seed: int) -> None:
    """The random-dataset workload flags both tools take (their defaults differ where given)."""
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--base-url")
    parser.add_argument("--model")
    parser.add_argument("--tokenizer")
    parser.add_argument("--dataset-name", default=dataset)
    parser.add_argument("--random-input-len", type=int, default=1024)
    parser.add_argument("--random-output-len", type=int, default=output_len)
    parser.add_argument("--random-range-ratio", type=float, default=0.0)
    parser.add_argument("--num-prompts", type=int, default=1000)
    parser.add_argument("--max-concurrency", type=int)
    parser.add_argument("--seed", type=int, default=seed)


def begin(args: argparse.Namespace, *, echo_args: bool = False) -> Switches:
    """Record argv for the test, print the Namespace line both tools print, read the switches."""
    if path := os.environ.get("FAKE_BENCH_ARGV_FILE"):
        with open(path, "w", encoding="utf-8") as out:
            json.dump(sys.argv[1:], out)
    if echo_args:
        print(f"benchmark_args={args}", flush=True)
    if os.environ.get("FAKE_BENCH_ECHO_ARGV") == "1":
        print(f"argv: {sys.argv}", flush=True)
        print(f"argv: {sys.argv}", file=sys.stderr, flush=True)
    print(f"Namespace({', '.join(f'{k}={v!r}' for k, v in vars(args).items())})", flush=True)
    return Switches.from_env()


def hang(before_sleep: Callable[[], None] = lambda: None) -> int:
    """Stall forever with a child process, as a client stuck on a dead server does."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    if path := os.environ.get("FAKE_BENCH_PIDFILE"):
        with open(path, "w", encoding="utf-8") as out:
            out.write(f"{os.getpid()} {child.pid}\n")
    before_sleep()
    time.sleep(600)
    return 0


def run_bar(total: int, step_s: float, draw: Callable[[int, int], None]) -> None:
    """One bar update per request, as tqdm draws it on stderr, then the final newline."""
    for done in range(total + 1):
        draw(done, total)
        if done < total:
            time.sleep(step_s)
    sys.stderr.write("\n")


def print_result_block(rows: list[tuple[str, object]], *, leading_newline: bool = False) -> None:
    """The `==== Serving Benchmark Result ====` block both tools print on stdout."""
    title = "{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="=")
    print(("\n" if leading_newline else "") + title)
    for label, value in rows:
        shown = f"{value:<10.2f}" if isinstance(value, float) else f"{value!s:<10}"
        print(f"{label:<40} {shown}")
    print("=" * 50, flush=True)


def write_result(path: str, obj: dict[str, object], mode: str, *, append: bool) -> None:
    """The result file as the tool writes it; `truncated` leaves half of it, as a killed writer."""
    text = json.dumps(obj)
    if mode == "truncated":
        text = text[: len(text) // 2]
    elif append:
        text += "\n"
    with open(path, "a" if append else "w", encoding="utf-8") as out:
        out.write(text)
