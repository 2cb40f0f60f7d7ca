"""Shared fixtures: free loopback ports, shipped paths, and a guard against leaked processes."""

from __future__ import annotations

import os
import socket
import time
import uuid
from pathlib import Path

import psutil
import pytest

REPO = Path(__file__).resolve().parent.parent
# Copies of ../shared/fixtures (real client and /metrics outputs) and of the seed report, so the
# suite runs from any clone.
FIXTURES = REPO / "tests" / "data"
SEED_REPORT = FIXTURES / "seed_report_000_a9ad07d41d2a76d0.md"
SAMPLE_RUN = REPO / "sample_results" / "dspark_st_comparison_20260707-150649"


# Every process started under this pytest run inherits this marker, even after it is
# reparented (daemonized workers, orphans of a killed parent), so leaks cannot hide.
SESSION_MARK = "DSPARK_TEST_SESSION"
os.environ[SESSION_MARK] = uuid.uuid4().hex


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def port() -> int:
    return free_port()


def marked_processes() -> dict[int, psutil.Process]:
    token = os.environ[SESSION_MARK]
    me = os.getpid()
    found: dict[int, psutil.Process] = {}
    for proc in psutil.process_iter():
        if proc.pid == me:
            continue
        try:
            if proc.environ().get(SESSION_MARK) == token and _alive(proc):
                found[proc.pid] = proc
        except psutil.Error:
            continue
    return found


@pytest.fixture(autouse=True)
def no_leaked_processes():
    """Every process a test starts, it stops, grandchildren and orphans included."""
    before = set(marked_processes())
    yield
    deadline = time.monotonic() + 5
    leaked: list[psutil.Process] = []
    while time.monotonic() < deadline:
        leaked = [p for pid, p in marked_processes().items() if pid not in before]
        if not leaked:
            return
        time.sleep(0.2)
    descriptions = []
    for p in leaked:
        try:
            descriptions.append(f"{p.pid} {' '.join(p.cmdline())[:120]}")
        except psutil.Error:
            descriptions.append(str(p.pid))
        try:
            p.kill()
        except psutil.Error:
            pass
    pytest.fail("processes left running: " + "; ".join(descriptions))


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
