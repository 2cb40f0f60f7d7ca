"""A prompt file: one JSON object a line, `prompt`, an optional `category` and `output_len`.

The simulator reads it here to know which category a prompt it receives belongs to; the client
reads the same format as the plan's `jsonl` dataset (engine/datasets/files.py, which a
category-pure scenario filters to its category).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from dspark_tui.model import safe_files
from dspark_tui.model.errors import UserError

# The project's own prompt file (written for it): chat, code, math, summarisation, structured.
BUILTIN_PROMPT_FILE = Path(__file__).resolve().parent.parent / "data" / "prompts.jsonl"


class PromptFileError(UserError):
    """A prompt file that cannot be used; str() names the file and line."""


@dataclass(frozen=True)
class PromptEntry:
    text: str
    category: str | None = None
    output_len: int | None = None


KEYS = ("prompt", "category", "output_len")


def read_prompt_file(path: Path) -> list[PromptEntry]:
    """Every prompt of the file in order (blank lines skipped); a bad line is one
    `PromptFileError` naming the file, the line and the key."""
    try:  # never a FIFO's wait nor /dev/zero read whole; the one line a named file's reader says
        lines = safe_files.read_named_text(path, safe_files.DATASET_CAP, "prompt").splitlines()
    except safe_files.Unreadable as exc:
        raise PromptFileError(str(exc)) from None
    entries = [entry for number, line in enumerate(lines, 1)
               if (entry := _entry(path, number, line)) is not None]
    if not entries:
        raise PromptFileError(f"{path}: holds no prompt")
    return entries


def _entry(path: Path, number: int, line: str) -> PromptEntry | None:
    if not line.strip():
        return None
    where = f"{path}:{number}"
    try:
        record = json.loads(line)
    except ValueError as exc:
        raise PromptFileError(f"{where}: not JSON ({exc.args[0] if exc.args else exc})") from None
    if not isinstance(record, dict):
        raise PromptFileError(f"{where}: expected an object with a `prompt`")
    unknown = sorted(set(record) - set(KEYS))
    if unknown:
        raise PromptFileError(f"{where}: {unknown[0]}: unknown key ({', '.join(KEYS)})")
    text, category, output_len = record.get("prompt"), record.get("category"), record.get("output_len")
    if not isinstance(text, str) or not text.strip():
        raise PromptFileError(f"{where}: prompt: required, a non-empty string")
    if category is not None and (not isinstance(category, str) or not category.strip()):
        raise PromptFileError(f"{where}: category: a non-empty string, got {category!r}")
    if output_len is not None and (not isinstance(output_len, int) or isinstance(output_len, bool)
                                   or output_len <= 0):
        raise PromptFileError(f"{where}: output_len: a positive integer, got {output_len!r}")
    return PromptEntry(text=text, category=category, output_len=output_len)
