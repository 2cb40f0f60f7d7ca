"""Reading a JSONL file that another process is appending to, from where the last read stopped."""

from __future__ import annotations

from pathlib import Path


def read_complete_lines(path: Path, offset: int) -> tuple[list[bytes], int]:
    """The complete lines after byte `offset` (newline stripped) and the offset after the last one.

    A torn last line (its writer has not finished it) is left for the next read, so no line is
    ever seen half; blank lines are skipped. A missing file has no lines yet; other OSErrors
    propagate.
    """
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            data = handle.read()
    except FileNotFoundError:
        return [], offset
    complete = data[: data.rfind(b"\n") + 1]
    return [line for line in complete.split(b"\n") if line.strip()], offset + len(complete)
