"""One runner per run directory: an exclusive `flock` on `runner.lock`, held for the runner's
life and released by the kernel when it dies, however it dies.

The lock belongs to an open file, not to a process: a launcher that creates a directory for a
runner in another process takes the lock first and passes the locked descriptor down
(`pass_fds`), so there is no moment at which the directory is unlocked. The file holds the
pid of the holder, for the one line that refuses a second runner. It is never removed: a
contender that removed it and made a new one would lock another file.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from pathlib import Path

from dspark_tui.model import UserError, safe_files

LOCK_FILE = "runner.lock"
# A liveness probe holds the lock (shared) for microseconds; a contender waits this long before
# it believes a holder is a runner.
PATIENCE_S = 0.25
_RETRY_S = 0.01


class RunLocked(UserError):
    """Another process holds the run directory."""


class RunLock:
    """The exclusive hold on one run directory, through one open descriptor."""

    def __init__(self, run_dir: Path, fd: int) -> None:
        self.run_dir = run_dir
        self.fd = fd

    @classmethod
    def acquire(cls, run_dir: str | Path, patience_s: float = PATIENCE_S) -> RunLock:
        """Take the lock, or refuse in one line naming the holder's pid."""
        run_dir = Path(run_dir)
        deadline = time.monotonic() + patience_s
        while True:
            fd = _open(run_dir)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _pid_in(fd)
                os.close(fd)
                if time.monotonic() >= deadline:
                    raise RunLocked(refusal(run_dir, holder)) from None
                time.sleep(_RETRY_S)
                continue
            except OSError as exc:  # ENOLCK: a filesystem without locks
                os.close(fd)
                raise UserError(f"{run_dir}: cannot lock it ({exc.strerror or exc})") from None
            if _same_file(fd, run_dir / LOCK_FILE):
                lock = cls(run_dir, fd)
                lock.claim(os.getpid())
                return lock
            os.close(fd)  # the file was replaced while we waited: lock the one that is there

    @classmethod
    def adopt(cls, run_dir: str | Path, fd: int) -> RunLock:
        """The lock a launcher took and passed down as descriptor `fd`: checked to be this
        directory's lock file and held (a no-op on a description that holds it already)."""
        run_dir = Path(run_dir)
        try:
            if not _same_file(fd, run_dir / LOCK_FILE):
                raise UserError(f"{run_dir}: descriptor {fd} is not its {LOCK_FILE}")
            os.set_inheritable(fd, False)  # never to the servers and clients this runner starts
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunLocked(refusal(run_dir, _pid_in(fd))) from None
        except OSError as exc:
            raise UserError(f"{run_dir}: cannot take over its lock ({exc.strerror or exc})") from None
        lock = cls(run_dir, fd)
        lock.claim(os.getpid())
        return lock

    def claim(self, pid: int) -> None:
        """Name the holder. Written over the old pid and then cut, so a reader always finds a
        whole pid on the first line."""
        data = f"{pid}\n".encode()
        try:
            os.pwrite(self.fd, data, 0)
            os.ftruncate(self.fd, len(data))
        except OSError:
            pass  # the lock holds without its label; a refusal then says "pid unknown"

    def release(self) -> None:
        """Close this descriptor: the lock goes when no process holds the file open any more
        (a launcher closes its copy after handing it down; the runner keeps its own)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def lock_held(run_dir: str | Path) -> bool | None:
    """Whether a process holds the run's lock now; None when there is no lock file (a run from
    before the lock) or it cannot be opened. Probing takes a shared lock for an instant, which
    contenders wait out (PATIENCE_S)."""
    try:
        fd = safe_files.open_regular(Path(run_dir) / LOCK_FILE)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return None
    finally:
        os.close(fd)
    return False


def lock_holder(run_dir: str | Path, patience_s: float = 0.0) -> int | None:
    """The pid the lock file names, if any; waiting up to `patience_s` for a holder that has
    just taken the lock to write it."""
    deadline = time.monotonic() + patience_s
    while True:
        try:
            fd = safe_files.open_regular(Path(run_dir) / LOCK_FILE)
        except OSError:
            return None
        try:
            pid = _pid_in(fd)
        finally:
            os.close(fd)
        if pid is not None or time.monotonic() >= deadline:
            return pid
        time.sleep(_RETRY_S)


def _open(run_dir: Path) -> int:
    try:
        return safe_files.open_regular(run_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT)
    except OSError as exc:
        reason = "a symlink is in the way" if exc.errno == errno.ELOOP else exc.strerror or str(exc)
        raise UserError(f"{run_dir}: cannot lock it ({reason})") from None


def _same_file(fd: int, path: Path) -> bool:
    try:
        mine, there = os.fstat(fd), os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return (mine.st_dev, mine.st_ino) == (there.st_dev, there.st_ino)


def _pid_in(fd: int) -> int | None:
    try:
        first = os.pread(fd, safe_files.LOCK_CAP, 0).split(b"\n", 1)[0]
        return int(first) if first.strip() else None
    except (OSError, ValueError):
        return None


def refusal(run_dir: Path, holder: int | None) -> str:
    who = f"pid {holder}" if holder else "a process whose pid it does not name"
    return (f"{run_dir}: another runner ({who}) holds this run; attach to it "
            f"(`dspark-tui attach {run_dir}`) or wait for it to end")
