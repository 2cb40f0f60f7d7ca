"""Between a server and its log file: copy what the server prints, with every secret the tool
knows scrubbed, so no key reaches `logs/server-*.log` (nor the `server_log` events read from it).

A process of its own, not a thread of the runner: it outlives a runner killed with -9, so the
server never dies of a broken pipe and no line is lost (it exits when the last writer closes
the pipe, i.e. when the server tree is gone), and a log flood costs the runner nothing.

    python -m dspark_tui.engine.servers.log_relay LOG_PATH SECRETS_FD [MAX_BYTES]   (output on stdin)

The secrets arrive as JSON on the pipe SECRETS_FD, never in argv or the environment, which
/proc shows to anyone who may read this process's files.

The log is bounded (`server.log_max_bytes`, BoundedLog): past the cap its first half is kept,
then one line saying how much was cut there, then the latest output; a flood of 5 MB/s can no
longer fill the results disk.
"""

from __future__ import annotations

import array
import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import termios
from functools import partial
from pathlib import Path

import psutil

from dspark_tui.model.secrets import Scrubber

READ_CHUNK = 1 << 20
DEFAULT_MAX_BYTES = 2 << 20  # server.log_max_bytes' default
MARKER_PREFIX = b"\n[dspark-tui: log cut #"
HOLD_MAX = 1 << 16  # a line without a newline is written in pieces beyond this
PIPE_SIZE = 1 << 20  # room for a burst while the relay is busy writing


def start_relay(log_path: Path, secrets: set[str], env: dict[str, str],
                max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[subprocess.Popen[bytes], int]:
    """Start a relay appending to log_path; returns it and the fd the server must write to
    (the caller hands it to the server and closes it)."""
    read_end, write_end = os.pipe()
    with contextlib.suppress(OSError, AttributeError):
        fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
    secrets_read, secrets_write = os.pipe()
    try:
        os.write(secrets_write, json.dumps(sorted(secrets)).encode())
        os.close(secrets_write)
        relay = subprocess.Popen(
            [sys.executable, "-m", "dspark_tui.engine.servers.log_relay", str(log_path), str(secrets_read),
             str(max_bytes)],
            stdin=read_end, stdout=subprocess.DEVNULL,
            pass_fds=(secrets_read,), env=env, start_new_session=True,
        )
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
        os.close(secrets_read)
        with contextlib.suppress(OSError):
            os.close(secrets_write)
    return relay, write_end


def caught_up(relay: subprocess.Popen[bytes]) -> bool:
    """Whether the relay has written all the server printed so far: nothing waits in its pipe
    and it sleeps (in its read). Linux: the pipe is looked at through /proc."""
    if relay.poll() is not None:
        return True
    try:
        fd = os.open(f"/proc/{relay.pid}/fd/0", os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return True
    try:
        queued = array.array("i", [0])
        fcntl.ioctl(fd, termios.FIONREAD, queued)
    except OSError:
        return True
    finally:
        os.close(fd)
    if queued[0]:
        return False
    try:
        return psutil.Process(relay.pid).status() != psutil.STATUS_RUNNING
    except psutil.Error:
        return True


class ScrubbedStream:
    """A byte stream's scrubbed copy, fed as it arrives: whole lines are scrubbed (a secret is
    never cut in two); a line longer than HOLD_MAX goes out in pieces, keeping back what could
    be the start of a secret the next piece completes."""

    def __init__(self, scrubber: Scrubber) -> None:
        self._scrubber = scrubber
        self._pending = b""

    def feed(self, data: bytes) -> bytes:
        """What may be written now."""
        scrubber = self._scrubber
        if not scrubber:
            return data
        self._pending += data
        out = b""
        cut = self._pending.rfind(b"\n") + 1
        if cut:
            out = scrubber.scrub(self._pending[:cut])
            self._pending = self._pending[cut:]
        if len(self._pending) > HOLD_MAX:
            scrubbed = scrubber.scrub(self._pending)
            keep = max(scrubber.longest - 1, 0)
            out += scrubbed[:len(scrubbed) - keep]
            self._pending = scrubbed[len(scrubbed) - keep:]
        return out

    def close(self) -> bytes:
        """What is left at the end of the stream."""
        rest, self._pending = self._pending, b""
        return self._scrubber.scrub(rest)


def copy_scrubbed(source: int, log_fd: int, scrubber: Scrubber, max_bytes: int | None = None) -> None:
    """Copy source to log_fd until EOF, scrubbed (see ScrubbedStream); bounded to max_bytes
    when given (see BoundedLog)."""
    stream = ScrubbedStream(scrubber)
    write = BoundedLog(log_fd, max_bytes).write if max_bytes else partial(_write_all, log_fd)
    while True:
        data = os.read(source, READ_CHUNK)
        if not data:
            write(stream.close())
            return
        write(stream.feed(data))


def head_bytes(max_bytes: int) -> int:
    """Where the kept head of a cut log ends and the cut line starts (its reader looks there)."""
    return max_bytes // 2


def marker(cuts: int, left_out: int, max_bytes: int) -> bytes:
    """The line at a cut; the same length whatever its numbers, so each cut rewrites it in place."""
    return (MARKER_PREFIX + f"{cuts:06d}: {left_out:>15d} bytes of the server's output left out "
            f"here (server.log_max_bytes = {max_bytes}); its first {head_bytes(max_bytes)} bytes "
            "are above, its latest below]\n".encode())


class BoundedLog:
    """An append-only log of at most about max_bytes: when a write would pass the cap, the file
    is cut back to its head (the first half: how the server started), the cut line (how many
    bytes were left out, over every cut) and the latest quarter of the output, from a line's
    start; appending goes on from there. One writer (the relay) owns the file."""

    def __init__(self, fd: int, max_bytes: int) -> None:
        self._fd = fd
        self._max = max_bytes
        self._head = head_bytes(max_bytes)
        self._keep = max_bytes // 4
        self._latest = bytearray()
        self._cuts = 0
        try:
            self._size = os.fstat(fd).st_size
        except OSError:
            self._size = 0
        self._total = self._size  # bytes of output so far, what the file held before included

    def write(self, data: bytes) -> None:
        if not data:
            return
        self._total += len(data)
        self._latest += data
        if len(self._latest) > 2 * self._keep:
            del self._latest[:len(self._latest) - self._keep]
        if self._size + len(data) <= self._max:
            self._size += _write_all(self._fd, data)
            return
        if self._size < self._head:  # the head is the output's start: filled first
            self._size += _write_all(self._fd, data[:self._head - self._size])
        self._cut()

    def _cut(self) -> None:
        latest = bytes(self._latest[-self._keep:])
        start = latest.find(b"\n") + 1
        if 0 < start < len(latest):
            latest = latest[start:]  # from a line's start
        self._latest = bytearray(latest)
        self._cuts += 1
        left_out = self._total - self._head - len(latest)
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, self._head)
        self._size = self._head
        self._size += _write_all(self._fd, marker(self._cuts, left_out, self._max))
        self._size += _write_all(self._fd, latest)


def _write_all(fd: int, data: bytes) -> int:
    """A write that fails (a full disk) drops the data: the server must never block or see a
    broken pipe because its log cannot be written. The bytes written."""
    view = memoryview(data)
    with contextlib.suppress(OSError):
        while view:
            view = view[os.write(fd, view):]
    return len(data) - len(view)


def main(argv: list[str]) -> int:
    # Ctrl-C and a group TERM end the server; the relay ends when the server's output does.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    log_path, secrets_fd = argv[0], int(argv[1])
    max_bytes = int(argv[2]) if len(argv) > 2 else DEFAULT_MAX_BYTES
    with os.fdopen(secrets_fd, "rb") as handle:
        secrets = json.loads(handle.read() or b"[]")
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        copy_scrubbed(sys.stdin.fileno(), log_fd, Scrubber(secrets), max_bytes)
    finally:
        os.close(log_fd)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
