"""The simulator's /tokenize and /detokenize: vLLM's shapes, a reversible toy tokenizer whose
counts match what a completion charges for the same text."""

from __future__ import annotations

import httpx
import pytest

from dspark_tui.sim import tokenizer as toy
from dspark_tui.sim.text import count_text_tokens
from tests.simulator import running_sim

TEXTS = [
    "Write a Python function that merges overlapping intervals.",
    "  two spaces,\nnew lines\tand tabs  ",
    "用一句话解释推测解码。 emoji 🚀 too",
    "supercalifragilistic words longer than six letters",
    "",
]


@pytest.mark.parametrize("text", TEXTS)
def test_decode_gives_the_text_back(text: str) -> None:
    assert toy.decode(toy.encode(text, add_special_tokens=False)) == text
    assert toy.decode(toy.encode(text)) == "<s>" + text


def test_plain_text_counts_as_completions_count_it() -> None:
    text = "The draft model proposes tokens; the target verifies them in one pass (mostly)."
    assert len(toy.encode(text, add_special_tokens=False)) == count_text_tokens(text)


def test_every_id_decodes_and_random_ids_stay_distinct() -> None:
    ids = [0, 1, 2, 3, 100, 31999, toy.PIECE_BASE, toy.PIECE_BASE + 7, toy.PIECE_LIMIT - 1,
           toy.PIECE_LIMIT, 0xD800 + toy.CHAR_BASE]
    assert all(isinstance(toy.decode_one(i), str) and toy.decode_one(i) for i in ids)
    assert len({toy.decode_one(i) for i in range(3, 32000)}) > 31000


def test_routes_speak_vllms_shapes() -> None:
    with running_sim() as sim:
        text = "Explain speculative decoding to a ten-year-old."
        answer = httpx.post(sim.url + "/tokenize", json={"model": sim.model, "prompt": text}).json()
        assert set(answer) == {"count", "max_model_len", "tokens", "token_strs"}
        assert answer["tokens"][0] == toy.BOS_ID and answer["count"] == len(answer["tokens"])
        assert answer["max_model_len"] > 0 and answer["token_strs"] is None
        bare = httpx.post(sim.url + "/tokenize", json={"prompt": text, "add_special_tokens": False,
                                                      "return_token_strs": True}).json()
        assert bare["tokens"] == answer["tokens"][1:]
        assert "".join(bare["token_strs"]) == text
        back = httpx.post(sim.url + "/detokenize", json={"model": sim.model, "tokens": bare["tokens"]})
        assert back.json() == {"prompt": text}
        # What /tokenize counts is what a completion of the same text is charged for.
        done = httpx.post(sim.url + "/v1/completions", json={
            "model": sim.model, "prompt": text, "max_tokens": 2}, timeout=30).json()
        assert done["usage"]["prompt_tokens"] == bare["count"]
        bad = httpx.post(sim.url + "/detokenize", json={"tokens": ["a"]})
        assert bad.status_code == 400 and "tokens" in bad.json()["error"]["message"]
        wrong = httpx.post(sim.url + "/tokenize", json={"model": "other", "prompt": "x"})
        assert wrong.status_code == 404
