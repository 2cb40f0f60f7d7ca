"""Free loopback ports that no two pytest-xdist workers of one run can both hand out.

Each worker draws from its own block of ports below the kernel's ephemeral range (32768+), so
workers never race each other for the same number and the kernel never gives one of ours to an
outgoing connection. A random start inside the block keeps two runs on one machine apart, and
every candidate is bound once before it is handed out.
"""

from __future__ import annotations

import itertools
import os
import random
import socket

LOWEST = 10_000
HIGHEST = 32_000  # exclusive; the ephemeral range starts at 32768 on Linux


def _worker_block() -> range:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw3" under xdist, unset otherwise
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    index = int(worker[2:]) if worker.startswith("gw") else 0
    size = (HIGHEST - LOWEST) // max(count, 1)
    return range(LOWEST + index * size, LOWEST + (index + 1) * size)


def _candidates() -> itertools.cycle[int]:
    block = _worker_block()
    start = random.randrange(len(block))
    return itertools.cycle([*block[start:], *block[:start]])


_next_candidate = _candidates()


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A port nothing listens on now and that this run has not handed out recently."""
    for _ in range(1000):
        port = next(_next_candidate)
        if _bindable(port):
            return port
    raise RuntimeError(f"no free loopback port in {_worker_block()}")
