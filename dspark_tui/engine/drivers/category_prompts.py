"""A category-pure cell's prompts: one category's texts from a prompt file, at drawn lengths.

Until the plan's `jsonl` dataset exists (issue 16 item 1), the file is the project's own
(`model.prompt_file.BUILTIN_PROMPT_FILE`); the lengths are drawn as `random-ids` draws them (same
seed, same order), and prompt i is the category's text i (cycling) with its words repeated or cut
to the drawn input length — one word a token, an approximation the dataset work replaces with
the server's /tokenize. The first words stay, which is what the simulator recognises a prompt by.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dspark_tui.engine.drivers.base import CellError
from dspark_tui.engine.drivers.prompts import PromptSpec, random_id_prompts, random_lengths
from dspark_tui.model import CellSpec
from dspark_tui.model.prompt_file import (
    BUILTIN_PROMPT_FILE,
    PromptFileError,
    category_prompts,
    read_prompt_file,
)

# A prompt keeps at least this many of its words, so its start still identifies it.
MIN_WORDS = 8


def cell_prompts(cell: CellSpec, seed: int, path: Path = BUILTIN_PROMPT_FILE) -> list[PromptSpec]:
    """The cell's prompts: its category's texts, or `random-ids` when it has no category."""
    if cell.category is None:
        return random_id_prompts(cell.input_len, cell.output_len, cell.range_ratio,
                                 cell.num_prompts, seed)
    try:
        texts = category_prompts(read_prompt_file(path), cell.category, path)
    except PromptFileError as exc:
        raise CellError(str(exc)) from None
    return category_text_prompts(texts, cell.input_len, cell.output_len, cell.range_ratio,
                                 cell.num_prompts, seed)


def category_text_prompts(texts: list[str], input_len: int, output_len: int,
                          range_ratio: float, count: int, seed: int) -> list[PromptSpec]:
    rng = np.random.RandomState(seed)
    input_lens = random_lengths(rng, input_len, range_ratio, count)
    output_lens = random_lengths(rng, output_len, range_ratio, count)
    prompts: list[PromptSpec] = []
    for i in range(count):
        words = texts[i % len(texts)].split()
        length = max(input_lens[i], min(MIN_WORDS, len(words)))
        repeated = (words * (length // len(words) + 1))[:length]
        prompts.append(PromptSpec(token_ids=[], output_len=output_lens[i],
                                  text=" ".join(repeated), prompt_len=length))
    return prompts
