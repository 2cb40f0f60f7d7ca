"""Benchmark prompts drawn exactly like sglang.bench_serving's `random-ids` dataset (text
datasets are drawn in engine/datasets/).

sglang seeds numpy's legacy generator (`np.random.seed(seed)`) and draws
`randint(max(int(L * r), 1), L + 1)` for every input length, then every output length, then one
token-id offset per prompt. A `numpy.random.RandomState` seeded the same way makes the same
draws, so the lengths and token ids match sglang's for the same seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Token ids stay inside every modern vocabulary and clear of the special tokens at its start.
DEFAULT_VOCAB_SIZE = 32000


@dataclass(frozen=True)
class PromptSpec:
    """One request's prompt. `random-ids` sends the token ids; a text dataset (engine/datasets)
    sends `text`, as sglang does, and counts `prompt_len` input tokens as sglang counts them."""

    token_ids: list[int]
    output_len: int
    text: str | None = None
    prompt_len: int | None = None
    category: str | None = None

    @property
    def input_len(self) -> int:
        return len(self.token_ids) if self.prompt_len is None else self.prompt_len

    @property
    def prompt(self) -> str | list[int]:
        return self.token_ids if self.text is None else self.text


def random_lengths(rng: np.random.RandomState, full_len: int, range_ratio: float, count: int) -> list[int]:
    """Uniform in [max(1, int(L * r)), L], sglang's `compute_random_lens`."""
    return rng.randint(max(int(full_len * range_ratio), 1), full_len + 1, size=count).tolist()


def random_id_prompts(
    input_len: int,
    output_len: int,
    range_ratio: float,
    count: int,
    seed: int,
    vocab_size: int = DEFAULT_VOCAB_SIZE,
) -> list[PromptSpec]:
    """The cell's prompts; the same seed always gives the same token ids and lengths."""
    rng = np.random.RandomState(seed)
    input_lens = random_lengths(rng, input_len, range_ratio, count)
    output_lens = random_lengths(rng, output_len, range_ratio, count)
    offsets = rng.randint(0, vocab_size, size=count)
    # Prompt i is a run of consecutive ids from offsets[i] + i, wrapping at the vocabulary's end.
    return [
        PromptSpec(token_ids=((offsets[i] + i + np.arange(input_lens[i])) % vocab_size).tolist(),
                   output_len=output_lens[i])
        for i in range(count)
    ]
