"""How many bytes a run directory holds, for History and `runs`, without re-walking every file.

A run's files sit in a few dozen directories (cells/{arm}, raw/{arm}__r{r}p{p}, series/{arm},
logs, ...) but number thousands in a K sweep. A settled run (not running) only gains or loses
files by atomic renames, which change their directory's mtime, so each directory's total is
cached by its mtime: a rescan stats the directories, not the files. A running run appends to
files in place (events, logs, a CLI's output), so it is walked in full each time and not cached.
Symbolic links are not followed (a link counts as itself), so a loop costs nothing.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class _Folder:
    mtime_ns: int
    file_bytes: int  # the sizes of its own entries that are not directories
    subfolders: tuple[str, ...]


# A folder changed within this long may change again within the file system's timestamp
# granularity, unseen by its mtime: it is not cached yet (git's "racily clean" rule).
_SETTLE_NS = 2_000_000_000

_cache: dict[str, _Folder] = {}
_lock = threading.Lock()  # History scans in a worker thread while the CLI may scan too


def run_size_bytes(path: str | Path, settled: bool = True) -> int | None:
    """The bytes under `path`; None when the directory cannot be read at all."""
    try:
        return _folder_bytes(os.fspath(path), settled)
    except OSError:
        return None


def _folder_bytes(folder: str, settled: bool) -> int:
    mtime_ns = os.stat(folder, follow_symlinks=False).st_mtime_ns
    with _lock:
        cached = _cache.get(folder) if settled else None
    if cached is None or cached.mtime_ns != mtime_ns:
        cached = _read_folder(folder, mtime_ns)
        if settled and time.time_ns() - mtime_ns > _SETTLE_NS:
            with _lock:
                _cache[folder] = cached
    total = cached.file_bytes
    for name in cached.subfolders:
        try:
            total += _folder_bytes(os.path.join(folder, name), settled)
        except OSError:
            continue  # gone since, or unreadable: counted as nothing
    return total


def _read_folder(folder: str, mtime_ns: int) -> _Folder:
    file_bytes = 0
    subfolders = []
    with os.scandir(folder) as entries:
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    subfolders.append(entry.name)
                else:
                    file_bytes += entry.stat(follow_symlinks=False).st_size
            except OSError:
                continue
    return _Folder(mtime_ns, file_bytes, tuple(subfolders))


def forget_sizes() -> None:
    """Empty the cache (tests, and a process that wants a cold scan measured)."""
    with _lock:
        _cache.clear()


def format_size(size: int | None, *, short: bool = False) -> str:
    """`512 B`, `3.4 MB`, `1.2 GB` (powers of 1000, as `df -H` and file managers show); `?`: unknown.
    `short`: at most four characters, `512B`, `3.4M`, `84M` (History's column at 80 columns)."""
    if size is None:
        return "?"
    value = float(size)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if value < 999.5 or unit == "TB":
            if short:
                return f"{value:.1f}{unit[0]}" if value < 9.95 and unit != "B" else f"{value:.0f}{unit[0]}"
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")
