"""Adaptive verification: how many of a step's drafts are verified, chosen from draft confidence.

vLLM's `enable_adaptive_verification` (speculative config) drafts K tokens for every sequence
but verifies only a budget of them: every (sequence, position) slot is scored by its survival
probability — the running product of the drafter's per-position confidences — the best slots
win, and the budget is the one that maximises expected tokens per second of the step. At small
batches verifying is nearly free (the step is memory-bound), so nearly every draft is verified;
at large batches each verified token costs compute, so unlikely drafts are dropped.

The model here: a draft token's true acceptance probability q varies from token to token
around the position's conditional acceptance p (q ~ Beta(p·c, (1−p)·c), `c` the confidence
concentration: small c, confidence says much; large c, every token looks alike); the drafter's
confidence is q itself, and a slot is accepted with probability q. The mean acceptance per
position is p, as with fixed K. Variable-length verification leaves the full CUDA graph's
route, which `StepCosts.adaptive_overhead_s` charges every step (the small-batch loss vLLM
PR #52362 measured against fixed K).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class AdaptiveStep:
    """Per sequence: drafts verified and drafts accepted (a prefix of the verified ones)."""

    verified: list[int]
    accepted: list[int]


@dataclass(frozen=True)
class StepPrice:
    """A step's modelled cost with B drafts verified: max(memory, compute + per_draft·B) + fixed
    (the scheduler's cost shape, with the verified drafts as the one free variable)."""

    memory: float
    compute: float  # prefill and the sequences' own (bonus) token, without drafts
    per_draft: float
    fixed: float  # drafting, and the adaptive route's overhead

    def of(self, budgets: np.ndarray) -> np.ndarray:
        return np.maximum(self.memory, self.compute + self.per_draft * budgets) + self.fixed

    def at(self, budget: int) -> float:
        return max(self.memory, self.compute + self.per_draft * budget) + self.fixed


def choose_and_verify(rng: np.random.Generator, acceptance: np.ndarray, concentration: float,
                      price: StepPrice) -> AdaptiveStep:
    """One step's verification for `acceptance` (sequences x K conditional probabilities):
    the budget maximises (sequences + expected accepted drafts) / the step's cost."""
    n, k = acceptance.shape
    if n == 0 or k == 0:
        return AdaptiveStep([0] * n, [0] * n)
    p = np.clip(acceptance, 1e-6, 1 - 1e-6)
    q = rng.beta(p * concentration, (1 - p) * concentration)
    survival = np.cumprod(q, axis=1)
    order = np.sort(survival, axis=None)[::-1]
    expected = n + np.concatenate(([0.0], np.cumsum(order)))
    costs = price.of(np.arange(n * k + 1))
    budget = int(np.argmax(expected / costs))
    if budget == 0:
        verified = np.zeros(n, dtype=int)
    else:
        threshold = order[budget - 1]
        # Survival only falls along a sequence, so the winners are a prefix of each one.
        verified = np.minimum((survival >= threshold).sum(axis=1), k)
        extra = int(verified.sum()) - budget  # ties at the threshold: drop from the last ones
        for row in np.argsort(-verified)[:max(0, extra)]:
            verified[row] -= 1
    passed = rng.random((n, k)) < q
    run = np.cumprod(passed, axis=1).sum(axis=1)  # leading accepted drafts, if all verified
    accepted = np.minimum(run, verified)
    return AdaptiveStep([int(v) for v in verified], [int(a) for a in accepted])
