"""Reading a file of a run directory that someone else may have crafted or shared.

A run directory is data: its `run.json`, `events.jsonl`, cell files, `runner.lock` and
`server.json` can be a FIFO (an open for reading waits for a writer, forever), a symlink to
`/dev/zero` (read whole: memory exhausted) or a device. Every reader of those files opens them
here: `O_NONBLOCK | O_NOFOLLOW`, then `fstat` — a regular file only — and at most `cap` bytes
read. What is refused is an `OSError` (`SpecialFile`) whose `strerror` says why in a few words,
so each reader's existing one-line handling of an unreadable file names it.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

# Caps per kind of file: generous for what the tool writes, far below what a box can hold.
MANIFEST_CAP = 64 << 20  # run.json: a plan snapshot, arms, prompt sets
CELL_CAP = 64 << 20  # one measurement
EVENTS_CAP = 1 << 30  # events.jsonl, per read (a reader from an offset gets the lines within)
RECORD_CAP = 4 << 20  # server.json, launcher.json, greedy answers, control requests
LOCK_CAP = 64  # runner.lock: one pid
PLAN_CAP = 16 << 20  # a plan or config file
DATASET_CAP = 8 << 30  # a ShareGPT file is ~0.7 GB: this refuses only what is no dataset

_CHUNK = 1 << 20


class SpecialFile(OSError):
    """A run file that is no regular file, a symlink, or larger than its cap."""


def open_regular(path: str | Path, flags: int = os.O_RDONLY, mode: int = 0o600, *,
                 follow: bool = False) -> int:
    """A descriptor of `path`, which must be a regular file and no symlink (with `follow`, a
    symlink is followed: a plan or config file the user linked); the open never waits
    (O_NONBLOCK; cleared again once it is known to be a regular file)."""
    nofollow = 0 if follow else os.O_NOFOLLOW
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | nofollow | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP and os.path.islink(path) and _resolves(path):
            raise SpecialFile(errno.ELOOP, "a symlink, not followed", str(path)) from None
        if exc.errno == errno.ENXIO:  # a FIFO with no reader, opened for writing
            raise SpecialFile(errno.ENXIO, "not a regular file (a FIFO)", str(path)) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            raise SpecialFile(errno.EINVAL, f"not a regular file ({_kind(mode)})", str(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bytes(path: str | Path, cap: int, offset: int = 0, *, partial: bool = False,
               follow: bool = False) -> bytes:
    """The bytes of regular file `path` from `offset`. More than `cap` of them is refused
    (`SpecialFile`), or with `partial` cut to the first `cap` (a reader of appended lines
    then takes the complete lines among them and reads on later)."""
    fd = open_regular(path, follow=follow)
    try:
        if offset:
            os.lseek(fd, offset, os.SEEK_SET)
        chunks: list[bytes] = []
        got = 0
        while got <= cap:
            chunk = os.read(fd, min(_CHUNK, cap + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        data = b"".join(chunks)
    finally:
        os.close(fd)
    if len(data) > cap:
        if partial:
            return data[:cap]
        raise SpecialFile(errno.EFBIG, f"larger than {_size(cap)}, not read", str(path))
    return data


def read_text(path: str | Path, cap: int, *, follow: bool = False) -> str:
    return read_bytes(path, cap, follow=follow).decode("utf-8")


class Unreadable(Exception):
    """A file a user named cannot be read; the message says why in one line."""


def read_named_text(path: Path, cap: int, what: str) -> str:
    """The text of a file a user named (a plan, a dataset: links followed), or Unreadable:
    `{path}: no such {what} file`, `{path}: cannot read the {what} (why)`."""
    try:
        return read_text(path, cap, follow=True)
    except FileNotFoundError:
        raise Unreadable(f"{path}: no such {what} file") from None
    except OSError as exc:
        raise Unreadable(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise Unreadable(f"{path}: cannot read the {what} ({exc})") from None


def _resolves(path: str | Path) -> bool:
    """Whether a symlink is no loop (a loop keeps the kernel's own words)."""
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno != errno.ELOOP
    return True


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "a special file"


def _size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n >> shift} {unit}"
    return f"{n} bytes"
