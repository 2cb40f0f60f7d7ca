"""Running an external benchmark CLI for one cell: its own process group, its output in a log,
its tqdm bar turned into progress, a hard time limit, and nothing left behind.

Both of the child's streams are read here until it ends and copied to the log with every secret
the tool knows scrubbed (the clients print their parsed args, `--header Authorization=Bearer
sk-…` included); stderr, where tqdm draws, is also scanned for `n/total`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import time
from collections import deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dspark_tui.engine.drivers.base import CellError
from dspark_tui.engine.servers.log_relay import ScrubbedStream
from dspark_tui.model.secrets import Scrubber, scrub_argv

# `  45%|████▌     | 9/20 [00:01<00:01,  7.9it/s]` -> 9, 20
_TQDM = re.compile(rb"(\d+)/(\d+) \[")
_MAX_SEGMENT = 4096  # a tqdm line is short; anything longer is not progress
_TAIL_LINES = 20
_STOP_GRACE_S = 3.0


class TqdmReader:
    """Splits a byte stream on `\\r` and `\\n` and reports the last `n/total` it saw.

    The unfinished segment is bounded, so a child printing without newlines cannot make us
    hold an unbounded buffer.
    """

    def __init__(self, on_count: Callable[[int, int], None]) -> None:
        self._on_count = on_count
        self._partial = b""
        self.tail: deque[str] = deque(maxlen=_TAIL_LINES)

    def feed(self, data: bytes) -> None:
        pieces = re.split(rb"[\r\n]", self._partial + data)
        self._partial = pieces.pop()[-_MAX_SEGMENT:]
        for piece in pieces:
            self._segment(piece)

    def close(self) -> None:
        if self._partial:
            self._segment(self._partial)
            self._partial = b""

    def _segment(self, piece: bytes) -> None:
        if not piece.strip():
            return
        match = _TQDM.search(piece)
        if match:
            self._on_count(int(match.group(1)), int(match.group(2)))
            return
        self.tail.append(piece.decode("utf-8", "replace").strip()[:300])


@dataclass
class ChildOutcome:
    returncode: int
    elapsed_s: float
    stderr_tail: list[str] = field(default_factory=list)

    def last_words(self) -> str:
        """The child's last meaningful stderr line, for a one-line failure reason."""
        for line in reversed(self.stderr_tail):
            if line:
                return line
        return ""


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _stop_group(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM the whole group, give it a moment, then SIGKILL it; always reap the child."""
    pgid = proc.pid
    _signal_group(pgid, signal.SIGTERM)
    try:
        await asyncio.wait_for(asyncio.shield(proc.wait()), _STOP_GRACE_S)
    except TimeoutError:
        pass
    # Grandchildren may outlive the leader: SIGKILL the group whatever the leader did.
    _signal_group(pgid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        await proc.wait()


async def _finish(pumping: asyncio.Task[None]) -> None:
    """Drain what is left of the child's output; give up after a moment rather than hang on a stray fd."""
    try:
        await asyncio.wait_for(pumping, 2.0)
    except TimeoutError:
        pumping.cancel()
        with contextlib.suppress(BaseException):
            await pumping


async def run_child(
    argv: Sequence[str],
    log_path: Path,
    timeout_s: float,
    on_count: Callable[[int, int], None],
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    what: str = "the benchmark client",
    secrets: Collection[str] = (),
) -> ChildOutcome:
    """Run argv to completion. Raises CellError on timeout or when it cannot start.

    Cancellation (the runner skipping or aborting the cell) stops the child's whole process
    group before the CancelledError propagates. Every value in secrets is scrubbed from what
    reaches the log and from the stderr lines the outcome keeps.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    reader = TqdmReader(on_count)
    scrubber = Scrubber(secrets)
    started = time.monotonic()
    with open(log_path, "ab", buffering=0) as log:
        log.write(f"$ {' '.join(scrub_argv(list(argv), secrets))}\n".encode())
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                env={**os.environ, **(env or {})},
                cwd=str(cwd) if cwd else None,
            )
        except FileNotFoundError:
            raise CellError(f"{what}: command not found: {argv[0]}") from None
        except PermissionError:
            raise CellError(f"{what}: not executable: {argv[0]}") from None

        async def copy(source: asyncio.StreamReader, scan: Callable[[bytes], None]) -> None:
            stream = ScrubbedStream(scrubber)
            while chunk := await source.read(65536):
                log.write(stream.feed(chunk))
                scan(chunk)
            log.write(stream.close())

        async def pump() -> None:
            assert proc.stdout is not None and proc.stderr is not None
            await asyncio.gather(copy(proc.stdout, lambda _: None), copy(proc.stderr, reader.feed))
            reader.close()

        pumping = asyncio.create_task(pump())
        try:
            async with asyncio.timeout(timeout_s):
                await proc.wait()
        except TimeoutError:
            await _stop_group(proc)
            await _finish(pumping)
            raise CellError(
                f"{what} timed out after {timeout_s:g}s (cell_timeout_s); its process group was killed"
            ) from None
        except BaseException:
            await _stop_group(proc)
            await _finish(pumping)
            raise
        # The leader is gone; nothing it spawned may linger in its group (or hold stderr open).
        _signal_group(proc.pid, signal.SIGKILL)
        await _finish(pumping)
    return ChildOutcome(
        returncode=proc.returncode if proc.returncode is not None else -1,
        elapsed_s=time.monotonic() - started,
        stderr_tail=[scrubber.scrub(line.encode()).decode("utf-8", "replace")
                     for line in reader.tail],
    )
