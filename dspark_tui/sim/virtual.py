"""Closed-loop benchmark in modelled time, without HTTP: what the model prescribes.

Used to calibrate the defaults, by `bench/sim_capacity.py` as the reference the live server
is held to, and by fast tests of the model's shape. Noise-free, it is the ground truth;
`noise.measure` turns a cached result into noisy measurements.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from dspark_tui.sim.config import ModelConfig
from dspark_tui.sim.scheduler import Scheduler, SimRequest, StepNoise


@dataclass(frozen=True)
class VirtualResult:
    duration_s: float
    completed: int
    input_tokens: int
    output_tokens: int
    drafts: int
    accepted: int
    preemptions: int
    peak_kv_usage: float
    peak_waiting: int
    draft_tokens: int = 0
    # Time-weighted mean of the running batch (`vllm:num_requests_running`) over the cell:
    # what a K schedule keyed on the running batch size sees.
    mean_running: float = 0.0

    @property
    def total_throughput(self) -> float:
        return (self.input_tokens + self.output_tokens) / self.duration_s

    @property
    def output_throughput(self) -> float:
        return self.output_tokens / self.duration_s

    @property
    def mean_accept_length(self) -> float:
        return 1.0 + self.accepted / self.drafts if self.drafts else 0.0


def sample_lengths(input_len: int, output_len: int, num_prompts: int, range_ratio: float,
                   seed: int) -> list[tuple[int, int]]:
    """Request lengths the way sglang's random dataset draws them: uniform in [L*r, L]."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(num_prompts):
        prompt = rng.randint(max(1, int(input_len * range_ratio)), input_len)
        output = rng.randint(max(1, int(output_len * range_ratio)), output_len)
        pairs.append((prompt, output))
    return pairs


def simulate_closed_loop(config: ModelConfig, lengths: list[tuple[int, int]], concurrency: int,
                         seed: int = 0, noise: StepNoise | None = None,
                         acceptance: tuple[float, ...] | None = None) -> VirtualResult:
    """Keep `concurrency` requests in flight until all `lengths` are served; modelled time.

    `noise` (a `noise.SessionNoise`) stretches every step as the live engine does; without it
    the result is the noise-free reference. `acceptance` is a category's profile for every
    request (a category-pure cell); None: the base acceptance.
    """
    scheduler = Scheduler(config, random.Random(seed), noise)
    pending = list(reversed(lengths))
    now = 0.0
    in_flight = 0
    completed = drafts = draft_tokens = accepted = preemptions = out_tokens = 0
    peak_kv = 0.0
    peak_waiting = 0
    running_time = 0.0
    index = 0
    while pending or in_flight:
        while pending and in_flight < concurrency:
            prompt, output = pending.pop()
            scheduler.add(SimRequest(f"v{index}", prompt, output, arrival=now,
                                     acceptance=acceptance))
            index += 1
            in_flight += 1
        peak_waiting = max(peak_waiting, len(scheduler.waiting))
        result = scheduler.step(now)
        # the step's batch: what runs now plus what finished during the step
        running_time += (len(scheduler.running) + len(result.finished)) * result.duration
        now += result.duration
        peak_kv = max(peak_kv, scheduler.kv_usage)
        drafts += result.num_drafts
        draft_tokens += result.draft_tokens
        accepted += result.accepted_tokens
        preemptions += result.preemptions
        out_tokens += result.generation_tokens
        completed += len(result.finished)
        in_flight -= len(result.finished)
    return VirtualResult(
        duration_s=now,
        completed=completed,
        input_tokens=sum(p for p, _ in lengths),
        output_tokens=out_tokens,
        drafts=drafts,
        accepted=accepted,
        preemptions=preemptions,
        peak_kv_usage=peak_kv,
        peak_waiting=peak_waiting,
        draft_tokens=draft_tokens,
        mean_running=running_time / now if now else 0.0,
    )
