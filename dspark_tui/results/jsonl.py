"""Reading a JSONL file that another process is appending to, from where the last read stopped."""

from __future__ import annotations

from pathlib import Path

from dspark_tui.model import safe_files


def read_complete_lines(path: Path, offset: int,
                        cap: int = safe_files.EVENTS_CAP) -> tuple[list[bytes], int]:
    """The complete lines after byte `offset` (newline stripped) and the offset after the last one.

    A torn last line (its writer has not finished it) is left for the next read, so no line is
    ever seen half; blank lines are skipped. A missing file has no lines yet; other OSErrors
    propagate (a FIFO, a device or a symlink among them: `model/safe_files.py`). At most
    `cap` bytes are read at once: the lines within, the rest at the next read.
    """
    try:
        data = safe_files.read_bytes(path, cap, offset, partial=True)
    except FileNotFoundError:
        return [], offset
    complete = data[: data.rfind(b"\n") + 1]
    return [line for line in complete.split(b"\n") if line.strip()], offset + len(complete)
