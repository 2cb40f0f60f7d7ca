"""What a refused save says: the error and the place it names, and the one fix that fits it
(a permission problem is not cured by freeing space)."""

from __future__ import annotations

import errno
from pathlib import Path


def save_problem(exc: OSError, run_dir: Path) -> str:
    """`permission denied on PATH`, `No space left on device (PATH)`: what and where."""
    where = Path(exc.filename) if exc.filename else run_dir
    if where.name.startswith(".") and where.name.endswith(".tmp"):
        where = where.parent  # the atomic writer's temporary name: the folder is what refused
    if isinstance(exc, PermissionError):
        return f"permission denied on {where}"
    return f"{exc.strerror or exc} ({where})"


def save_advice(exc: OSError) -> str:
    if isinstance(exc, PermissionError):
        return "give your user write access there"
    if exc.errno == errno.EROFS:
        return "make the file system writable"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "free space"
    return "fix the cause above"
