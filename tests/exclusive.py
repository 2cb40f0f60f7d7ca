"""Tests marked `timing` run with no other test alongside, even under pytest-xdist.

A readers-writer lock between the workers of one run, on two files: every test holds the main
lock shared; a timing test holds it exclusively, so it starts once the tests running on other
workers have ended and none starts until it has. The gate keeps a waiting timing test from
being starved by a stream of shared holders: it is taken exclusively by the timing test first,
and briefly, shared, by every other test before it takes the main lock.
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def _flock(path: Path, mode: int) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, mode)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def alone(folder: Path) -> Iterator[None]:
    with _flock(folder / "timing.gate", fcntl.LOCK_EX), _flock(folder / "timing.lock", fcntl.LOCK_EX):
        yield


@contextlib.contextmanager
def alongside_others(folder: Path) -> Iterator[None]:
    with contextlib.ExitStack() as held:
        with _flock(folder / "timing.gate", fcntl.LOCK_SH):
            held.enter_context(_flock(folder / "timing.lock", fcntl.LOCK_SH))
        yield


class Hold:
    """An exclusive hold that outlives one test, so that a run of timing tests drains the other
    workers once rather than once per test."""

    def __init__(self) -> None:
        self._held: contextlib.ExitStack | None = None

    def take(self, folder: Path) -> None:
        if self._held is None:
            held = contextlib.ExitStack()
            held.enter_context(alone(folder))
            self._held = held

    def release(self) -> None:
        if self._held is not None:
            self._held.close()
            self._held = None
