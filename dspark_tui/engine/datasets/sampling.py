"""Drawing a cell's prompts from a text dataset, with sglang.bench_serving's semantics.

sglang seeds Python's `random` and numpy's legacy generator with the same seed, then:

- `random`: draws every input length, then every output length (numpy, uniform in
  [max(1, int(L * r)), L]); lowers each input length by the special tokens the tokenizer adds
  (they come back when the server tokenizes the text); keeps the first two turns of each
  conversation with two or more; shuffles them (Python's `random.shuffle`); then, in that order,
  encodes the first turn, skips an empty one, cuts its ids to the drawn length or repeats them
  until they reach it, and decodes them back to text. Prompt i is the i-th kept conversation.
- `sharegpt`: shuffles the same pairs; a prompt is the first turn as written, its output length
  the second turn's token count; pairs where either has fewer than 2 tokens are skipped.
- `jsonl` (ours): the file's prompts shuffled, repeated until there are enough; output length
  from the line, else drawn as `random` draws it.

Encoding is done in batches of concurrent requests, then walked in order, so the result is the
one a sequential walk gives.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import numpy as np

from dspark_tui.engine.datasets.files import DatasetError, PromptLine
from dspark_tui.engine.datasets.prompts import random_lengths
from dspark_tui.engine.datasets.tokenizers import Tokenizer

BATCH = 32


@dataclass(frozen=True)
class TextPrompt:
    text: str  # what the client sends
    token_ids: list[int]  # the tokenizer's ids of the prompt (for `random`: before decoding)
    prompt_len: int  # input tokens as sglang counts them
    output_len: int
    category: str | None = None


async def _in_batches(items: Sequence[str], work: Callable[[str], Awaitable[list[int]]],
                      start: int) -> list[list[int]]:
    return list(await asyncio.gather(*(work(text) for text in items[start:start + BATCH])))


async def random_prompts(pairs: Sequence[tuple[str, str]], input_len: int, output_len: int,
                         range_ratio: float, count: int, seed: int,
                         tokenizer: Tokenizer) -> list[TextPrompt]:
    rng = np.random.RandomState(seed)
    input_lens = random_lengths(rng, input_len, range_ratio, count)
    output_lens = random_lengths(rng, output_len, range_ratio, count)
    special = await tokenizer.special_count()
    input_lens = [max(1, n - special) for n in input_lens]
    order = list(pairs)
    random.Random(seed).shuffle(order)
    firsts = [first for first, _ in order]
    chosen: list[list[int]] = []
    start = 0
    while len(chosen) < count and start < len(firsts):
        for ids in await _in_batches(firsts, tokenizer.encode, start):
            i = len(chosen)
            if i == count:
                break
            if not ids:
                continue
            want = input_lens[i]
            repeats = (want + len(ids) - 1) // len(ids)
            chosen.append(ids[:want] if len(ids) > want else (ids * repeats)[:want])
        start += BATCH
    _enough(len(chosen), count, "conversations with a non-empty first turn")
    texts = await asyncio.gather(*(tokenizer.decode(ids) for ids in chosen))
    return [TextPrompt(text, ids, input_lens[i], output_lens[i])
            for i, (text, ids) in enumerate(zip(texts, chosen, strict=True))]


async def sharegpt_prompts(pairs: Sequence[tuple[str, str]], count: int, seed: int,
                           tokenizer: Tokenizer) -> list[TextPrompt]:
    order = list(pairs)
    random.Random(seed).shuffle(order)
    flat = [text for pair in order for text in pair]
    kept: list[TextPrompt] = []
    start = 0
    while len(kept) < count and start < len(flat):
        batch = await _in_batches(flat, tokenizer.encode, start)
        for k in range(0, len(batch), 2):
            if len(kept) == count:
                break
            prompt_ids, completion_ids = batch[k], batch[k + 1]
            if len(prompt_ids) < 2 or len(completion_ids) < 2:
                continue
            kept.append(TextPrompt(flat[start + k], prompt_ids, len(prompt_ids), len(completion_ids)))
        start += BATCH  # BATCH is even: a batch never splits a pair
    _enough(len(kept), count, "conversations whose two turns have 2 tokens or more")
    return kept


async def jsonl_prompts(lines: Sequence[PromptLine], output_len: int, range_ratio: float,
                        count: int, seed: int, tokenizer: Tokenizer) -> list[TextPrompt]:
    rng = np.random.RandomState(seed)
    output_lens = random_lengths(rng, output_len, range_ratio, count)
    order = list(range(len(lines)))
    random.Random(seed).shuffle(order)
    used = sorted(set(order[i % len(order)] for i in range(count)))
    encoded = await asyncio.gather(*(tokenizer.encode(lines[j].prompt) for j in used))
    ids_of = dict(zip(used, encoded, strict=True))
    prompts = []
    for i in range(count):
        line = lines[order[i % len(order)]]
        ids = ids_of[order[i % len(order)]]
        prompts.append(TextPrompt(line.prompt, ids, len(ids), line.output_len or output_lens[i],
                                  line.category))
    return prompts


def _enough(got: int, wanted: int, what: str) -> None:
    if got < wanted:
        raise DatasetError(f"the dataset has {got} {what}, fewer than the {wanted} prompts "
                           "a cell asks for (lower num_prompts or use a larger file)")
