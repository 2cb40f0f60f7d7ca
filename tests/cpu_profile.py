"""Each test's CPU time, for ranking the suite by what it costs rather than by wall time (on a
shared box wall time mostly measures the neighbours).

Opt-in: `DSPARK_TEST_CPU=FILE python -m pytest ...` appends one tab-separated line per test
to FILE: node id, the worker's own CPU (user + system, setup + call + teardown), the CPU of the
child processes it reaped in that time (simulators, runners, the app: every child a test starts
is waited for, so its CPU lands here), and the wall time. Under pytest-xdist every worker
appends to the same file (one short write a line). `python -m tests.cpu_profile FILE` sums it
per file and lists the costliest tests.
"""

from __future__ import annotations

import os
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

VARIABLE = "DSPARK_TEST_CPU"


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    out = os.environ.get(VARIABLE)
    if not out:
        return (yield)
    own, children, wall = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN), time.monotonic()
    try:
        return (yield)
    finally:
        line = "\t".join((item.nodeid, f"{_cpu(resource.RUSAGE_SELF) - own:.3f}",
                          f"{_cpu(resource.RUSAGE_CHILDREN) - children:.3f}",
                          f"{time.monotonic() - wall:.3f}")) + "\n"
        with open(out, "a", encoding="utf-8") as handle:
            handle.write(line)


def summary(path: Path, top: int = 25) -> str:
    per_file: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    tests: list[tuple[float, str]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        node, own, children, wall = line.split("\t")
        cpu = float(own) + float(children)
        row = per_file[node.split("::")[0]]
        row[0] += 1
        row[1] += cpu
        row[2] += float(children)
        row[3] += float(wall)
        tests.append((cpu, node))
    total = sum(row[1] for row in per_file.values())
    lines = [f"{len(tests)} tests, {total:.1f} s CPU (own + children), "
             f"{sum(row[3] for row in per_file.values()):.1f} s wall summed", "",
             f"{'CPU s':>8} {'child s':>8} {'wall s':>8} {'tests':>5}  file"]
    for name, (count, cpu, children, wall) in sorted(per_file.items(), key=lambda kv: -kv[1][1]):
        lines.append(f"{cpu:8.1f} {children:8.1f} {wall:8.1f} {int(count):5d}  {name}")
    lines += ["", f"the {top} costliest tests (CPU s):"]
    lines += [f"{cpu:8.2f}  {node}" for cpu, node in sorted(tests, reverse=True)[:top]]
    return "\n".join(lines)


if __name__ == "__main__":
    print(summary(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 25))
