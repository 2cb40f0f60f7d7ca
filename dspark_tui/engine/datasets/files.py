"""Reading dataset files: ShareGPT JSON and our one-prompt-a-line JSONL.

Every problem is one `DatasetError` line naming the file (and the line or entry and key).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from dspark_tui.model import UserError, safe_files
from dspark_tui.model.prompt_file import BUILTIN_PROMPT_FILE, PromptFileError, read_prompt_file
from dspark_tui.model.safe_files import DATASET_CAP


class DatasetError(UserError):
    """A dataset that cannot be read or prepared; the message is one line."""


@dataclass(frozen=True)
class PromptLine:
    """One line of a JSONL prompt file."""

    prompt: str
    category: str | None = None
    output_len: int | None = None


def shipped_prompts_path() -> Path:
    """The prompt file this project ships (chat, code, math, summarisation, structured output);
    the simulator recognises its prompts' categories from the same file."""
    return BUILTIN_PROMPT_FILE


def read_sharegpt_pairs(path: str | Path) -> list[tuple[str, str]]:
    """(first turn, second turn) of every conversation with at least two turns, in file order,
    as sglang.bench_serving keeps them (`conversations`, or `conversation`, each turn's `value`)."""
    data = _load_json(Path(path))
    if not isinstance(data, list):
        raise DatasetError(f"{path}: a ShareGPT file is a JSON list of conversations, "
                           f"not a {type(data).__name__}")
    pairs: list[tuple[str, str]] = []
    for index, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise DatasetError(f"{path}: entry {index}: not an object")
        turns = entry.get("conversations", entry.get("conversation", []))
        if not isinstance(turns, list) or len(turns) < 2:
            continue
        texts = []
        for turn in turns[:2]:
            value = turn.get("value") if isinstance(turn, dict) else None
            if not isinstance(value, str):
                raise DatasetError(f"{path}: entry {index}: a turn without a text `value`")
            texts.append(value)
        pairs.append((texts[0], texts[1]))
    if not pairs:
        raise DatasetError(f"{path}: no conversation with two turns")
    return pairs


def read_prompt_lines(path: str | Path) -> list[PromptLine]:
    """One JSON object a line: `prompt` (text), optional `category` (text) and `output_len` (> 0),
    read by the one reader the simulator shares (model/prompt_file.py). Blank lines are skipped."""
    try:
        entries = read_prompt_file(Path(path))
    except PromptFileError as exc:
        raise DatasetError(str(exc)) from None
    return [PromptLine(entry.text, entry.category, entry.output_len) for entry in entries]


def category_lines(lines: list[PromptLine], category: str, path: str | Path) -> list[PromptLine]:
    """The lines of one category, in file order; none is one error naming the ones the file has."""
    kept = [line for line in lines if line.category == category]
    if not kept:
        present = sorted({line.category for line in lines if line.category})
        raise DatasetError(f"{path}: no prompt of category {category!r} "
                           f"(the file has: {', '.join(present) or 'none'})")
    return kept


def _read_text(path: Path) -> str:
    try:  # never a FIFO's wait nor /dev/zero read whole (model/safe_files.py)
        return safe_files.read_named_text(path, DATASET_CAP, "dataset")
    except safe_files.Unreadable as exc:
        raise DatasetError(str(exc)) from None


def _load_json(path: Path) -> object:
    text = _read_text(path)
    try:
        return json.loads(text)
    except ValueError as exc:
        raise DatasetError(f"{path}: not valid JSON ({exc})") from None
