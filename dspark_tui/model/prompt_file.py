"""A prompt file: one JSON object a line, `prompt` (or `text`) and an optional `category`.

The simulator reads it here to know which category a prompt it receives belongs to; the client
reads the same format as the plan's `jsonl` dataset (engine/datasets/files.py, which a
category-pure scenario filters to its category).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from dspark_tui.model.errors import UserError

# The project's own small prompt file (written for it): chat, code and structured output.
BUILTIN_PROMPT_FILE = Path(__file__).resolve().parent.parent / "data" / "prompts.jsonl"


class PromptFileError(UserError):
    """A prompt file that cannot be used; str() names the file and line."""


@dataclass(frozen=True)
class PromptEntry:
    text: str
    category: str | None = None


def read_prompt_file(path: Path) -> list[PromptEntry]:
    """Every prompt of the file in order; a bad line is one `PromptFileError` naming it."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise PromptFileError(f"{path}: cannot read the prompt file: {exc}") from None
    entries = [entry for number, line in enumerate(lines, 1)
               if (entry := _entry(path, number, line)) is not None]
    if not entries:
        raise PromptFileError(f"{path}: no prompts in the file")
    return entries


def _entry(path: Path, number: int, line: str) -> PromptEntry | None:
    if not line.strip():
        return None
    where = f"{path}:{number}"
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise PromptFileError(f"{where}: not JSON: {exc.msg}") from None
    if not isinstance(record, dict):
        raise PromptFileError(f"{where}: a line must be a JSON object")
    text = record.get("prompt", record.get("text"))
    if not isinstance(text, str) or not text.strip():
        raise PromptFileError(f"{where}: prompt: a non-empty string is required")
    category = record.get("category")
    if category is not None and (not isinstance(category, str) or not category.strip()):
        raise PromptFileError(f"{where}: category: must be a non-empty string")
    return PromptEntry(text=text, category=category)
