"""The noise of a real serving box, one model for the live server and for model time.

A step's noise-free cost (modelled GPU seconds, `Scheduler._cost`) becomes a noisy duration
through one `SessionNoise` per server start:

    duration = cost * session_offset * exp(drift(t))   (+ hiccup_s at each hiccup)

- `session_offset`: lognormal with CV `session_cv`, drawn once at start (clocks, memory
  layout, CUDA graph capture: the "this start is 2 % slower" effect only restarts reveal);
- `drift(t)`: an Ornstein-Uhlenbeck process in modelled time, stationary sd so that exp(drift)
  has CV `noise_cv`, correlation time `drift_time_s`; held piecewise constant on a grid of
  drift_time_s / 8 and advanced with its exact AR(1) transition, so a stretch of work can be
  integrated exactly whether it comes as one cell or as a thousand steps;
- hiccups: a Poisson process at `hiccup_prob` per modelled second of work, each a stall of
  `hiccup_s` modelled seconds.

The live engine feeds every step through `SessionNoise.work`; `measure` feeds a cached
noise-free `VirtualResult` through the same `work`, so statistical checks can run hundreds of
sessions in model time and still speak for the live simulator.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dspark_tui.sim.config import NoiseParams
from dspark_tui.sim.virtual import VirtualResult

__all__ = ["Measurement", "NoiseParams", "SessionNoise", "measure", "new_session"]

# Drift levels per correlation time: fine enough that a step sees a smooth drift.
GRID_PER_DRIFT_TIME = 8


def log_sigma(cv: float) -> float:
    """sd of log(X) for a lognormal X with coefficient of variation `cv`."""
    return math.sqrt(math.log1p(cv * cv))


class SessionNoise:
    """One server session's noise: its offset, its drift path and its hiccups.

    `clock` is the session's modelled time; `work` advances it by the noisy duration of some
    noise-free work, `advance_to`/`idle` by time in which the engine had nothing to do (the
    drift goes on, hiccups do not matter). Successive `work` calls add up exactly: work(a) then
    work(b) ends where work(a + b) would.
    """

    def __init__(self, params: NoiseParams, rng: np.random.Generator) -> None:
        self.params = params
        self.offset = (math.exp(log_sigma(params.session_cv) * rng.standard_normal())
                       if params.session_cv > 0 else 1.0)
        self._drift_rng, self._hiccup_rng, self.pick_rng = rng.spawn(3)
        self._sigma = log_sigma(params.noise_cv)
        self._grid_s = params.drift_time_s / GRID_PER_DRIFT_TIME
        self._rho = math.exp(-1.0 / GRID_PER_DRIFT_TIME)
        self._index = 0
        self._level = self._sigma * self._drift_rng.standard_normal() if self._sigma else 0.0
        self.clock = 0.0
        self.work_done = 0.0
        self.hiccups = 0
        self._hiccups_on = params.hiccup_prob > 0 and params.hiccup_s > 0
        self._next_hiccup = self._draw_hiccup_gap() if self._hiccups_on else math.inf

    # -- time passing ------------------------------------------------------------------

    def multiplier(self) -> float:
        """Step-cost factor now (session offset times drift)."""
        return self.offset * math.exp(self._level)

    def advance_to(self, t: float) -> None:
        """Idle until modelled time `t` (no-op if the clock is already there)."""
        if t > self.clock:
            self.clock = t
            self._follow_clock()

    def idle(self, seconds: float) -> None:
        self.advance_to(self.clock + max(0.0, seconds))

    def work(self, cost: float) -> float:
        """Noisy duration of `cost` noise-free seconds of work starting now; advances the clock."""
        elapsed = 0.0
        remaining = cost
        while remaining >= self._next_hiccup - self.work_done:
            reach = max(0.0, self._next_hiccup - self.work_done)
            elapsed += self._stretch(reach) + self.params.hiccup_s
            remaining -= reach
            self.work_done = self._next_hiccup
            self.hiccups += 1
            self.advance_to(self.clock + self.params.hiccup_s)
            self._next_hiccup += self._draw_hiccup_gap()
        elapsed += self._stretch(remaining)
        self.work_done += remaining
        return elapsed

    # -- inside ------------------------------------------------------------------------

    def _draw_hiccup_gap(self) -> float:
        return float(self._hiccup_rng.exponential(1.0 / self.params.hiccup_prob))

    def _stretch(self, cost: float) -> float:
        """Move the clock over `cost` seconds of work, segment by drift segment; time taken."""
        if not self._sigma:
            self.clock += cost * self.offset
            return cost * self.offset
        elapsed = 0.0
        while cost > 0:
            factor = self.multiplier()
            room = max(0.0, (self._index + 1) * self._grid_s - self.clock)
            if cost * factor <= room:
                self.clock += cost * factor
                return elapsed + cost * factor
            cost -= room / factor
            elapsed += room
            self.clock = (self._index + 1) * self._grid_s
            self._step_level(1)
        return elapsed

    def _follow_clock(self) -> None:
        if self._sigma:
            self._step_level(int(self.clock // self._grid_s) - self._index)

    def _step_level(self, segments: int) -> None:
        """Exact OU transition over `segments` grid steps (one draw, however many)."""
        if segments <= 0:
            return
        keep = self._rho ** segments
        self._level = (keep * self._level
                       + self._sigma * math.sqrt(1.0 - keep * keep)
                       * self._drift_rng.standard_normal())
        self._index += segments


def new_session(params: NoiseParams, seed: int | None = None) -> SessionNoise:
    """A server start's noise; `seed=None` draws from fresh OS entropy."""
    return SessionNoise(params, np.random.default_rng(seed))


@dataclass(frozen=True)
class Measurement:
    """One noisy pass of a cell: what a client would time."""

    duration_s: float
    total_throughput: float


def measure(result: VirtualResult | Sequence[VirtualResult], session: SessionNoise, *,
            gap_s: float = 0.0) -> Measurement:
    """One measurement of a cell in `session`, in model time.

    `result` is the cell's noise-free `simulate_closed_loop` result, computed once and cached;
    several (one per acceptance seed) add the pass-to-pass variation of acceptance draws and
    of the last wave, which the live server has with the noise off too. `gap_s` is the
    modelled time since the session's previous measurement ended (other cells, warmup).
    """
    results = [result] if isinstance(result, VirtualResult) else list(result)
    pick = results[int(session.pick_rng.integers(len(results)))] if len(results) > 1 else results[0]
    session.idle(gap_s)
    duration = session.work(pick.duration_s)
    return Measurement(duration_s=duration,
                       total_throughput=(pick.input_tokens + pick.output_tokens) / duration)
