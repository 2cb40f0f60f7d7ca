"""The greedy equivalence check, the collecting half (docs/greedy.md): after warmup, an arm's
server answers the same fixed prompts at temperature 0, twice — the second pass is the control,
the server's own nondeterminism — and the answers are saved as greedy/{arm}-{session}.json.
Once every arm has answered, analysis/greedy.py compares them and the verdicts go out as a
GreedyChecked event and a notice.

A session whose round already has this arm's answers (a restart, a resume) does not ask again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import httpx

from dspark_tui.analysis.greedy import greedy_verdicts
from dspark_tui.engine.servers.tls import verifying_context
from dspark_tui.model import Arm, Plan
from dspark_tui.model.events import Event, GreedyChecked, Notice
from dspark_tui.model.greedy import GreedyAnswer, GreedyAnswers
from dspark_tui.results import RunStore
from dspark_tui.results.greedy import load_answers, save_answers

__all__ = ["announce", "answered_in_round", "collect", "greedy_prompts", "save_answers"]

GREEDY_MAX_TOKENS = 64
PASSES = 2  # the answer, then the control
MAX_IN_FLIGHT = 16

# Short prompts of several kinds (chat, code, math, summary, structured output): written for this
# check, so that a drafter has something real to accept on a real model.
PROMPTS = (
    "Explain in two sentences why the sky looks blue during the day.",
    "Write a Python function that returns the n-th Fibonacci number iteratively.",
    "What is 17 multiplied by 23? Show the steps.",
    "Summarise the plot of a heist film in three short sentences.",
    'Return a JSON object with keys "name", "age" and "city" for a fictional person.',
    "List five uses of a paper clip other than holding paper.",
    "Translate to French: The train leaves at seven in the morning.",
    "Write a SQL query that counts orders per customer in a table named orders.",
    "A rectangle is 8 cm by 5 cm. What are its area and perimeter?",
    "Describe how a hash map handles collisions, briefly.",
    "Write a haiku about a server room at night.",
    "Give three tips for writing clear commit messages.",
    "Convert this list to YAML: apples 3, pears 5, plums 7.",
    "Write a shell command that finds the ten largest files under the current directory.",
    "Why does ice float on water? Answer for a ten-year-old.",
    "Outline the steps to make a cup of green tea.",
)


def greedy_prompts(count: int) -> list[str]:
    """The first `count` prompts; past the list, numbered variants, so each prompt is unique."""
    return [PROMPTS[i % len(PROMPTS)] + (f" (variant {i // len(PROMPTS) + 1})"
                                          if i >= len(PROMPTS) else "") for i in range(count)]


def answered_in_round(store: RunStore, arm: str, round: int) -> bool:
    answers, _ = load_answers(store.path)
    return any(a.arm == arm and a.round == round for a in answers)


async def collect(base_url: str, plan: Plan, arm: Arm, *, session: str, round: int,
                  headers: dict[str, str], model: str | None = None) -> GreedyAnswers:
    """Both passes over the prompts; a prompt that fails keeps its error and the rest go on.
    `model`: the name the session's server serves under (else the plan's)."""
    prompts = greedy_prompts(plan.bench.check_greedy)
    started = time.monotonic()
    limit = asyncio.Semaphore(MAX_IN_FLIGHT)
    timeout = httpx.Timeout(plan.bench.cell_timeout_s, connect=10.0)
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=timeout,
                                 verify=verifying_context()) as client:

        async def one(prompt: str) -> GreedyAnswer:
            async with limit:
                return await _ask(client, model or plan.served_model_name, prompt)

        passes = [list(await asyncio.gather(*(one(p) for p in prompts))) for _ in range(PASSES)]
    return GreedyAnswers(arm=arm.name, session=session, round=round, max_tokens=GREEDY_MAX_TOKENS,
                         prompts=prompts, passes=passes, seconds=time.monotonic() - started)


async def _ask(client: httpx.AsyncClient, model: str, prompt: str) -> GreedyAnswer:
    body: dict[str, object] = {"model": model, "prompt": prompt, "max_tokens": GREEDY_MAX_TOKENS,
                               "temperature": 0, "stream": False,
                               "return_token_ids": True}  # vLLM >= 0.10.2 returns the ids
    try:
        response = await client.post("/v1/completions", json=body)
        if response.status_code == 400 and "return_token_ids" in response.text:
            del body["return_token_ids"]  # a server that refuses unknown fields: compare text
            response = await client.post("/v1/completions", json=body)
        if response.status_code != 200:
            return GreedyAnswer(error=f"HTTP {response.status_code}: {response.text[:200]}")
        choice = response.json()["choices"][0]
        ids = choice.get("token_ids")
        return GreedyAnswer(text=str(choice.get("text") or ""),
                            token_ids=ids if _is_id_list(ids) else None,
                            finish_reason=choice.get("finish_reason"))
    except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
        return GreedyAnswer(error=f"{type(exc).__name__}: {exc}"[:200])


def _is_id_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, int) for v in value)


def announce(store: RunStore, answers: GreedyAnswers, emit: Callable[[Event], None]) -> None:
    """The event for this session's answers, with the verdicts once every arm has answered, and
    a notice for each verdict this session changed (the first complete one included): a warning
    when an arm's output diverges. Later sessions that change nothing stay quiet."""
    first, *others = answers.passes
    failed = sum(1 for a in first if a.error is not None)
    control = sum(1 for a, b in zip(first, others[0] if others else first, strict=False)
                  if a.error is None and b.error is None and a.text != b.text)
    manifest = store.read_manifest()
    verdicts = greedy_verdicts(store.path, manifest)
    before = greedy_verdicts(store.path, manifest, without=(answers.arm, answers.session))
    emit(GreedyChecked(arm=answers.arm, session=answers.session, prompts=len(answers.prompts),
                       seconds=round(answers.seconds, 3), control_differs=control, failed=failed,
                       verdicts=verdicts))
    if failed:
        emit(Notice(level="warning", message=f"{answers.arm}: greedy check: {failed} of "
                    f"{len(answers.prompts)} prompts got no answer"))
    told = {v.arm: v for v in before or []}
    for verdict in verdicts or []:
        if told.get(verdict.arm) != verdict:
            emit(Notice(level="warning" if verdict.verdict == "diverges" else "info",
                        message=verdict.line()))
