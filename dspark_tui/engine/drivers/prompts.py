"""Benchmark prompts drawn exactly like sglang.bench_serving's `random-ids` dataset.

sglang seeds numpy's legacy generator (`np.random.seed(seed)`) and draws
`randint(max(int(L * r), 1), L + 1)` for every input length, then every output length, then one
token-id offset per prompt. Python's `random.Random` runs the same Mersenne Twister, so after
seeding it the way numpy's legacy `seed(int)` does and drawing bounded integers the way numpy's
legacy `randint` does (masked rejection on 32-bit words), the lengths and token ids match
sglang's for the same seed, without importing numpy.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

_MT_WORDS = 624
# Token ids stay inside every modern vocabulary and clear of the special tokens at its start.
DEFAULT_VOCAB_SIZE = 32000


class LegacyNumpyRandom:
    """numpy.random.RandomState(seed).randint(...) for int seeds and int64 results."""

    def __init__(self, seed: int) -> None:
        if not 0 <= seed <= 0xFFFFFFFF:
            raise ValueError(f"seed must be in [0, 2**32), got {seed}")
        state = [seed & 0xFFFFFFFF]
        for i in range(1, _MT_WORDS):
            previous = state[-1]
            state.append((1812433253 * (previous ^ (previous >> 30)) + i) & 0xFFFFFFFF)
        self._twister = random.Random()
        self._twister.setstate((3, (*state, _MT_WORDS), None))

    def randint(self, low: int, high: int, size: int) -> list[int]:
        """`size` integers in [low, high), as numpy's legacy masked rejection sampler draws them."""
        span = high - low - 1
        if span < 0:
            raise ValueError(f"low >= high ({low} >= {high})")
        if span == 0:
            return [low] * size
        if span > 0xFFFFFFFF:
            raise ValueError("ranges wider than 2**32 are not needed here")
        mask = (1 << span.bit_length()) - 1
        draw = self._twister.getrandbits
        values: list[int] = []
        for _ in range(size):
            value = draw(32) & mask
            while value > span:
                value = draw(32) & mask
            values.append(low + value)
        return values


@dataclass(frozen=True)
class PromptSpec:
    token_ids: list[int]
    output_len: int

    @property
    def input_len(self) -> int:
        return len(self.token_ids)


def random_lengths(rng: LegacyNumpyRandom, full_len: int, range_ratio: float, count: int) -> list[int]:
    """Uniform in [max(1, int(L * r)), L], sglang's `compute_random_lens`."""
    return rng.randint(max(int(full_len * range_ratio), 1), full_len + 1, count)


def random_id_prompts(
    input_len: int,
    output_len: int,
    range_ratio: float,
    count: int,
    seed: int,
    vocab_size: int = DEFAULT_VOCAB_SIZE,
) -> list[PromptSpec]:
    """The cell's prompts; the same seed always gives the same token ids and lengths."""
    rng = LegacyNumpyRandom(seed)
    input_lens = random_lengths(rng, input_len, range_ratio, count)
    output_lens = random_lengths(rng, output_len, range_ratio, count)
    offsets = rng.randint(0, vocab_size, count)
    prompts: list[PromptSpec] = []
    for i in range(count):
        start = offsets[i] + i
        ids = [(start + j) % vocab_size for j in range(input_lens[i])]
        prompts.append(PromptSpec(token_ids=ids, output_len=output_lens[i]))
    return prompts
