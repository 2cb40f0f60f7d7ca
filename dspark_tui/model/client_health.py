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
  such gaps among all gaps is the burstiness of arrival. A server that sends one chunk a step
  never causes it; only a reader that came back late does.

The measurement is marked `behind` when either limit is passed:

- **lag**: the loop lag's p99 over LAG_LIMIT_FRACTION (25 %) of the measurement's median ITL,
  and over LAG_FLOOR_MS (1 ms): the worst 1 % of token timestamps were off by a quarter of a
  typical step or more, so ITL p99 measures the client as much as the server. Below 1 ms the
  lag is the timer's own jitter, which the printed numbers (0.01 ms TPOT) average away.
- **bursts**: more than SAME_READ_LIMIT (5 %) of the gaps were same-read, with the loop lag's
  p99 over the floor. Those gaps take a step's time from the ITL distribution and give it to
  the gap before, so the percentiles from p95 up (and from p5 down) no longer describe the
  server; at 5 % the p95 ITL is the first to go. Bursts with a loop that was on time (lag p99
  under 1 ms) are the server's or the network's (a starved API server writes several steps at
  once): what a user of that server sees, not a fault of the client, so they mark nothing.

Throughput (the verdicts' Total tok/s) is tokens over the cell's wall time: a late read moves a
request's end, and in the closed loop the next request's start, by at most the lag, so it
stands while the lag's p99 is under THROUGHPUT_LAG_SHARE (2 %) of the mean E2E — within the
sessions' usual noise (docs/statistics.md) — and the report says it is doubtful beyond.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

TICK_S = 0.005
SAME_READ_LIMIT = 0.05
LAG_LIMIT_FRACTION = 0.25
LAG_FLOOR_MS = 1.0
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
    behind: bool = False
    reasons: list[str] = []

    @property
    def same_read_fraction(self) -> float:
        return self.same_read_gaps / self.gaps if self.gaps else 0.0


def judge(health: ClientHealth) -> ClientHealth:
    """The same numbers with `behind` and its reasons (each one line, the limit named)."""
    reasons = []
    fraction = health.same_read_fraction
    if fraction > SAME_READ_LIMIT and health.loop_lag_p99_ms > LAG_FLOOR_MS:
        reasons.append(f"{fraction:.0%} of token gaps read together with the previous token "
                       f"(limit {SAME_READ_LIMIT:.0%}, with the loop late)")
    itl = health.median_itl_ms
    lag_limit = max(LAG_FLOOR_MS, LAG_LIMIT_FRACTION * itl) if itl is not None else None
    if lag_limit is not None and health.loop_lag_p99_ms > lag_limit:
        reasons.append(f"event-loop lag p99 {health.loop_lag_p99_ms:.1f} ms over "
                       f"{lag_limit:.1f} ms ({LAG_LIMIT_FRACTION:.0%} of the median ITL "
                       f"{itl:.2f} ms, at least {LAG_FLOOR_MS:g} ms)")
    return health.model_copy(update={"behind": bool(reasons), "reasons": reasons})


def health_line(health: ClientHealth) -> str:
    """`client: lag p99 0.4 ms, 0% same-read gaps` (`…: behind` when it fell behind)."""
    state = ": behind" if health.behind else ""
    return (f"client{state}: loop lag p99 {health.loop_lag_p99_ms:.1f} ms (max "
            f"{health.loop_lag_max_ms:.1f}), {health.same_read_fraction:.0%} same-read gaps")


def live_client_line(lag_p99_ms: float | None, same_read: float | None,
                     tpot_p50_ms: float | None) -> tuple[str, bool]:
    """The cell panel's line while a measurement runs, and whether it already looks behind
    (the median TPOT stands in for the median ITL the end judges against); '' when unknown."""
    if lag_p99_ms is None and same_read is None:
        return "", False
    behind = False
    if lag_p99_ms is not None and lag_p99_ms > LAG_FLOOR_MS:
        behind = same_read is not None and same_read > SAME_READ_LIMIT
        if tpot_p50_ms is not None:
            behind = behind or lag_p99_ms > LAG_LIMIT_FRACTION * tpot_p50_ms
    parts = []
    if lag_p99_ms is not None:
        parts.append(f"loop lag p99 {lag_p99_ms:.1f} ms")
    if same_read is not None:
        parts.append(f"{same_read:.0%} same-read gaps")
    return ("client behind: " if behind else "client: ") + ", ".join(parts), behind
