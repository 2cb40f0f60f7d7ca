"""The simulator's scheduler driven in modelled time by a closed loop (c requests in flight), for
tests that need the model's own latencies without a server: demo-slo's prompt mix and step costs."""

from __future__ import annotations

import random

from dspark_tui.sim.config import DEFAULT_ACCEPTANCE, ModelConfig, StepCosts
from dspark_tui.sim.content import scaled_acceptance
from dspark_tui.sim.scheduler import Scheduler, SimRequest

# demo-slo: chat (a fifth of the shipped prompts) at 0.1, the other categories at 0.97.
PROFILES = [scaled_acceptance(0.97, DEFAULT_ACCEPTANCE)] * 4 + [scaled_acceptance(0.1, DEFAULT_ACCEPTANCE)]


def closed_loop(k: int, c: int, n: int, seed: int, first_profile: int = 0) -> tuple[list[SimRequest], float]:
    """n requests (256 in, 128 out) kept c at a time at K = k; the requests as the scheduler left
    them and the modelled time it took. `first_profile` shifts the prompts' order."""
    config = ModelConfig(spec_tokens=k, costs=StepCosts(draft_step_s=0.0008))
    scheduler = Scheduler(config, random.Random(seed), None)
    requests: list[SimRequest] = []
    now, waiting, in_flight = 0.0, n, 0
    while waiting or in_flight:
        while waiting and in_flight < c:
            profile = PROFILES[(first_profile + len(requests)) % len(PROFILES)]
            request = SimRequest(f"r{len(requests)}", 256, 128, arrival=now, acceptance=profile)
            scheduler.add(request)
            requests.append(request)
            waiting -= 1
            in_flight += 1
        step = scheduler.step(now)
        now += step.duration
        in_flight -= len(step.finished)
    return requests, now
