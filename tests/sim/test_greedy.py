"""The simulator's greedy output: at temperature 0 a function of the prompt, streamed or not;
with `--greedy-diverge-after N` a speculating server leaves it after N tokens, by its K."""

from __future__ import annotations

import httpx

from tests.sim._client import stream
from tests.simulator import refusal_line, running_sim

PROMPT = "Write a haiku about a server room at night."


def complete(url: str, prompt: str = PROMPT, **extra: object) -> dict:
    body = {"prompt": prompt, "max_tokens": 24, "return_token_ids": True, **extra}
    response = httpx.post(url + "/v1/completions", json=body, timeout=10)
    assert response.status_code == 200, response.text
    return response.json()["choices"][0]


def test_temperature_0_answers_a_prompt_the_same_way_every_time():
    with running_sim(spec_tokens=3) as sim:
        first, again = complete(sim.url, temperature=0), complete(sim.url, temperature=0.0)
        other = complete(sim.url, "Outline the steps to make a cup of green tea.", temperature=0)
        sampled = [complete(sim.url, temperature=1.0)["text"] for _ in range(2)]
        streamed = stream(sim.url, "/v1/completions",
                          {"prompt": PROMPT, "max_tokens": 24, "temperature": 0, "stream": True})
    assert first["text"] == again["text"] and first["token_ids"] == again["token_ids"]
    assert len(first["token_ids"]) == 24 and len(first["text"].split()) == 24
    assert other["text"] != first["text"]
    assert sampled[0] != sampled[1]  # sampling: a fresh answer per request, as before
    assert "".join(c["choices"][0]["text"] for c in streamed.content_chunks) == first["text"]


def test_a_greedy_answer_ends_at_the_same_eos_every_time():
    with running_sim("--eos-mean-tokens", "8") as sim:
        lengths = {len(complete(sim.url, f"prompt {i}", temperature=0)["token_ids"])
                   for i in range(6) for _ in range(2)}
        again = [complete(sim.url, f"prompt {i}", temperature=0)["token_ids"] for i in range(6)]
        twice = [complete(sim.url, f"prompt {i}", temperature=0)["token_ids"] for i in range(6)]
    assert again == twice and len(lengths) > 1  # fixed per prompt, not the same for all


def test_token_ids_only_when_asked():
    with running_sim() as sim:
        body = {"prompt": PROMPT, "max_tokens": 4, "temperature": 0}
        choice = httpx.post(sim.url + "/v1/completions", json=body, timeout=10).json()["choices"][0]
    assert "token_ids" not in choice


def test_diverge_switch_changes_speculating_outputs_after_n_tokens_by_k():
    with running_sim(spec_tokens=3) as clean:
        truth = complete(clean.url, temperature=0)["token_ids"]
    answers = {}
    for k in (0, 3, 5):
        with running_sim("--greedy-diverge-after", "8", spec_tokens=k) as faulty:
            answers[k] = complete(faulty.url, temperature=0)["token_ids"]
    assert answers[0] == truth  # no speculation, no drafter bug
    for k in (3, 5):
        assert answers[k][:8] == truth[:8]
        assert answers[k][8] != truth[8]
    assert answers[3][8:] != answers[5][8:]


def test_negative_diverge_after_is_one_line_and_exit_2():
    assert "--greedy-diverge-after" in refusal_line("--greedy-diverge-after", "-1")
