"""The suite's own machinery: worker ports, the slow mark, the Python audit, the timing lock."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests import exclusive, ports, processes, slow
from tests.conftest import TIMING_LOCKS


def test_each_xdist_worker_draws_ports_from_its_own_block(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "4")
    blocks = []
    for worker in ("gw0", "gw1", "gw2", "gw3"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        blocks.append(set(ports._worker_block()))
    assert all(len(block) > 1000 for block in blocks)
    assert sum(len(b) for b in blocks) == len(set().union(*blocks))  # disjoint
    assert max(max(b) for b in blocks) < 32768  # below the kernel's ephemeral ports
    assert ports.free_port() != ports.free_port()


def _pure(values: list[int]) -> int:
    return sum(values)


def _starts_a_runner() -> None:
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def _through_a_helper() -> None:
    _starts_a_runner()


class _Terminal:
    def open(self) -> None:
        _starts_a_runner()


async def _drives_the_app(app) -> None:  # type: ignore[no-untyped-def]
    async with app.run_test():
        pass


# Looked up in a table, not called by name, so that the next test is not itself marked slow.
SAMPLES = {"helper": _through_a_helper, "class": _Terminal, "pure": _pure, "app": _drives_the_app}


def test_slow_is_found_through_helpers_and_classes_of_tests():
    assert slow._uses_name(SAMPLES["helper"], slow.STARTERS, set())
    assert slow._uses_name(SAMPLES["class"], slow.STARTERS, set())
    assert not slow._uses_name(SAMPLES["pure"], slow.STARTERS, set())
    # The in-process app: Textual's pilot, by its name; it starts no process.
    assert slow._uses_name(SAMPLES["app"], slow.APP_DRIVERS, set())
    assert not slow._uses_name(SAMPLES["app"], slow.STARTERS, set())
    assert not slow._uses_name(SAMPLES["pure"], slow.APP_DRIVERS, set())


def test_an_app_test_is_found_by_its_code_or_the_snapshot_fixture():
    def item(function: object, fixtures: list[str]) -> Any:
        return SimpleNamespace(function=function, _fixtureinfo=SimpleNamespace(
            names_closure=fixtures, name2fixturedefs={}))

    assert slow.drives_the_app(item(SAMPLES["app"], []))
    assert slow.drives_the_app(item(SAMPLES["pure"], ["tmp_path", "snap_compare"]))
    assert not slow.drives_the_app(item(SAMPLES["pure"], ["tmp_path"]))
    assert not slow.starts_processes(item(SAMPLES["app"], []))


def test_python_is_told_from_other_programs(tmp_path: Path):
    script = tmp_path / "fake-vllm"
    script.write_text("#!/usr/bin/env python3\nprint('hi')\n")
    shell = tmp_path / "fake-smi"
    shell.write_text("#!/bin/sh\necho hi\n")
    assert processes._runs_python(sys.executable)
    assert processes._runs_python(str(script))
    assert not processes._runs_python(str(shell))
    assert not processes._runs_python("sh")
    assert not processes._runs_python(str(tmp_path / "missing"))


def test_a_shell_script_does_not_count_as_a_python_start(tmp_path: Path):
    shell = tmp_path / "fake-smi"
    shell.write_text("#!/bin/sh\nexit 0\n")
    shell.chmod(0o755)
    before = processes.python_processes_started()
    subprocess.run([str(shell)], check=True)
    assert processes.python_processes_started() == before


@pytest.mark.slow
def test_a_python_start_is_counted():
    before = processes.python_processes_started()
    _starts_a_runner()
    assert processes.python_processes_started() == before + 1


def test_a_timing_test_waits_until_no_other_test_runs(tmp_path: Path):
    entered = threading.Event()

    def timing_test() -> None:
        with exclusive.alone(tmp_path):
            entered.set()

    with exclusive.alongside_others(tmp_path):
        thread = threading.Thread(target=timing_test)
        thread.start()
        assert not entered.wait(0.3)  # another test runs: the timing test may not start
    assert entered.wait(10)
    thread.join(10)


def test_no_test_starts_while_a_timing_test_runs(tmp_path: Path):
    entered = threading.Event()

    def other_test() -> None:
        with exclusive.alongside_others(tmp_path):
            entered.set()

    with exclusive.alone(tmp_path):
        thread = threading.Thread(target=other_test)
        thread.start()
        assert not entered.wait(0.3)
    assert entered.wait(10)
    thread.join(10)


def test_every_xdist_worker_knows_the_timing_locks():
    if "PYTEST_XDIST_WORKER" not in os.environ:
        pytest.skip("not under pytest-xdist (-n 0): nothing runs alongside")
    assert Path(os.environ[TIMING_LOCKS]).is_dir()


def test_a_hold_across_timing_tests_keeps_others_out_until_released(tmp_path: Path):
    entered = threading.Event()

    def other_test() -> None:
        with exclusive.alongside_others(tmp_path):
            entered.set()

    hold = exclusive.Hold()
    hold.take(tmp_path)
    thread = threading.Thread(target=other_test)
    thread.start()
    hold.take(tmp_path)  # the next timing test: already held, not taken twice (that would block)
    assert not entered.wait(0.3)
    hold.release()
    assert entered.wait(10)
    thread.join(10)


def test_the_leak_guard_sees_a_process_this_test_started():
    # The guard skips processes older than the session's marker; a new one must not be skipped.
    child = subprocess.Popen(["sleep", "30"])
    try:
        assert child.pid in processes.marked_processes()
    finally:
        child.kill()
        child.wait()
