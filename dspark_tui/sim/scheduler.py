"""The batched step model: what one engine step schedules, costs and produces.

Pure and clock-free, so the same code drives the live server (coupled to the wall clock in
`engine.py`) and offline virtual-time runs (calibration, `bench/sim_capacity.py`).
"""

from __future__ import annotations

import random
from bisect import bisect_right
from collections import deque
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Protocol

import numpy as np

from dspark_tui.sim.adaptive import AdaptiveStep, StepPrice, choose_and_verify
from dspark_tui.sim.config import ModelConfig


class StepNoise(Protocol):
    """Turns a step's noise-free cost into its duration (`noise.SessionNoise`)."""

    def work(self, cost: float) -> float: ...


@dataclass(slots=True, eq=False)  # eq=False: a request is itself (hashed by identity in sets)
class SimRequest:
    """One generation request as the engine sees it; `unflushed` tokens await delivery."""

    request_id: str
    prompt_tokens: int
    max_tokens: int
    arrival: float = 0.0
    eos_at: int | None = None
    # The prompt's category profile (`content.py`); None: the engine's base acceptance.
    acceptance: tuple[float, ...] | None = None
    computed: int = field(default=0, init=False)
    generated: int = field(default=0, init=False)
    unflushed: int = field(default=0, init=False)
    kv_tokens: int = field(default=0, init=False)
    num_preemptions: int = field(default=0, init=False)
    first_token_time: float | None = field(default=None, init=False)
    last_token_time: float | None = field(default=None, init=False)
    scheduled_time: float | None = field(default=None, init=False)
    finish_reason: str | None = field(default=None, init=False)
    sink: object | None = field(default=None, init=False)

    @property
    def prefill_target(self) -> int:
        """Tokens that must be in the KV cache before decoding (prompt, plus output after a preemption)."""
        return self.prompt_tokens + self.generated

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None


@dataclass
class StepResult:
    """What one step did: its modelled duration, who got tokens, and the counters it moved."""

    duration: float
    k: int = 0
    touched: list[SimRequest] = field(default_factory=list)
    finished: list[SimRequest] = field(default_factory=list)
    first_tokens: list[SimRequest] = field(default_factory=list)
    num_decoding: int = 0
    num_drafts: int = 0
    draft_tokens: int = 0
    accepted_per_pos: list[int] = field(default_factory=list)
    prompt_tokens: int = 0
    generation_tokens: int = 0
    preemptions: int = 0
    batch_tokens: int = 0

    @property
    def accepted_tokens(self) -> int:
        return sum(self.accepted_per_pos)


class Scheduler:
    """A vLLM-like scheduler: decodes first, then chunked prefill under a token budget.

    KV is counted in block-rounded token slots; a decoding sequence reserves room for its K+1
    verified tokens. When a running sequence cannot grow, the latest admitted one is preempted
    (recompute: its KV is dropped and it re-prefills prompt and output so far).

    K is `config.spec_tokens`, or with a schedule the K that the running batch size at the
    start of the step picks (vLLM sizes the drafts a step verifies by the batch it scheduled
    the step before). `noise` stretches each step's cost into its duration.
    """

    def __init__(self, config: ModelConfig, rng: random.Random | None = None,
                 noise: StepNoise | None = None) -> None:
        self.config = config
        self.k = config.spec_tokens  # the largest K; a step may use less (spec_schedule)
        self.rng = rng or random.Random(0)
        self.noise = noise
        self.waiting: deque[SimRequest] = deque()
        self.running: list[SimRequest] = []
        self.kv_used = 0
        self._accept_cdfs: dict[tuple[int, tuple[float, ...] | None], list[float]] = {}
        # Adaptive verification draws per draft token: numpy, seeded from the same rng (only
        # then: a fixed-K run's draws stay what they were).
        self._np_rng = (np.random.default_rng(self.rng.getrandbits(64))
                        if config.adaptive_verification else None)
        self._last_k: int | None = None

    def _accept_cdf(self, k: int, profile: tuple[float, ...] | None = None) -> list[float]:
        cdf = self._accept_cdfs.get((k, profile))
        if cdf is None:
            cdf = self._accept_cdfs[(k, profile)] = self._acceptance_cdf(k, profile)
        return cdf

    def _acceptance_cdf(self, k: int, profile: tuple[float, ...] | None) -> list[float]:
        """Cumulative distribution of the number of accepted drafts (0..K) in one verify."""
        probs = self.config.acceptance_for(k, profile)
        point: list[float] = []
        reach = 1.0
        for p in probs:
            point.append(reach * (1.0 - p))
            reach *= p
        point.append(reach)
        return list(accumulate(point))[:-1]

    # -- bookkeeping -------------------------------------------------------------------

    def add(self, request: SimRequest) -> None:
        self.waiting.append(request)

    def abort(self, request: SimRequest) -> None:
        if request in self.running:
            self.running.remove(request)
            self._free(request)
        elif request in self.waiting:
            self.waiting.remove(request)
        if request.finish_reason is None:
            request.finish_reason = "abort"

    def has_work(self) -> bool:
        return bool(self.running or self.waiting)

    @property
    def kv_usage(self) -> float:
        return self.kv_used / self.config.kv_capacity_tokens

    def _blocks(self, tokens: int) -> int:
        size = self.config.block_size
        return -(-tokens // size) * size

    def _grow(self, request: SimRequest, tokens: int) -> bool:
        """Reserve KV so `request` holds `tokens` slots; False if the cache is full."""
        want = self._blocks(tokens)
        delta = want - request.kv_tokens
        if delta <= 0:
            return True
        if self.kv_used + delta > self.config.kv_capacity_tokens:
            return False
        self.kv_used += delta
        request.kv_tokens = want
        return True

    def _free(self, request: SimRequest) -> None:
        self.kv_used -= request.kv_tokens
        request.kv_tokens = 0

    def _preempt(self, victim: SimRequest) -> None:
        self.running.remove(victim)
        self._free(victim)
        victim.computed = 0
        victim.num_preemptions += 1
        self.waiting.appendleft(victim)

    # -- one step ----------------------------------------------------------------------

    def step(self, now: float) -> StepResult:
        """Schedule, cost and execute one engine step that starts at modelled time `now`."""
        cfg = self.config
        # vLLM #49548 (a fault switch): K keyed on a count that includes queued prefills, so
        # near a schedule's boundary it flips from step to step.
        keyed_on = len(self.running) + (len(self.waiting) if cfg.k_flip_fault else 0)
        k = cfg.spec_tokens_for(keyed_on)
        budget = cfg.max_num_batched_tokens
        result = StepResult(duration=0.0, k=k, accepted_per_pos=[0] * self.k)
        decoding: list[SimRequest] = []
        prefills: list[tuple[SimRequest, int]] = []

        for request in list(self.running):
            if request not in self.running:  # preempted by an earlier sequence this step
                continue
            if request.computed < request.prefill_target or budget < k + 1:
                continue
            while not self._grow(request, request.computed + k + 1):
                victim = self.running[-1]
                self._preempt(victim)
                result.preemptions += 1
                if victim is request:
                    break
            if request in self.running:
                decoding.append(request)
                budget -= k + 1

        for request in self.running:
            if budget <= 0:
                break
            remaining = request.prefill_target - request.computed
            if remaining > 0:
                chunk = min(remaining, budget)
                if self._grow(request, request.computed + chunk):
                    prefills.append((request, chunk))
                    budget -= chunk

        while self.waiting and budget > 0 and len(self.running) < cfg.max_num_seqs:
            request = self.waiting[0]
            chunk = min(request.prefill_target, budget)
            if not self._grow(request, chunk):
                break
            self.waiting.popleft()
            self.running.append(request)
            if request.scheduled_time is None:
                request.scheduled_time = now
            prefills.append((request, chunk))
            budget -= chunk

        adaptive = self._adaptive(decoding, prefills, k) if cfg.adaptive_verification else None
        cost = self._cost(decoding, prefills, k, adaptive) + self._flip_cost(k)
        result.duration = self.noise.work(cost) if self.noise is not None else cost
        end = now + result.duration
        self._decode(decoding, result, end, k, adaptive)
        self._prefill(prefills, result, end)
        result.num_decoding = len(decoding)
        result.batch_tokens = len(decoding) * (k + 1) + result.prompt_tokens
        return result

    def _price(self, decoding: list[SimRequest], prefills: list[tuple[SimRequest, int]],
               k: int) -> StepPrice:
        """The step's cost shape, with the drafts it verifies left free."""
        costs = self.config.costs
        context = sum(r.computed for r in decoding) + sum(r.computed + c for r, c in prefills)
        prefill_tokens = sum(c for _, c in prefills)
        draft = k * (costs.draft_step_s + costs.draft_s_per_seq * len(decoding)) if decoding else 0.0
        return StepPrice(memory=costs.weight_read_s + costs.kv_read_s_per_token * context,
                         compute=(costs.verify_s_per_token * len(decoding)
                                  + costs.prefill_s_per_token * prefill_tokens),
                         per_draft=costs.verify_s_per_token, fixed=draft)

    def _cost(self, decoding: list[SimRequest], prefills: list[tuple[SimRequest, int]],
              k: int, adaptive: AdaptiveStep | None = None) -> float:
        costs = self.config.costs
        if adaptive is not None:
            price = self._price(decoding, prefills, k)
            return price.at(sum(adaptive.verified)) + costs.adaptive_overhead_s
        context = sum(r.computed for r in decoding) + sum(r.computed + c for r, c in prefills)
        prefill_tokens = sum(c for _, c in prefills)
        memory = costs.weight_read_s + costs.kv_read_s_per_token * context
        compute = (costs.verify_s_per_token * len(decoding) * (k + 1)
                   + costs.prefill_s_per_token * prefill_tokens)
        draft = k * (costs.draft_step_s + costs.draft_s_per_seq * len(decoding)) if decoding else 0.0
        return max(memory, compute) + draft

    def _adaptive(self, decoding: list[SimRequest], prefills: list[tuple[SimRequest, int]],
                  k: int) -> AdaptiveStep:
        acceptance = np.array([self.config.acceptance_for(k, r.acceptance) for r in decoding],
                              dtype=float).reshape(len(decoding), k)
        price = self._price(decoding, prefills, k)
        assert self._np_rng is not None
        return choose_and_verify(self._np_rng, acceptance, self.config.confidence_concentration,
                                 price)

    def _flip_cost(self, k: int) -> float:
        """With the #49548 fault: a step whose K differs from the last one's pays a graph
        switch, and every step of a schedule runs the piecewise route (-14 % at one stream)."""
        last, self._last_k = self._last_k, k
        if not (self.config.k_flip_fault and self.config.spec_schedule):
            return 0.0
        costs = self.config.costs
        switch = 2 * costs.weight_read_s if last is not None and last != k else 0.0
        return switch + 0.14 * costs.weight_read_s

    def _decode(self, decoding: list[SimRequest], result: StepResult, end: float, k: int,
                adaptive: AdaptiveStep | None = None) -> None:
        base = self._accept_cdf(k)
        draw = self.rng.random
        histogram = [0] * (k + 1)
        rate = self.config.draft_rate
        undrafted = 0
        for index, request in enumerate(decoding):
            if adaptive is not None:
                accepted = adaptive.accepted[index]
            elif k and rate < 1.0 and draw() >= rate:  # no proposal this step (ngram: no match)
                undrafted += 1
                emitted = self._emit(request, 1, end)
                result.generation_tokens += emitted
                result.touched.append(request)
                if request.finished:
                    result.finished.append(request)
                continue
            else:
                profile = request.acceptance
                cdf = base if profile is None else self._accept_cdf(k, profile)
                accepted = bisect_right(cdf, draw())
            histogram[accepted] += 1
            emitted = self._emit(request, 1 + accepted, end)
            result.generation_tokens += emitted
            result.touched.append(request)
            if request.finished:
                result.finished.append(request)
        above = 0
        for position in range(k - 1, -1, -1):
            above += histogram[position + 1]
            result.accepted_per_pos[position] = above
        drafted = len(decoding) - undrafted
        result.num_drafts = drafted if k else 0
        result.draft_tokens = sum(adaptive.verified) if adaptive is not None else drafted * k

    def _prefill(self, prefills: list[tuple[SimRequest, int]], result: StepResult,
                 end: float) -> None:
        for request, chunk in prefills:
            request.computed += chunk
            result.prompt_tokens += chunk
            if request.computed >= request.prefill_target:
                if request.generated == 0:
                    result.first_tokens.append(request)
                result.generation_tokens += self._emit(request, 1, end)
                result.touched.append(request)
                if request.finished:
                    result.finished.append(request)

    def _emit(self, request: SimRequest, count: int, end: float) -> int:
        limit = request.max_tokens if request.eos_at is None else min(request.max_tokens,
                                                                      request.eos_at)
        count = min(count, limit - request.generated)
        if request.generated == 0 and count > 0:
            request.first_token_time = end
        request.generated += count
        request.computed += count
        request.unflushed += count
        request.last_token_time = end
        if request.generated >= limit:
            request.finish_reason = "length" if request.generated >= request.max_tokens else "stop"
            self.running.remove(request)
            self._free(request)
        return count
