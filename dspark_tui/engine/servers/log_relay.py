"""Between a server and its log file: copy what the server prints, with every secret the tool
knows scrubbed, so no key reaches `logs/server-*.log` (nor the `server_log` events read from it).

A process of its own, not a thread of the runner: it outlives a runner killed with -9, so the
server never dies of a broken pipe and no line is lost (it exits when the last writer closes
the pipe, i.e. when the server tree is gone), and a log flood costs the runner nothing.

    python -m dspark_tui.engine.servers.log_relay LOG_PATH SECRETS_FD   (the server's output on stdin)

The secrets arrive as JSON on the pipe SECRETS_FD, never in argv or the environment, which
/proc shows to anyone who may read this process's files.
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
from pathlib import Path

import psutil

from dspark_tui.model.secrets import Scrubber

READ_CHUNK = 1 << 20
HOLD_MAX = 1 << 16  # a line without a newline is written in pieces beyond this
PIPE_SIZE = 1 << 20  # room for a burst while the relay is busy writing


def start_relay(log_path: Path, secrets: set[str], env: dict[str, str]) -> tuple[
        subprocess.Popen[bytes], int]:
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
            [sys.executable, "-m", "dspark_tui.engine.servers.log_relay", str(log_path), str(secrets_read)],
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


def copy_scrubbed(source: int, log_fd: int, scrubber: Scrubber) -> None:
    """Copy source to log_fd until EOF, scrubbed (see ScrubbedStream)."""
    stream = ScrubbedStream(scrubber)
    while True:
        data = os.read(source, READ_CHUNK)
        if not data:
            _write_all(log_fd, stream.close())
            return
        _write_all(log_fd, stream.feed(data))


def _write_all(fd: int, data: bytes) -> None:
    """A write that fails (a full disk) drops the data: the server must never block or see a
    broken pipe because its log cannot be written."""
    view = memoryview(data)
    with contextlib.suppress(OSError):
        while view:
            view = view[os.write(fd, view):]


def main(argv: list[str]) -> int:
    # Ctrl-C and a group TERM end the server; the relay ends when the server's output does.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    log_path, secrets_fd = argv[0], int(argv[1])
    with os.fdopen(secrets_fd, "rb") as handle:
        secrets = json.loads(handle.read() or b"[]")
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        copy_scrubbed(sys.stdin.fileno(), log_fd, Scrubber(secrets))
    finally:
        os.close(log_fd)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
