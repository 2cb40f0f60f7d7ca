"""The greedy equivalence check's comparison (docs/greedy.md): every arm's greedy answers against
one reference arm's (K = 0 when the plan has it, else the first arm), prompt by prompt, token by
token where the server returned token ids, else character by character.

Real servers differ without a bug (FP8 KV cache, tensor-parallel numerics, batch shape), so a
difference only counts when it comes earlier than the control's: the position at which the
arm's or the reference's own answers to the same prompt (the second pass in each session, and
other sessions) first differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from dspark_tui.analysis.layout import baseline_arm
from dspark_tui.model import Plan
from dspark_tui.model.greedy import GreedyAnswer, GreedyAnswers, GreedyVerdict
from dspark_tui.model.speculation import differs_beyond_speculation
from dspark_tui.results.greedy import load_answers
from dspark_tui.results.manifest import RunManifest

EXCERPT_BEFORE = 24
EXCERPT_AFTER = 32


@dataclass(frozen=True)
class GreedyResult:
    """What the report shows: the verdicts and the facts they rest on."""

    reference: str
    prompts: int
    max_tokens: int
    sessions: dict[str, int]  # arm -> sessions that answered
    control_differs: dict[str, int]  # arm -> prompts whose own answers differ
    verdicts: list[GreedyVerdict]
    problems: list[str]


def greedy_result(run_dir: Path, manifest: RunManifest) -> GreedyResult | None:
    """The run's check from its greedy/ files; None when the run has none."""
    answers, problems = load_answers(run_dir)
    if not answers and not problems:
        return None
    arms = manifest.arm_names() or sorted({a.arm for a in answers})
    reference = baseline_arm(manifest) or (arms[0] if arms else "")
    return compare_answers(answers, arms, reference, _plan(manifest), problems)


def greedy_verdicts(run_dir: Path, manifest: RunManifest,
                    without: tuple[str, str] | None = None) -> list[GreedyVerdict] | None:
    """The verdicts once every arm has answered at least once; None before that. `without`
    (arm, session) leaves one session's answers out: what the verdicts were before it."""
    answers, _ = load_answers(run_dir)
    if without is not None:
        answers = [a for a in answers if (a.arm, a.session) != without]
    arms = manifest.arm_names()
    if not arms or not {a.arm for a in answers} >= set(arms):
        return None
    reference = baseline_arm(manifest) or arms[0]
    return compare_answers(answers, arms, reference, _plan(manifest)).verdicts


def _plan(manifest: RunManifest) -> Plan | None:
    try:
        return Plan.model_validate(manifest.plan)
    except (ValidationError, ValueError):
        return None


def compare_answers(answers: Sequence[GreedyAnswers], arms: Sequence[str], reference: str,
                    plan: Plan | None, problems: Sequence[str] = ()) -> GreedyResult:
    by_arm: dict[str, list[GreedyAnswers]] = {arm: [] for arm in arms}
    for item in answers:
        by_arm.setdefault(item.arm, []).append(item)
    first = next((a for a in by_arm.get(reference, [])), None)
    verdicts = [_verdict(arm, reference, by_arm, plan) for arm in by_arm if arm != reference]
    return GreedyResult(
        reference=reference,
        prompts=len(first.prompts) if first else max((len(a.prompts) for a in answers), default=0),
        max_tokens=first.max_tokens if first else max((a.max_tokens for a in answers), default=0),
        sessions={arm: len(items) for arm, items in by_arm.items()},
        control_differs={arm: _control_differs(items) for arm, items in by_arm.items()},
        verdicts=verdicts,
        problems=list(problems),
    )


def _verdict(arm: str, reference: str, by_arm: dict[str, list[GreedyAnswers]],
             plan: Plan | None) -> GreedyVerdict:
    base = GreedyVerdict(arm=arm, reference=reference, verdict="no_answers")
    if plan is None:
        return base.model_copy(update={"verdict": "not_compared",
                                       "reason": "the plan in run.json does not read"})
    try:
        beyond = differs_beyond_speculation(plan, reference, arm)
    except KeyError:
        beyond = False  # an arm the plan no longer has: its answers still compare
    if beyond:
        return base.model_copy(update={"verdict": "not_compared",
                                       "reason": "differs in more than speculation"})
    mine, theirs = by_arm.get(arm, []), by_arm.get(reference, [])
    if not mine or not theirs:
        return base.model_copy(update={"reason": f"no answers from {arm if not mine else reference}"})
    return _compare(base, mine, theirs)


def _compare(base: GreedyVerdict, mine: list[GreedyAnswers],
             theirs: list[GreedyAnswers]) -> GreedyVerdict:
    mine_by_prompt, theirs_by_prompt = _by_prompt(mine), _by_prompt(theirs)
    compared = diverging = within = 0
    first: dict[str, object] = {}
    for index, prompt in enumerate(mine[0].prompts):
        own, ref = mine_by_prompt.get(prompt, []), theirs_by_prompt.get(prompt, [])
        if not own or not ref:
            continue
        compared += 1
        unit = "token" if all(a.token_ids is not None for a in (*own, *ref)) else "char"
        at = _first_difference(own[0], ref[0], unit)
        if at is None:
            continue
        control = min(_control_position(own, unit), _control_position(ref, unit))
        if at >= control:
            within += 1
            continue
        diverging += 1
        if not first:
            expected, got = _excerpts(ref[0].text, own[0].text)
            first = {"first_prompt": index + 1, "first_position": at, "unit": unit,
                     "expected": expected, "got": got}
    verdict = "diverges" if diverging else "within_control" if within else "same"
    return base.model_copy(update={"verdict": verdict, "compared": compared,
                                   "diverging": diverging, "within_control": within, **first})


def _by_prompt(sessions: list[GreedyAnswers]) -> dict[str, list[GreedyAnswer]]:
    """Every usable answer to each prompt, the earliest session's first pass first."""
    found: dict[str, list[GreedyAnswer]] = {}
    for item in sessions:
        for answers in item.passes:
            for prompt, answer in zip(item.prompts, answers, strict=False):
                if answer.error is None:
                    found.setdefault(prompt, []).append(answer)
    return found


def _first_difference(a: GreedyAnswer, b: GreedyAnswer, unit: str) -> int | None:
    """Where two answers first differ (one ending early counts, at its end); None if equal."""
    x: Sequence[object] = a.token_ids if unit == "token" and a.token_ids is not None else a.text
    y: Sequence[object] = b.token_ids if unit == "token" and b.token_ids is not None else b.text
    for i, (p, q) in enumerate(zip(x, y, strict=False)):
        if p != q:
            return i
    return None if len(x) == len(y) else min(len(x), len(y))


def _control_position(answers: list[GreedyAnswer], unit: str) -> float:
    """Where the arm's own answers to one prompt first differ (inf: never). The smallest over
    every pair equals the smallest against the first answer."""
    positions = [_first_difference(answers[0], other, unit) for other in answers[1:]]
    return min((p for p in positions if p is not None), default=float("inf"))


def _control_differs(sessions: list[GreedyAnswers]) -> int:
    by_prompt = _by_prompt(sessions)
    return sum(1 for answers in by_prompt.values()
               if _control_position(answers, "char") != float("inf"))


def _excerpts(expected: str, got: str) -> tuple[str, str]:
    """The two texts around their first differing character, one line each."""
    at = next((i for i, (p, q) in enumerate(zip(expected, got, strict=False)) if p != q),
              min(len(expected), len(got)))
    start = max(0, at - EXCERPT_BEFORE)

    def cut(text: str) -> str:
        piece = text[start:at + EXCERPT_AFTER].replace("\n", " ").replace("`", "'")
        return ("…" if start else "") + piece + ("…" if len(text) > at + EXCERPT_AFTER else "")

    return cut(expected), cut(got)
