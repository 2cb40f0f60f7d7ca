"""The native client's `random` and `sharegpt` prompts equal sglang.bench_serving 0.5.23's.

tests/data/sglang_0.5.23_prompts.json was recorded by running sglang 0.5.23's own
`sample_random_requests` and `sample_sharegpt_requests` (tests/data/record_sglang_prompts.py)
on tests/data/sharegpt_small.json, seeded as sglang seeds, with the simulator's toy tokenizer.
Here the same cases are drawn by engine/datasets, tokenizing through a running simulator's
/tokenize and /detokenize over HTTP, and must give the same token ids, lengths and texts.
"""

from __future__ import annotations

import json
from pathlib import Path

from dspark_tui.engine.datasets.files import read_sharegpt_pairs
from dspark_tui.engine.datasets.sampling import random_prompts, sharegpt_prompts
from dspark_tui.engine.datasets.tokenizers import RememberingTokenizer, ServerTokenizer
from tests.simulator import running_sim

DATA = Path(__file__).resolve().parent.parent / "data"


async def test_native_prompts_equal_sglangs() -> None:
    fixture = json.loads((DATA / "sglang_0.5.23_prompts.json").read_text())
    assert fixture["sglang"] == "0.5.23"
    pairs = read_sharegpt_pairs(DATA / fixture["sharegpt_file"])
    with running_sim() as sim:
        # As a run prepares its sets: one remembering tokenizer for all of them.
        tokenizer = RememberingTokenizer(ServerTokenizer(sim.url, sim.model, {}))
        try:
            for case in fixture["cases"]:
                if case["dataset"] == "random":
                    ours = await random_prompts(pairs, case["input_len"], case["output_len"],
                                                case["range_ratio"], case["num_prompts"],
                                                case["seed"], tokenizer)
                else:
                    ours = await sharegpt_prompts(pairs, case["num_prompts"], case["seed"], tokenizer)
                theirs = case["prompts"]
                assert len(ours) == len(theirs) == case["num_prompts"]
                for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
                    where = f"{case['dataset']} seed {case['seed']} prompt {i}"
                    assert a.token_ids == b["token_ids"], where
                    assert (a.prompt_len, a.output_len) == (b["prompt_len"], b["output_len"]), where
                    assert a.text == b["text"], where
        finally:
            await tokenizer.aclose()


class CountingTokenizer(ServerTokenizer):
    def __init__(self, *args: object) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        self.texts: list[str] = []

    async def encode(self, text: str) -> list[int]:
        self.texts.append(text)
        return await super().encode(text)


async def test_sets_of_one_run_encode_each_text_once_and_draw_the_same_prompts() -> None:
    """The sets of a run share the file's shuffled order: a larger set's first conversations
    are a smaller one's. Remembered, each text goes to /tokenize once; the prompts are those
    of a tokenizer that asks every time."""
    pairs = read_sharegpt_pairs(DATA / "sharegpt_small.json")
    with running_sim() as sim:
        counting = CountingTokenizer(sim.url, sim.model, {})
        remembering = RememberingTokenizer(counting)
        plain = ServerTokenizer(sim.url, sim.model, {})
        try:
            for count, input_len in ((8, 64), (24, 128), (24, 64)):
                ours = await random_prompts(pairs, input_len, 32, 0.5, count, 1, remembering)
                theirs = await random_prompts(pairs, input_len, 32, 0.5, count, 1, plain)
                assert ours == theirs
            await sharegpt_prompts(pairs, 16, 1, remembering)
        finally:
            await remembering.aclose()
            await plain.aclose()
    assert len(counting.texts) == len(set(counting.texts))
    # Without it: 32 + 32 + 32 first turns encoded (a batch of 32 each), and "" each time.
    assert counting.texts.count("") == 1 and len(counting.texts) < 32 * 3
