"""Polling vLLM's /metrics: live samples for the screen, and per-cell evidence for the report.

Counters are only meaningful as deltas over a cell's window; a server restart resets them, so
a counter that goes down is taken as a reset (the new value is the delta since the restart).
A scrape that fails is a gap in the series, never a verdict on the server: the runner's watch
decides whether the server is dead.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from dspark_tui.engine.servers.gpu import GpuProbe, GpuSample
from dspark_tui.engine.servers.tls import verifying_context
from dspark_tui.model import CellKey, ServerSummary
from dspark_tui.model.events import MetricsSample, Notice
from dspark_tui.model.kinds import MetricsDialect
from dspark_tui.model.kinds.vllm import VLLM_METRICS
from dspark_tui.results.atomic import atomic_write_text

# The names /metrics is read by are the server kind's (model/kinds/): vLLM's by default.
# Counters whose movement shows the engine is doing work.
# Inside a cell's window /metrics is read this often (quietly, between the plan's scrapes): a
# closed loop's running batch ramps up and down at the cell's ends, and a short cell read at
# 1 s gave 2 readings and a batch of 1 where the peak was 7 (issue 21).
WINDOW_SAMPLE_S = 0.25
PROGRESS_COUNTERS = ("generation_tokens", "prompt_tokens", "drafts")

SERIES_COLUMNS = [
    "t", "elapsed_s", "gap", "running", "waiting", "kv_usage", "generation_tok_s", "prompt_tok_s",
    "preemptions", "acceptance_length", "acceptance_rate", "gpu_util", "gpu_memory_mib",
    "gpu_power_w",
]


@dataclass
class MetricsSnapshot:
    """One parsed /metrics page: counters, running and waiting summed over engines; KV usage
    is the fullest engine's (a fraction, 0..1)."""

    t: float
    counters: dict[str, float] = field(default_factory=dict)
    per_position: dict[int, float] = field(default_factory=dict)
    gauges: dict[str, float] = field(default_factory=dict)
    gpu: GpuSample | None = None


def parse_metrics(text: str, t: float | None = None,
                  dialect: MetricsDialect = VLLM_METRICS) -> MetricsSnapshot:
    """Parse a Prometheus text page; unknown metrics are ignored, malformed pages raise ValueError."""
    snap = MetricsSnapshot(t=time.time() if t is None else t)
    kv: dict[str, float] = {}
    counters, gauges = dialect.counters, dialect.gauges
    for family in text_string_to_metric_families(_wanted_lines(text, dialect.wanted)):
        for sample in family.samples:
            value = float(sample.value)
            if math.isnan(value):
                continue
            name = sample.name
            if name in counters:
                key = counters[name]
                snap.counters[key] = snap.counters.get(key, 0.0) + value
            elif name == dialect.per_position:
                try:
                    position = int(sample.labels.get("position", ""))
                except ValueError:
                    continue
                snap.per_position[position] = snap.per_position.get(position, 0.0) + value
            elif name in dialect.kv_usage:
                kv[name] = max(kv.get(name, value), value)
            elif name in gauges:
                key = gauges[name]
                snap.gauges[key] = snap.gauges.get(key, 0.0) + value
    usage = next((kv[name] for name in dialect.kv_usage if name in kv), None)
    if usage is not None:
        snap.gauges["kv_usage"] = usage
    return snap


def _wanted_lines(text: str, wanted: frozenset[str]) -> str:
    """Only the samples we read: a vLLM page is ~650 lines, mostly histogram buckets we ignore,
    and the parser's cost is per line (7.7 ms for the fixture page whole, well under 1 ms so)."""
    kept = []
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        end = line.find("{")
        if end < 0:
            end = line.find(" ")
        if line[:end] in wanted:
            kept.append(line)
    return "\n".join(kept) + "\n"


@dataclass
class _Deltas:
    counters: dict[str, float] = field(default_factory=dict)
    per_position: dict[int, float] = field(default_factory=dict)
    resets: int = 0


def counter_deltas(snapshots: Sequence[MetricsSnapshot]) -> _Deltas:
    """Sum of increases between consecutive snapshots; a decrease is a reset (restart)."""
    out = _Deltas()
    for prev, cur in itertools.pairwise(snapshots):
        reset = False
        for key, value in cur.counters.items():
            before = prev.counters.get(key)
            if before is None:
                continue
            if value < before:
                reset = True
                out.counters[key] = out.counters.get(key, 0.0) + value
            else:
                out.counters[key] = out.counters.get(key, 0.0) + value - before
        for position, value in cur.per_position.items():
            before = prev.per_position.get(position)
            if before is None:
                continue
            step = value if value < before else value - before
            out.per_position[position] = out.per_position.get(position, 0.0) + step
        out.resets += int(reset)
    return out


def summarize_window(snapshots: Sequence[MetricsSnapshot], gaps: int = 0) -> ServerSummary:
    """The cell's server-side evidence, as DESIGN.md defines each number."""
    summary = ServerSummary(samples=len(snapshots), scrape_gaps=gaps)
    if not snapshots:
        return summary
    deltas = counter_deltas(snapshots)
    summary.counter_resets = deltas.resets
    c = deltas.counters
    summary.drafts = c.get("drafts")
    summary.draft_tokens = c.get("draft_tokens")
    summary.accepted_tokens = c.get("accepted_tokens")
    summary.preemptions = c.get("preemptions")
    summary.prompt_tokens = c.get("prompt_tokens")
    summary.generation_tokens = c.get("generation_tokens")
    if summary.draft_tokens and summary.accepted_tokens is not None:
        summary.acceptance_rate = summary.accepted_tokens / summary.draft_tokens
    if summary.drafts and summary.accepted_tokens is not None:
        summary.mean_acceptance_length = 1.0 + summary.accepted_tokens / summary.drafts
        summary.per_position_acceptance = [
            deltas.per_position[p] / summary.drafts for p in sorted(deltas.per_position)
        ]
    summary.kv_usage_mean, summary.kv_usage_peak = _mean_peak(snapshots, "kv_usage")
    summary.running_mean, summary.running_peak = _mean_peak(snapshots, "running")
    summary.running_samples = sum(1 for s in snapshots if "running" in s.gauges)
    summary.running_steady = steady_running(snapshots)
    summary.waiting_mean, summary.waiting_peak = _mean_peak(snapshots, "waiting")
    gpus = [s.gpu for s in snapshots if s.gpu is not None]
    utils = [g.util_percent for g in gpus if g.util_percent is not None]
    memory = [g.memory_used_mib for g in gpus if g.memory_used_mib is not None]
    power = [g.power_w for g in gpus if g.power_w is not None]
    summary.gpu_util_mean = sum(utils) / len(utils) if utils else None
    summary.gpu_memory_peak_mib = max(memory) if memory else None
    summary.gpu_power_mean_w = sum(power) / len(power) if power else None
    return summary


def steady_running(snapshots: Sequence[MetricsSnapshot]) -> float | None:
    """The running batch the cell held: the median of its readings, without the window's first
    and last (taken before the first request and after the last: the ramp, not the load). The
    mean of a short closed-loop cell is pulled down by its ends (0, 8, 8, 1, 8, 8, 0 reads 4.7
    where the load was 8); the median is not while the steady part is most of the readings."""
    inner = snapshots[1:-1] if len(snapshots) > 2 else snapshots
    values = sorted(s.gauges["running"] for s in inner if "running" in s.gauges)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def _mean_peak(snapshots: Sequence[MetricsSnapshot], gauge: str) -> tuple[float | None, float | None]:
    values = [s.gauges[gauge] for s in snapshots if gauge in s.gauges]
    if not values:
        return None, None
    return sum(values) / len(values), max(values)


def sample_between(
    arm: str, key: CellKey | None, prev: MetricsSnapshot | None, cur: MetricsSnapshot,
    window_start: MetricsSnapshot | None,
) -> MetricsSample:
    """Rates over the last scrape interval; preemptions since the cell began."""
    sample = MetricsSample(
        t=cur.t, arm=arm, key=key,
        running=cur.gauges.get("running"), waiting=cur.gauges.get("waiting"),
        kv_usage=cur.gauges.get("kv_usage"),
    )
    if cur.gpu is not None:
        sample.gpu_util = cur.gpu.util_percent
        sample.gpu_memory_mib = cur.gpu.memory_used_mib
        sample.gpu_power_w = cur.gpu.power_w
    if prev is not None and cur.t > prev.t:
        d = counter_deltas([prev, cur]).counters
        dt = cur.t - prev.t
        if "generation_tokens" in d:
            sample.generation_tok_s = d["generation_tokens"] / dt
        if "prompt_tokens" in d:
            sample.prompt_tok_s = d["prompt_tokens"] / dt
        drafts = d.get("drafts")
        if drafts and "accepted_tokens" in d:
            sample.acceptance_length = 1.0 + d["accepted_tokens"] / drafts
        if d.get("draft_tokens") and "accepted_tokens" in d:
            sample.acceptance_rate = d["accepted_tokens"] / d["draft_tokens"]
    if window_start is not None:
        since = counter_deltas([window_start, cur]).counters
        sample.preemptions = since.get("preemptions")
    elif "preemptions" in cur.counters:
        sample.preemptions = cur.counters["preemptions"]
    return sample


def series_csv(samples: Sequence[MetricsSample]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(SERIES_COLUMNS)
    t0 = samples[0].t if samples else 0.0
    for s in samples:
        row = {**s.model_dump(), "elapsed_s": round(s.t - t0, 3), "gap": int(s.gap)}
        writer.writerow(["" if row.get(c) is None else row[c] for c in SERIES_COLUMNS])
    return buffer.getvalue()


def write_series(path: Path, samples: Sequence[MetricsSample]) -> None:
    atomic_write_text(path, series_csv(samples))


class MetricsScraper:
    """Scrapes one server for as long as it serves; cells open and close windows on it."""

    def __init__(
        self,
        base_url: str,
        arm: str,
        *,
        interval_s: float,
        emit: Callable[[MetricsSample | Notice], None],
        gpu: GpuProbe | None = None,
        headers: dict[str, str] | None = None,
        told: set[str] | None = None,
        dialect: MetricsDialect = VLLM_METRICS,
    ) -> None:
        self.dialect = dialect
        self.url = base_url.rstrip("/") + dialect.path
        self.arm = arm
        self.interval_s = interval_s
        self.timeout_s = max(0.5, min(2.0, interval_s))
        self._emit = emit
        self._gpu = gpu
        self._headers = headers or {}
        self._client: httpx.AsyncClient | None = None
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._window_opened = asyncio.Event()
        self._last: MetricsSnapshot | None = None
        self._key: CellKey | None = None
        self._window: list[MetricsSnapshot] = []
        self._window_samples: list[MetricsSample] = []
        self._window_gaps = 0
        self._progress_t = time.monotonic()
        self._progress_values: dict[str, float] = {}
        self._last_ok = False
        self._busy = False
        self.counters_exported = False
        # The first reason this session brought no server evidence. The warning is told once an
        # arm: `told` holds the arms already warned about, shared by the runner's sessions.
        self.missing_reason: str | None = None
        self._told = told if told is not None else set()
        self.scrapes = 0  # this session's, for the count told at its end
        self.gaps = 0

    async def __aenter__(self) -> MetricsScraper:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def start(self) -> None:
        self._client = httpx.AsyncClient(timeout=self.timeout_s, headers=self._headers,
                                         verify=verifying_context())
        self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
            self._task = None
        if self._client is not None:
            await self._client.aclose()
            self._client = None
            if self.gaps:
                self._emit(Notice(level="info", message=(
                    f"{self.arm}: {self.gaps} of {self.scrapes} scrapes of {self.url} brought no "
                    "server evidence this session")))

    async def begin_window(self, key: CellKey) -> None:
        async with self._lock:
            self._key = key
            self._window = []
            self._window_samples = []
            self._window_gaps = 0
            self._progress_t = time.monotonic()
        await self.scrape_once()
        self._window_opened.set()

    async def end_window(self) -> tuple[ServerSummary, list[MetricsSample]]:
        await self.scrape_once()
        async with self._lock:
            summary = summarize_window(self._window, self._window_gaps)
            samples = list(self._window_samples)
            self._key = None
            self._window = []
            self._window_samples = []
            self._window_gaps = 0
        return summary, samples

    def seconds_without_progress(self) -> float | None:
        """How long the engine's work counters have not moved while it has requests in flight.

        None unless the latest scrape succeeded and showed running + waiting > 0: a failed
        scrape leaves the progress time frozen, and an idle server has nothing to progress on.
        """
        if not (self.counters_exported and self._last_ok and self._busy):
            return None
        return time.monotonic() - self._progress_t

    async def _loop(self) -> None:
        """Scrape every `interval_s`; inside a cell's window every WINDOW_SAMPLE_S too (quietly:
        those snapshots feed the cell's summary, its running batch above all, not the events)."""
        emitted = -math.inf
        while True:
            started = time.monotonic()
            loud = self._key is None or started - emitted >= self.interval_s * 0.9
            await self.scrape_once(emit=loud)
            emitted = started if loud else emitted
            every = self.interval_s if self._key is None else min(self.interval_s, WINDOW_SAMPLE_S)
            self._window_opened.clear()
            # A window opening cuts the plan's interval short: its readings start at once.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._window_opened.wait(),
                                       max(0.05, every - (time.monotonic() - started)))

    async def scrape_once(self, emit: bool = True) -> None:
        if not emit:
            await self._quiet_scrape()
            return
        snapshot, problem = await self._fetch()
        if problem is not None:
            self._tell_missing(problem)
        if self._client is not None:
            self.scrapes += 1
            self.gaps += 1 if snapshot is None else 0
        async with self._lock:
            self._last_ok = snapshot is not None
            if snapshot is None:
                sample = MetricsSample(arm=self.arm, key=self._key, gap=True)
                if self._key is not None:
                    self._window_gaps += 1
                    self._window_samples.append(sample)
                self._emit(sample)
                return
            self._note_progress(snapshot)
            start = self._window[0] if self._window else None
            if self._key is not None:
                self._window.append(snapshot)
                start = start or snapshot
            sample = sample_between(self.arm, self._key, self._last, snapshot, start)
            self._last = snapshot
            if self._key is not None:
                self._window_samples.append(sample)
            self._emit(sample)

    async def _quiet_scrape(self) -> None:
        """A snapshot for the open window only: no event, no gap counted, rates untouched."""
        snapshot, _ = await self._fetch()
        if snapshot is None:
            return
        async with self._lock:
            self._note_progress(snapshot)
            if self._key is not None:
                self._window.append(snapshot)

    def _note_progress(self, snapshot: MetricsSnapshot) -> None:
        values = {k: snapshot.counters[k] for k in PROGRESS_COUNTERS if k in snapshot.counters}
        if values:
            self.counters_exported = True
        busy = snapshot.gauges.get("running", 0.0) + snapshot.gauges.get("waiting", 0.0) > 0
        # Nothing to do is not a stall: the clock starts when requests are seen in flight.
        was_busy, self._busy = self._busy, busy
        if values != self._progress_values or not (busy and was_busy):
            self._progress_values = values
            self._progress_t = time.monotonic()

    def _tell_missing(self, problem: str) -> None:
        """The arm's first scrape that brought no server evidence says why; later ones are gaps,
        counted when the session ends."""
        if self.missing_reason is None:
            self.missing_reason = problem
        if self.arm in self._told:
            return
        self._told.add(self.arm)
        self._emit(Notice(level="warning", message=(
            f"server evidence incomplete for {self.arm} (first failure: {self.url} {problem}); "
            "cells without it report server metrics as not measured (told once an arm)")))

    async def _fetch(self) -> tuple[MetricsSnapshot | None, str | None]:
        """The parsed page, or None and why not; a page without any vLLM metric is a problem
        too, though it is no gap."""
        if self._client is None:
            return None, None
        try:
            response = await self._client.get(self.url)
            if response.status_code != 200:
                return None, f"answered HTTP {response.status_code}"
            snapshot = parse_metrics(response.text, dialect=self.dialect)
        except httpx.TimeoutException:
            return None, f"timed out after {self.timeout_s:g}s"
        except httpx.HTTPError as exc:
            return None, f"failed ({type(exc).__name__}: {exc or 'no detail'})"
        except ValueError as exc:
            return None, f"is not a Prometheus page (parse error: {_first_line(exc)})"
        if self._gpu is not None:
            snapshot.gpu = await asyncio.to_thread(self._gpu.sample)
        if not (snapshot.counters or snapshot.gauges or snapshot.per_position):
            dialect = self.dialect
            return snapshot, (f"has no {dialect.label} metric (no {dialect.family} counter or "
                              "gauge on the page)")
        return snapshot, None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0][:120] if text else "") or type(exc).__name__
