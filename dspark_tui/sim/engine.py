"""The live engine: runs the step model against the wall clock, `speed` times faster.

One asyncio task computes steps ahead of time and sleeps until the wall-clock moment the last
of them ends, then hands the advanced streams their new tokens. Steps that end within one flush
interval are coalesced, so high `--speed` or big batches do not cost one wake-up (or one SSE
chunk) per step, and the loop never spins. A step that gives a request its first or last token
ends the batch early and is delivered on time: in a closed loop the next request only arrives
once the last one is answered, so late answers would starve the batch.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import TYPE_CHECKING

from dspark_tui.sim.config import ModelConfig
from dspark_tui.sim.logs import log
from dspark_tui.sim.metrics import SimMetrics
from dspark_tui.sim.scheduler import Scheduler, SimRequest

if TYPE_CHECKING:
    from dspark_tui.sim.noise import SessionNoise

# How far behind the wall clock the engine may fall before it stops trying to catch up.
MAX_CATCH_UP_S = 0.25
# At most this many steps are computed before the loop yields to the HTTP side.
MAX_STEPS_PER_WAKE = 2000
LAG_WARNING_INTERVAL_S = 10.0


class TokenSink:
    """Where the engine leaves new tokens for one response; the response awaits `ready`."""

    __slots__ = ("delivered_at", "finish_reason", "ready", "tokens")

    def __init__(self) -> None:
        self.ready = asyncio.Event()
        self.tokens = 0
        self.finish_reason: str | None = None
        self.delivered_at: float | None = None

    def take(self) -> int:
        count, self.tokens = self.tokens, 0
        self.ready.clear()
        return count


class LiveEngine:
    def __init__(self, config: ModelConfig, metrics: SimMetrics, *, speed: float = 1.0,
                 seed: int = 0, max_chunk_rate: float = 8000.0,
                 noise: SessionNoise | None = None) -> None:
        self.config = config
        self.metrics = metrics
        self.speed = speed
        self.max_chunk_rate = max_chunk_rate
        self.noise = noise
        self.scheduler = Scheduler(config, random.Random(seed), noise)
        self.origin = time.monotonic()
        self.clock_wall = self.origin  # wall time at which the modelled clock stands
        self.lag_s = 0.0  # wall seconds the engine could not keep up with
        self.steps = 0
        self.stalled = False
        self.stopping = False
        self._wake = asyncio.Event()
        self._dirty: set[SimRequest] = set()
        self._lag_logged_at = -LAG_WARNING_INTERVAL_S

    # -- requests ------------------------------------------------------------------------

    def model_now(self) -> float:
        return (time.monotonic() - self.origin) * self.speed

    def submit(self, request: SimRequest) -> TokenSink:
        sink = TokenSink()
        request.sink = sink
        request.arrival = self.model_now()
        self.metrics.record_arrival(request.max_tokens)
        if self.stopping:
            self._end_aborted(request)
            return sink
        self.scheduler.add(request)
        if self.stalled:
            self._publish_queue()
        self._wake.set()
        return sink

    def abort(self, request: SimRequest) -> None:
        if request.finished:
            return
        self.scheduler.abort(request)
        self._dirty.discard(request)
        self.metrics.success["abort"].inc()
        self._publish_queue()

    def shutdown(self) -> None:
        """End every stream now (computed tokens delivered, unfinished requests aborted), so
        the server stops within its grace instead of cancelling streams mid-chunk."""
        self.stopping = True
        scheduler = self.scheduler
        for request in [*scheduler.running, *scheduler.waiting]:
            self._end_aborted(request)
        self._publish_queue()

    def _end_aborted(self, request: SimRequest) -> None:
        self.scheduler.abort(request)
        self.metrics.success["abort"].inc()
        self._dirty.add(request)
        self._flush(time.monotonic(), 0.0)  # everything computed so far, finished ones too

    def stall(self) -> None:
        """Stop producing tokens forever; requests keep queueing, /health stays fine."""
        self.stalled = True

    # -- the loop ------------------------------------------------------------------------

    async def run(self) -> None:
        while True:
            if self.stalled or self.stopping or not self.scheduler.has_work():
                self._publish_queue()
                self._wake.clear()
                await self._wake.wait()
                if self.stalled:
                    await asyncio.Event().wait()
                self.clock_wall = max(self.clock_wall, time.monotonic())
                continue
            now = time.monotonic()
            if now - self.clock_wall > MAX_CATCH_UP_S:
                self._fall_behind(now)
            interval = self._flush_interval()
            batch_until = max(self.clock_wall, now) + interval
            steps = 0
            while (self.scheduler.has_work() and self.clock_wall < batch_until
                   and steps < MAX_STEPS_PER_WAKE):
                steps += 1
                if self._step():
                    break
            delay = self.clock_wall - time.monotonic()
            await asyncio.sleep(delay if delay > 0 else 0)
            self._flush(self.clock_wall, interval)

    def _fall_behind(self, now: float) -> None:
        """Give up on lost wall time (the CPU could not keep up) and say so, at most every 10 s."""
        self.lag_s += now - self.clock_wall
        self.clock_wall = now
        if now - self._lag_logged_at >= LAG_WARNING_INTERVAL_S:
            self._lag_logged_at = now
            log("WARNING", "engine.py", f"the simulator fell {self.lag_s:.2f} s behind its "
                f"model so far (CPU-bound at --speed {self.speed:g}); served rates are lower "
                "than modelled")

    def _flush_interval(self) -> float:
        running = len(self.scheduler.running)
        return max(0.002, running / self.max_chunk_rate)

    def _step(self) -> bool:
        """Run one step; True if a request got its first or last token (deliver promptly)."""
        scheduler = self.scheduler
        start = (self.clock_wall - self.origin) * self.speed
        if self.noise is not None:
            self.noise.advance_to(start)  # the drift went on while the engine was idle
        result = scheduler.step(start)
        self.steps += 1
        wall_duration = result.duration / self.speed
        self.clock_wall += wall_duration
        self.metrics.record_step(result, wall_duration)
        for request in result.first_tokens:
            assert request.first_token_time is not None
            ttft = (request.first_token_time - request.arrival) / self.speed
            self.metrics.record_first_token(max(0.0, ttft))
        for request in result.finished:
            self._record_finished(request)
        self._dirty.update(result.touched)
        self.metrics.record_queue(len(scheduler.running), len(scheduler.waiting), scheduler.kv_usage)
        return bool(result.first_tokens or result.finished)

    def _record_finished(self, request: SimRequest) -> None:
        speed = self.speed
        # After a lag the first step may start before the arrival: clamp, never negative.
        arrival = request.arrival
        end = max(arrival, request.last_token_time or arrival)
        first = min(end, max(arrival, request.first_token_time or end))
        scheduled = min(first, max(arrival, request.scheduled_time or arrival))
        self.metrics.record_finished(
            reason=request.finish_reason or "length",
            prompt_tokens=request.prompt_tokens,
            output_tokens=request.generated,
            e2e_s=(end - arrival) / speed,
            queue_s=(scheduled - arrival) / speed,
            prefill_s=(first - scheduled) / speed,
            decode_s=(end - first) / speed,
            preemptions=request.num_preemptions,
        )

    def _flush(self, now: float, interval: float) -> None:
        """Deliver first and last tokens now, the rest at most once per flush interval."""
        held: set[SimRequest] = set()
        for request in self._dirty:
            sink = request.sink
            if not isinstance(sink, TokenSink):
                continue
            if (request.finish_reason is None and sink.delivered_at is not None
                    and now - sink.delivered_at < interval):
                held.add(request)
                continue
            sink.tokens += request.unflushed
            request.unflushed = 0
            sink.finish_reason = request.finish_reason
            sink.delivered_at = now
            sink.ready.set()
        self._dirty = held

    def _publish_queue(self) -> None:
        scheduler = self.scheduler
        self.metrics.record_queue(len(scheduler.running), len(scheduler.waiting), scheduler.kv_usage)
