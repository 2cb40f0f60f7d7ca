"""Whether the benchmark client kept up with the server during one measurement (issue 21).

The native client times each token when its event loop reads it. A client that falls behind —
its loop busy, or its process starved of CPU by the server beside it — reads late and reads
several tokens of a stream at once, and the latencies it reports are its own, not the server's
(on real vLLM CPU a K=1 c=1 cell read TPOT 0.006 ms, every token in one burst, where the next
round read 4.2 ms). Two measures, taken in every native measurement:

- **loop lag**: a ticker asks the loop to wake it every TICK_S and records how late each wake
  came. A token's timestamp is late by up to the loop's lag at that moment, so the lag's p99 is
  the error of the worst 1 % of token timestamps.
- **same-read gaps**: a token that arrives in the same socket read as the stream's previous one
  gets an inter-token gap of ~0 (the loop was away for at least one server step); the share of
  such gaps among all gaps is the burstiness of arrival. A reader that came back late causes
  it, and so does a server that wrote several steps at once; the loop lag tells which.

The measurement is marked `behind` when both hold (the harm, and its cause in the client):

- **bursts**: more than BURST_LIMIT (10 %) of the gaps were same-read. Each takes a step's time
  from one gap and gives it to the one before, so from that share on the ITL percentiles from
  p90 up (and p10 down) describe the client's reads, not the server's steps; the issue's
  starved cell read 99 %;
- **a late loop**: the loop lag's p99 is at least LAG_SHARE (50 %) of the measurement's mean
  inter-token gap (a burst needs the reader away for a step), and at least LAG_FLOOR_MS (2 ms):
  below that the lag is the timer's own granularity (asyncio wakes on whole milliseconds) and
  the box's wake-up latency, which an idle box shows too (docs/client.md, "Measured").

Bursts with a loop that was on time are the server's or the network's (a starved API server
writes several steps at once): what a user of that server sees, so they mark nothing. A late
loop without bursts has each token in its own read, a step apart: the gaps are jittered by the
lag, not merged, and the means the tables use (TPOT, TTFT) move by the lag over a request.
An earlier rule marked lag alone (p99 over 25 % of the median ITL and 1 ms) and marked every
measurement of the demo on an idle box (lag p99 3.4 ms, ITL 3.5 ms), which emptied the tables.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_serializer

TICK_S = 0.005
BURST_LIMIT = 0.10
LAG_SHARE = 0.5
LAG_FLOOR_MS = 2.0
THROUGHPUT_LAG_SHARE = 0.02


class ClientHealth(BaseModel):
    """The native client's own health over one measurement (None for the peer drivers, which
    are separate processes this tool cannot look into)."""

    model_config = ConfigDict(extra="ignore")

    loop_lag_p50_ms: float = 0.0
    loop_lag_p99_ms: float = 0.0
    loop_lag_max_ms: float = 0.0
    ticks: int = 0
    gaps: int = 0  # inter-token gaps timed
    same_read_gaps: int = 0  # of those, tokens read together with the stream's previous one
    median_itl_ms: float | None = None
    mean_itl_ms: float | None = None  # the mean gap: a step, however the reads merged them
    behind: bool = False
    reasons: list[str] = []
    # The CPUs the client's process was kept on, when the plan pinned the server elsewhere
    # (`[server] cpus`, model/cpus.py); None: not pinned (the key is then left out of the file).
    cpus: list[int] | None = None

    @model_serializer(mode="wrap")
    def _without_unpinned(self, handler: Any) -> Any:
        data = handler(self)
        if isinstance(data, dict) and data.get("cpus", 0) is None:
            del data["cpus"]
        return data

    @property
    def same_read_fraction(self) -> float:
        return self.same_read_gaps / self.gaps if self.gaps else 0.0


def late_loop(lag_p99_ms: float, mean_itl_ms: float | None) -> bool:
    """The loop ran late enough at p99 to merge a step's tokens into the previous read."""
    if lag_p99_ms < LAG_FLOOR_MS:
        return False
    return mean_itl_ms is None or lag_p99_ms >= LAG_SHARE * mean_itl_ms


def judge(health: ClientHealth) -> ClientHealth:
    """The same numbers with `behind` and its reason (one line, the limits named)."""
    reasons = []
    bursts = health.same_read_fraction
    lag, itl = health.loop_lag_p99_ms, health.mean_itl_ms
    if itl is None:  # files written before the mean was kept
        itl = health.median_itl_ms
    if bursts > BURST_LIMIT and late_loop(lag, itl):
        scale = f"{LAG_SHARE:.0%} of the mean ITL {itl:.2f} ms" if itl is not None else "no ITL"
        reasons.append(f"{bursts:.0%} of token gaps read in one burst with the previous token "
                       f"(limit {BURST_LIMIT:.0%}) while the event loop ran late (lag p99 "
                       f"{lag:.1f} ms, at least {scale} and {LAG_FLOOR_MS:g} ms)")
    return health.model_copy(update={"behind": bool(reasons), "reasons": reasons})


def health_line(health: ClientHealth) -> str:
    """`client: lag p99 0.4 ms, 0% same-read gaps` (`…: behind` when it fell behind)."""
    state = ": behind" if health.behind else ""
    return (f"client{state}: loop lag p99 {health.loop_lag_p99_ms:.1f} ms (max "
            f"{health.loop_lag_max_ms:.1f}), {health.same_read_fraction:.0%} same-read gaps")


def live_client_line(lag_p99_ms: float | None, same_read: float | None,
                     mean_itl_ms: float | None) -> tuple[str, bool]:
    """The cell panel's line while a measurement runs, and whether it already looks behind
    (the rule of `judge` on the numbers so far); '' when unknown."""
    if lag_p99_ms is None and same_read is None:
        return "", False
    behind = (lag_p99_ms is not None and same_read is not None and same_read > BURST_LIMIT
              and late_loop(lag_p99_ms, mean_itl_ms))
    parts = []
    if lag_p99_ms is not None:
        parts.append(f"loop lag p99 {lag_p99_ms:.1f} ms")
    if same_read is not None:
        parts.append(f"{same_read:.0%} same-read gaps")
    return ("client behind: " if behind else "client: ") + ", ".join(parts), behind
