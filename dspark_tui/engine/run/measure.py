"""One measurement of one cell on a running session, returned as an Outcome the caller acts on:
ok, failed, skipped, server_died (the result says why; the caller restarts or gives up) or
aborted (nothing to keep; a resume measures it again)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from dspark_tui.engine.drivers.base import BenchDriver, CellError
from dspark_tui.engine.run.session import ArmServer, ArmSession
from dspark_tui.engine.run.steering import Steering
from dspark_tui.engine.run.watch import watch_server
from dspark_tui.engine.servers.scraper import write_series
from dspark_tui.model import CellResult, CellSpec, CellStatus, Provenance, ServerSummary
from dspark_tui.model.cell import FailureKind
from dspark_tui.model.events import CellProgress, Event, Notice
from dspark_tui.results.manifest import now_iso

CELL_TIMEOUT_MARGIN_S = 30.0  # the runner's backstop beyond the drivers' own cell timeouts

OutcomeKind = Literal["ok", "failed", "skipped", "server_died", "aborted"]


@dataclass
class Outcome:
    kind: OutcomeKind
    result: CellResult | None = None  # what to save; None only when aborted


@dataclass
class Measurement:
    cell: CellSpec
    round: int
    repeat: int
    session: str | None  # None: no server session served it (it never started)


async def measure(m: Measurement, session: ArmSession, driver: BenchDriver, steering: Steering,
                  emit: Callable[[Event], None],
                  on_progress: Callable[[CellProgress], None]) -> Outcome:
    server, scraper = session.server, session.scraper
    assert scraper is not None, "measure() needs an opened session"
    timeout = session.plan.bench.cell_timeout_s + CELL_TIMEOUT_MARGIN_S
    started_at = now_iso()
    await scraper.begin_window(m.cell.key)
    mark = steering.begin_measurement()  # after the last await before the try: counted once
    # The drivers time out at cell_timeout_s with their own, detailed message; this one is
    # only a backstop for a driver that does not return.
    run = asyncio.create_task(asyncio.wait_for(
        driver.run(m.cell, session.driver_context(m.round, m.repeat), on_progress), timeout))
    watch = asyncio.create_task(watch_server(server, scraper, session.plan.server.stall_timeout_s))
    interrupt = asyncio.create_task(steering.until_interrupted(mark))
    try:
        await asyncio.wait({run, watch, interrupt}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        steering.end_measurement()
        await _cancel_all(run, watch, interrupt)
    summary, samples = await scraper.end_window()
    _save_series(session, m, samples, emit)
    provenance = m.cell.provenance(driver.name, started_at=started_at, finished_at=now_iso(),
                                   server_identity=server.identity)
    if _finished(run):
        return await _client_outcome(m, run, server, summary, provenance, timeout)
    if _finished(watch) and watch.exception() is None:
        return _failure(m, "server_died", watch.result(), summary, provenance)
    if steering.stopping:
        return Outcome("aborted")
    return _failure(m, "skipped", "skipped by user", summary, provenance)


async def _client_outcome(m: Measurement, run: asyncio.Task[CellResult], server: ArmServer,
                          summary: ServerSummary, provenance: Provenance, timeout: float) -> Outcome:
    exc = run.exception()
    death = await _death_after_failures(server, run)
    if exc is None:
        result = run.result()
        if death is None:
            return _completed(m, result, summary, provenance)
        # The client finished only because the server went away under it.
        metrics = result.metrics
        reason = (f"{death} during the cell ({metrics.completed or 0} requests completed, "
                  f"{metrics.failed or 0} failed)")
        return _failure(m, "server_died", reason, summary, provenance)
    if isinstance(exc, TimeoutError):
        reason = (f"timed out after {timeout:g}s (bench.cell_timeout_s + "
                  f"{CELL_TIMEOUT_MARGIN_S:g}s; the bench client did not stop by itself)")
    elif isinstance(exc, CellError):
        reason = str(exc) or "the bench client failed"
    else:
        reason = f"driver error: {type(exc).__name__}: {exc}"
    if death:
        return _failure(m, "server_died", f"{death}: {reason}", summary, provenance)
    return _failure(m, "failed", reason, summary, provenance)


def _completed(m: Measurement, result: CellResult, summary: ServerSummary,
               provenance: Provenance) -> Outcome:
    result = result.model_copy(update={"server": summary, "round": m.round, "repeat": m.repeat,
                                       "session": m.session})
    result.provenance.started_at = result.provenance.started_at or provenance.started_at
    result.provenance.finished_at = result.provenance.finished_at or provenance.finished_at
    result.provenance.server_identity = provenance.server_identity
    for name in ("input_len", "output_len", "range_ratio", "num_prompts"):
        if getattr(result.provenance, name) is None:
            setattr(result.provenance, name, getattr(provenance, name))
    incomplete = incomplete_reason(result)
    if result.status == CellStatus.OK and incomplete:
        # Throughput over a grid with failed requests is not comparable; keep the numbers
        # for inspection, but the measurement is failed so that retry and resume redo it.
        result = result.model_copy(update={"status": CellStatus.FAILED, "error": incomplete})
    if result.status == CellStatus.OK:
        return Outcome("ok", result)
    result.error = result.error or "the bench client reported failure"
    kind: OutcomeKind = "skipped" if result.status == CellStatus.SKIPPED else "failed"
    return Outcome(kind, result)


def _failure(m: Measurement, kind: OutcomeKind, reason: str, summary: ServerSummary | None,
             provenance: Provenance, failure: FailureKind | None = None) -> Outcome:
    key = m.cell.key
    status = CellStatus.SKIPPED if kind == "skipped" else CellStatus.FAILED
    if failure is None and kind == "server_died":
        failure = "server_died"
    return Outcome(kind, CellResult(
        arm=key.arm, scenario=key.scenario, concurrency=key.concurrency, round=m.round,
        repeat=m.repeat, session=m.session, status=status, error=reason, failure=failure,
        server=summary, provenance=provenance))


def failed_unrun(m: Measurement, reason: str, driver_name: str, failure: FailureKind) -> CellResult:
    """The record of a measurement that could not be made (its server never came up, or died
    too often): `failure` says which."""
    return _failure(m, "failed", reason, None, m.cell.provenance(driver_name),  # type: ignore[return-value]
                    failure).result


def incomplete_reason(result: CellResult) -> str | None:
    """Why a measurement whose client returned numbers still does not count: some requests
    failed (the client's own counts: failed, or completed short of the prompts sent)."""
    wanted = result.provenance.num_prompts
    completed = result.metrics.completed
    failed = result.metrics.failed or 0
    if completed is not None and wanted is not None and completed < wanted:
        failed = max(failed, wanted - completed)
    if failed <= 0:
        return None
    # The driver's note states the count too ("1 of 4 requests failed; first: …"): only its
    # first failure is added, so the reason is not said twice.
    first = next((note.split("first: ", 1)[1] for note in result.provenance.notes
                  if "first: " in note), "")
    count = f"{failed} of {wanted or completed or '?'} requests failed"
    return f"{count}; first: {first}" if first else count


async def _death_after_failures(server: ArmServer, run: asyncio.Task[CellResult]) -> str | None:
    """A crashing server closes its sockets a moment before its process is reaped: when requests
    failed, give the exit a short while to show, so the cell is blamed on the death, not on them."""
    death = server.death_reason()
    exc = run.exception()
    failures = exc is not None or bool(incomplete_reason(run.result()))
    deadline = time.monotonic() + 1.0
    while death is None and failures and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        death = server.death_reason()
    return death


def _finished(task: asyncio.Task) -> bool:
    return task.done() and not task.cancelled()


async def _cancel_all(*tasks: asyncio.Task) -> None:
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(BaseException):
            await task


def _save_series(session: ArmSession, m: Measurement, samples: list, emit: Callable[[Event], None]) -> None:
    if not samples:
        return
    try:
        write_series(session.store.series_path(m.cell.key, m.round, m.repeat), samples)
    except OSError as err:  # evidence, not the result: the measurement's own save decides
        emit(Notice(level="warning", message=f"series of {m.cell.key.id} not written: "
                    f"{err.strerror or err}"))
