"""The `native` driver: our own streaming client, measuring what sglang.bench_serving measures.

Requests go to `/v1/completions` with token-id prompts (exact input lengths, no tokenizer),
`ignore_eos`, streaming, and `stream_options.include_usage` so output token counts come from the
server. Timing follows sglang's request function: TTFT at the first chunk whose text is not
empty, one ITL per such chunk, E2E at the last line received.

HTTP is aiohttp (what sglang.bench_serving uses too): one session per run whose connector holds
at most `concurrency` keep-alive connections, its C parser de-chunking the stream; it costs less
client CPU per token than sglang's own client, where httpx's pool and pure-Python parsing cost
several times more. `bench/client_vs_sglang.py` measures it; bench/README.md has the numbers.

The client runs in the same process as the orchestrator, so each streamed line is handled
cheaply: the body is read in whatever pieces have arrived (no per-line awaits), a byte search
decides whether a chunk carries text, and only lines without a `text` key (the usage chunk, an
error) are JSON-decoded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import aiohttp

from dspark_tui.engine.datasets.prompts import DEFAULT_VOCAB_SIZE, PromptSpec, random_id_prompts
from dspark_tui.engine.drivers.base import CellError, DriverContext, ProgressCallback
from dspark_tui.engine.drivers.cli_driver import raw_relpath
from dspark_tui.engine.drivers.stats import RequestRecord, measured_raw
from dspark_tui.engine.servers.auth import bearer_headers
from dspark_tui.engine.servers.cpus import client_cpus, thread_cpus
from dspark_tui.model import CellResult, CellSpec
from dspark_tui.model.client_health import TICK_S, ClientHealth, judge
from dspark_tui.model.events import CellProgress
from dspark_tui.model.secrets import Scrubber
from dspark_tui.results.manifest import now_iso
from dspark_tui.results.native_raw import native_metrics, write_native_raw
from dspark_tui.stats.descriptive import percentile

PROGRESS_INTERVAL_S = 0.25
_RATE_WINDOW_S = 5.0
_ROLLING_REQUESTS = 256
_TEXT_KEY = b'"text":'
_ERROR_BODY_LIMIT = 4096
_CONNECT_TIMEOUT_S = 30.0
_HEALTH_TICKS = 2000  # the live lag is over the last 10 s of ticks


class _StreamError(Exception):
    """The server answered, but not with a usable stream; str() is the reason."""


def _text_is_empty(line: bytes, key_at: int) -> bool:
    """Whether the JSON string after `"text":` is empty (or null), without decoding the line."""
    i = key_at + len(_TEXT_KEY)
    n = len(line)
    while i < n and line[i] in b" \t":
        i += 1
    if i >= n or line[i] != 0x22:  # not a string: null
        return True
    return i + 1 < n and line[i + 1] == 0x22


def _find_text_key(line: bytes) -> int:
    """Index of the real `"text":` key; an escaped one inside a string is preceded by `\\`."""
    at = line.find(_TEXT_KEY)
    while at > 0 and line[at - 1] == 0x5C:
        at = line.find(_TEXT_KEY, at + 1)
    return at


class LiveStats:
    """What the UI shows while the cell runs; cheap to update on every chunk."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.completed = 0
        self.failed = 0
        self.tokens_estimate = 0  # text chunks so far, corrected to usage counts at completion
        self.ttfts: deque[float] = deque(maxlen=_ROLLING_REQUESTS)
        self.tpots: deque[float] = deque(maxlen=_ROLLING_REQUESTS)
        self._samples: deque[tuple[float, int]] = deque()
        self._ticker: LoopTicker | None = None
        self._arrivals: Arrivals | None = None

    def watch(self, ticker: LoopTicker, arrivals: Arrivals) -> None:
        """The client's health so far goes into each progress event (the cell panel's line)."""
        self._ticker, self._arrivals = ticker, arrivals

    def _health_so_far(self) -> tuple[float | None, float | None, float | None]:
        """Loop lag p99 (ms) over the last ticks, the same-read share of the gaps so far and
        their mean (ms)."""
        lag = same = itl = None
        if self._ticker is not None and self._ticker.lags:
            recent = self._ticker.lags[-_HEALTH_TICKS:]
            lag = percentile(recent, 99) * 1000
        if self._arrivals is not None and self._arrivals.gaps:
            same = self._arrivals.same_read / self._arrivals.gaps
            itl = self._arrivals.gap_total_s / self._arrivals.gaps * 1000
        return lag, same, itl

    def finish(self, record: RequestRecord, chunks: int) -> None:
        if record.ok:
            self.completed += 1
            self.tokens_estimate += record.output_tokens - chunks
            self.ttfts.append(record.ttft)
            tpot = record.tpot
            if tpot is not None:
                self.tpots.append(tpot)
        else:
            self.failed += 1
            self.tokens_estimate -= chunks

    def progress(self, cell: CellSpec) -> CellProgress:
        now = time.perf_counter()
        self._samples.append((now, self.tokens_estimate))
        while len(self._samples) > 2 and now - self._samples[0][0] > _RATE_WINDOW_S:
            self._samples.popleft()
        first_t, first_tokens = self._samples[0]
        rate = (self.tokens_estimate - first_tokens) / (now - first_t) if now > first_t else None
        ttft, tpot = self.ttfts, self.tpots
        lag, same, itl = self._health_so_far()
        return CellProgress(
            key=cell.key,
            completed=self.completed,
            total=self.total,
            failed=self.failed,
            output_tok_s=rate,
            ttft_p50_ms=percentile(ttft, 50) * 1000 if ttft else None,
            ttft_p99_ms=percentile(ttft, 99) * 1000 if ttft else None,
            tpot_p50_ms=percentile(tpot, 50) * 1000 if tpot else None,
            tpot_p99_ms=percentile(tpot, 99) * 1000 if tpot else None,
            client_lag_p99_ms=lag,
            same_read_fraction=same,
            mean_itl_ms=itl,
        )


@dataclass
class Arrivals:
    """Inter-token gaps timed over a run of requests, and how many of them came in the same
    socket read as the stream's previous token (the client read late: model/client_health.py)."""

    gaps: int = 0
    same_read: int = 0
    gap_total_s: float = 0.0


class LoopTicker:
    """How late the event loop runs: a task that asks to be woken every TICK_S and records how
    late each wake came. Its cost is one timer a tick (200 a second)."""

    def __init__(self) -> None:
        self.lags: list[float] = []
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._tick())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _tick(self) -> None:
        clock = time.perf_counter
        due = clock() + TICK_S
        while True:
            await asyncio.sleep(TICK_S)
            now = clock()
            self.lags.append(max(0.0, now - due))
            due = now + TICK_S


def client_health(ticker: LoopTicker, arrivals: Arrivals, records: Sequence[RequestRecord]) -> ClientHealth:
    """The measurement's client health, judged against the limits of model/client_health.py."""
    lags_ms = [lag * 1000 for lag in ticker.lags]
    itls = [gap for r in records if r.ok for gap in r.itl]
    return judge(ClientHealth(
        loop_lag_p50_ms=round(percentile(lags_ms, 50), 3) if lags_ms else 0.0,
        loop_lag_p99_ms=round(percentile(lags_ms, 99), 3) if lags_ms else 0.0,
        loop_lag_max_ms=round(max(lags_ms), 3) if lags_ms else 0.0,
        ticks=len(lags_ms), gaps=arrivals.gaps, same_read_gaps=arrivals.same_read,
        median_itl_ms=round(percentile(itls, 50) * 1000, 4) if itls else None,
        mean_itl_ms=round(sum(itls) / len(itls) * 1000, 4) if itls else None,
        cpus=sorted(thread_cpus()) if client_cpus() is not None else None,
    ))  # fmt: skip


class NativeClient:
    """One aiohttp session for a run: at most `slots` connections, each reused while it lasts.

    Every worker shares it; a worker has one request in flight at a time, so a connection is
    always free when it asks for one. Create it inside the running loop; `aclose` it at the end.
    """

    def __init__(self, ctx: DriverContext, slots: int, arrivals: Arrivals | None = None) -> None:
        self.arrivals = arrivals if arrivals is not None else Arrivals()
        headers = {"Content-Type": "application/json", **bearer_headers(ctx.bench.api_key)}
        self.model = ctx.served_model_name
        self.scrubber = Scrubber(ctx.secrets)
        self.url = ctx.base_url.rstrip("/") + "/v1/completions"
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=max(slots, 1)),
            headers=headers,
            cookie_jar=aiohttp.DummyCookieJar(),
            # No overall limit: the cell timeout bounds a run, and long generations are normal.
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=_CONNECT_TIMEOUT_S),
        )

    async def aclose(self) -> None:
        await self.session.close()

    def payload(self, prompt: PromptSpec) -> bytes:
        return json.dumps(
            {
                "model": self.model,
                "prompt": prompt.prompt,
                "max_tokens": prompt.output_len,
                "temperature": 0.0,
                "ignore_eos": True,
                "stream": True,
                "stream_options": {"include_usage": True},
            },
            separators=(",", ":"),
        ).encode()

    async def request(self, record: RequestRecord, prompt: PromptSpec, live: LiveStats | None) -> int:
        """Fill `record` from one streamed completion; returns the text chunks seen."""
        body = self.payload(prompt)
        itl = record.itl
        chunks = 0
        ttft = 0.0
        clock = time.perf_counter
        start = clock()
        last_token_at = start
        last_line_at = start
        usage_tokens: _Usage | None = None
        try:
            # Leaving this block early (an error, a cancellation) closes the connection rather
            # than returning it to the pool, so the server sees the disconnect and aborts.
            async with self.session.post(self.url, data=body) as resp:
                if resp.status != 200:
                    raise _StreamError(await _http_error(resp))
                content = resp.content
                pending = b""
                arrivals = self.arrivals
                while data := await content.readany():
                    lines = (pending + data).split(b"\n")
                    pending = lines.pop()
                    in_this_read = 0  # text chunks of this stream found in this one read
                    for raw in lines:
                        if not raw.startswith(b"data:"):
                            continue
                        line = raw[5:].strip()
                        if not line:
                            continue
                        now = clock()
                        last_line_at = now
                        key_at = _find_text_key(line)
                        if key_at >= 0:
                            if _text_is_empty(line, key_at):
                                continue
                            if chunks == 0:
                                ttft = now - start
                            else:
                                itl.append(now - last_token_at)
                                arrivals.gaps += 1
                                arrivals.gap_total_s += now - last_token_at
                                if in_this_read:
                                    arrivals.same_read += 1
                            in_this_read += 1
                            last_token_at = now
                            chunks += 1
                            if live is not None:
                                live.tokens_estimate += 1
                        elif line != b"[DONE]":
                            usage_tokens = _usage_or_raise(line, usage_tokens)
        except _StreamError as exc:  # a 401 body may echo the key: scrubbed before it is kept
            record.error = self.scrubber.scrub_text(str(exc))
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            record.error = _transport_error(exc)
        record.e2e = last_line_at - start
        record.ttft = ttft
        if not record.error and chunks == 0:
            record.error = "the stream carried no text"
        if usage_tokens is not None:
            record.output_tokens, prompt_tokens = usage_tokens
            record.usage_reported = True
            if prompt_tokens:  # the server's count of the prompt, as sglang 0.5.23 takes it
                record.input_tokens = prompt_tokens
        else:
            record.output_tokens = prompt.output_len  # what sglang assumes without usage
        return chunks


async def _http_error(resp: aiohttp.ClientResponse) -> str:
    """`HTTP <status>: <start of the body>` for a non-200 answer, on one line."""
    data = b""
    with contextlib.suppress(aiohttp.ClientError, OSError):
        while len(data) < _ERROR_BODY_LIMIT and (part := await resp.content.readany()):
            data += part
    text = data[:_ERROR_BODY_LIMIT].decode("utf-8", "replace")
    return f"HTTP {resp.status}: {' '.join(text.split())[:300]}"


def _transport_error(exc: BaseException) -> str:
    """One line for a failed connection or a torn stream (a crashed server shows as these)."""
    if isinstance(exc, aiohttp.ClientConnectorError):
        reason = exc.os_error.strerror or exc.os_error
        return f"ConnectError: cannot connect to {exc.host}:{exc.port} ({reason})"
    if isinstance(exc, aiohttp.ClientPayloadError | aiohttp.ServerDisconnectedError):
        return "RemoteProtocolError: the server closed the stream early"
    detail = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {detail}"


_Usage = tuple[int, int | None]  # completion tokens, prompt tokens (when the server says)


def _usage_or_raise(line: bytes, previous: _Usage | None) -> _Usage | None:
    """A chunk without text: the final usage chunk, or an error the server streamed."""
    try:
        obj: Any = json.loads(line)
    except ValueError:
        raise _StreamError(f"unreadable stream chunk: {line[:120]!r}") from None
    if not isinstance(obj, dict):
        return previous
    error = obj.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else error
        raise _StreamError(f"server error in stream: {message}")
    usage = obj.get("usage")
    if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
        prompt = usage.get("prompt_tokens")
        return int(usage["completion_tokens"]), prompt if isinstance(prompt, int) else None
    return previous


async def _run_requests(
    ctx: DriverContext,
    prompts: Sequence[PromptSpec],
    concurrency: int,
    live: LiveStats | None,
    arrivals: Arrivals | None = None,
) -> tuple[list[RequestRecord], float]:
    """All requests, at most `concurrency` in flight, sent in order as slots free up.

    Like sglang's `--max-concurrency` semaphore: `concurrency` workers each take the next
    prompt as soon as their previous request ends, so the server sees a closed loop.
    """
    records = [
        RequestRecord(index=i, input_tokens=p.input_len, requested_output_tokens=p.output_len)
        for i, p in enumerate(prompts)
    ]
    slots = min(concurrency, len(prompts))
    client = NativeClient(ctx, slots, arrivals)
    queue = iter(range(len(prompts)))
    cell_start = time.perf_counter()

    async def worker() -> None:
        for i in queue:
            record = records[i]
            record.start = time.perf_counter() - cell_start
            chunks = await client.request(record, prompts[i], live)
            if live is not None:
                live.finish(record, chunks)

    tasks = [asyncio.create_task(worker()) for _ in range(slots)]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await client.aclose()
    return records, time.perf_counter() - cell_start


async def _report_progress(live: LiveStats, cell: CellSpec, on_progress: ProgressCallback) -> None:
    last = (-1, -1, -1)
    while True:
        await asyncio.sleep(PROGRESS_INTERVAL_S)
        state = (live.completed, live.failed, live.tokens_estimate)
        if state != last:
            last = state
            on_progress(live.progress(cell))


def cell_prompts(cell: CellSpec, ctx: DriverContext) -> list[PromptSpec]:
    """`random-ids` drawn here; a text dataset's prompts (a category-pure cell's among them) as
    the run prepared them (prompts/)."""
    if cell.dataset == "random-ids":
        return random_id_prompts(cell.input_len, cell.output_len, cell.range_ratio,
                                 cell.num_prompts, ctx.bench.seed,
                                 ctx.vocab_size or DEFAULT_VOCAB_SIZE)
    from dspark_tui.engine.datasets import DatasetError, load_prompt_set  # imports the drivers

    if ctx.run_dir is None:
        raise CellError(f"{cell.dataset} prompts are prepared in a run directory; this cell has none")
    try:
        return load_prompt_set(ctx.run_dir, cell)
    except DatasetError as exc:
        raise CellError(str(exc)) from None


class NativeDriver:
    name = "native"

    async def run(self, cell: CellSpec, ctx: DriverContext, on_progress: ProgressCallback) -> CellResult:
        prompts = cell_prompts(cell, ctx)
        concurrency = cell.key.concurrency
        live = LiveStats(total=len(prompts))
        started_at = now_iso()
        ticker, arrivals = LoopTicker(), Arrivals()
        live.watch(ticker, arrivals)
        ticker.start()
        reporter = asyncio.create_task(_report_progress(live, cell, on_progress))
        try:
            async with asyncio.timeout(ctx.bench.cell_timeout_s):
                records, duration = await _run_requests(ctx, prompts, concurrency, live, arrivals)
        except TimeoutError:
            raise CellError(
                f"native client timed out after {ctx.bench.cell_timeout_s:g}s (cell_timeout_s) "
                f"with {live.completed} of {len(prompts)} requests done"
            ) from None
        finally:
            reporter.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reporter
            await ticker.stop()
        on_progress(live.progress(cell))
        raw_path = ctx.raw_dir / f"{cell.key.file_stem}.jsonl"
        raw = measured_raw(records, duration)
        write_native_raw(raw_path, raw, keep_itl=ctx.bench.keep_itl)
        failures = [r for r in records if not r.ok]
        if len(failures) == len(records):
            raise CellError(f"every request failed ({len(records)}); first: {failures[0].error}")
        notes: list[str] = []
        if failures:
            notes.append(f"{len(failures)} of {len(records)} requests failed; first: {failures[0].error}")
        health = client_health(ticker, arrivals, records)
        if health.behind:
            notes.append("the client fell behind: " + "; ".join(health.reasons))
        missing_usage = sum(1 for r in records if r.ok and not r.usage_reported)
        if missing_usage:
            notes.append(f"{missing_usage} responses had no usage; their max_tokens was counted")
        return CellResult(
            arm=cell.key.arm,
            scenario=cell.key.scenario,
            concurrency=cell.key.concurrency,
            metrics=native_metrics(raw),
            provenance=cell.provenance(
                self.name,
                client_version=f"dspark-tui native (aiohttp {aiohttp.__version__})",
                raw_output=raw_relpath(ctx, raw_path),
                started_at=started_at,
                finished_at=now_iso(),
                source="native",
                notes=notes,
            ),
            client=health,
        )


WARMUP_OUTPUT_TOKENS = 16  # a warmup request's longest answer: it warms, it does not measure
WARMUP_CONCURRENCY = 16


def warmup_prompts(ctx: DriverContext, cells: Sequence[CellSpec], n_requests: int) -> list[PromptSpec]:
    """`n_requests` prompts of the cells' datasets, taken in turn from each cell's set, answers
    cut to WARMUP_OUTPUT_TOKENS: a text set's prepared prompts; `random-ids` of the cell's
    lengths, drawn below the model's vocabulary like the cells' ids. A text set the native
    client did not prepare (a peer driver draws its own) is replaced by `random-ids`."""
    sets: list[list[PromptSpec]] = []
    for cell in cells:
        if cell.dataset == "random-ids" or ctx.bench.driver != "native":
            # Drawn with the next seed, as the cells' are with theirs: the same lengths and
            # vocabulary, none of the same prompts (a prefix cache warmed by the cells' own
            # prompts would flatter the first measurement's TTFT).
            count = min(cell.num_prompts, n_requests)
            sets.append(random_id_prompts(cell.input_len, cell.output_len, cell.range_ratio, count,
                                          ctx.bench.seed + 1, ctx.vocab_size or DEFAULT_VOCAB_SIZE))
        else:
            sets.append(cell_prompts(cell, ctx))
    sets = [s for s in sets if s]
    if not sets:
        return []
    prompts: list[PromptSpec] = []
    for i in range(n_requests):
        chosen = sets[i % len(sets)]
        prompt = chosen[(i // len(sets)) % len(chosen)]
        prompts.append(replace(prompt, output_len=min(prompt.output_len, WARMUP_OUTPUT_TOKENS)))
    return prompts


async def warmup(ctx: DriverContext, n_requests: int, cells: Sequence[CellSpec] = ()) -> None:
    """Warm the server (graphs, caches) before any cell with the cells' datasets (without cells:
    `random-ids` of 32 tokens); any failed request fails the warmup (CellError), and the caller
    measures no cell."""
    if n_requests <= 0:
        return
    prompts = (warmup_prompts(ctx, cells, n_requests) if cells else
               random_id_prompts(32, WARMUP_OUTPUT_TOKENS, 1.0, n_requests, ctx.bench.seed + 1,
                                 ctx.vocab_size or DEFAULT_VOCAB_SIZE))
    if not prompts:
        return
    try:
        async with asyncio.timeout(ctx.bench.cell_timeout_s):
            records, _ = await _run_requests(ctx, prompts, min(n_requests, WARMUP_CONCURRENCY), None)
    except TimeoutError:
        raise CellError(f"warmup timed out after {ctx.bench.cell_timeout_s:g}s") from None
    failures = [r for r in records if not r.ok]
    if failures:
        raise CellError(
            f"warmup: {len(failures)} of {len(records)} requests failed; first: {failures[0].error}"
        )
