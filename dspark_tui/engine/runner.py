"""The runner: a plan, arm-major — per arm start the server, wait, warm up, run its cells, stop.

Everything it learns goes two ways at once: to in-process subscribers (TUI, headless printer)
and into the run directory (events.jsonl, one file per finished cell, run.json), so a crash at
any moment loses at most the cell in flight and a resume knows exactly where to go on.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import signal
import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TypeVar

from dspark_tui.engine.control import ControlReader
from dspark_tui.engine.drivers.base import BenchDriver, CellError, DriverContext
from dspark_tui.engine.gpu import GpuProbe, detect_gpu
from dspark_tui.engine.liveness import (
    HEARTBEAT_EVERY_S,
    orphan_server_on_port,
    pid_alive,
    run_holding_port,
    touch_heartbeat,
)
from dspark_tui.engine.ports import describe_taken_port, port_is_free
from dspark_tui.engine.scraper import MetricsScraper, write_series
from dspark_tui.engine.server import ServerError, ServerProcess
from dspark_tui.engine.server_record import stop_orphaned_server
from dspark_tui.model import (
    Arm,
    CellKey,
    CellResult,
    CellSpec,
    CellStatus,
    Plan,
    Provenance,
    Scenario,
    ServerSummary,
    UserError,
)
from dspark_tui.model.events import (
    CellFailed,
    CellFinished,
    CellProgress,
    CellSkipped,
    CellStarted,
    Event,
    Notice,
    RunControl,
    RunFinished,
    RunStarted,
    RunStatus,
    ServerStateChanged,
)
from dspark_tui.model.secrets import REDACTED
from dspark_tui.results import RunStore, load_run, manifest_for_plan
from dspark_tui.results.manifest import now_iso

Subscriber = Callable[[Event], None]
_Named = TypeVar("_Named", Arm, Scenario)
_T = TypeVar("_T")
PROGRESS_EVERY_S = 0.2
HEALTH_EVERY_S = 2.0
HEALTH_FAILURES_FATAL = 3
CELL_TIMEOUT_MARGIN_S = 30.0  # the runner's backstop beyond the drivers' own cell timeouts


def prepare_run(plan: Plan, results_root: Path, plan_source: str | None = None) -> RunStore:
    """Create the run directory (owner-only) before any runner exists, so callers know it at once."""
    manifest = manifest_for_plan(plan, plan_source)
    store = RunStore.create(results_root, manifest)
    os.chmod(store.path, 0o700)
    touch_heartbeat(store.path)  # alive for the history view until the runner takes over
    return store


def preflight(plan: Plan, roots: Iterable[Path], exclude: Path | None) -> None:
    """Refuse early, naming the culprit, when the plan's port is taken by a live run or by any
    other process: two runs on one port (and its GPUs) would spoil both."""
    server = plan.server
    holder = run_holding_port(roots, server.port, exclude=exclude)
    if holder is not None:
        raise UserError(f"port {server.port} is used by the live run {holder.name} "
                        f"({holder.path}, runner pid {holder.pid}); wait for it, abort it "
                        f"(`dspark-tui ctl {holder.path} abort`) or use another server.port")
    if not port_is_free(server.host, server.port):
        orphan = orphan_server_on_port(roots, server.port)
        if orphan is not None:
            raise UserError(f"port {server.port} is held by the server left behind by the "
                            f"interrupted run {orphan}; resume that run (`dspark-tui run --resume "
                            f"{orphan}`), which stops it first, or stop it by hand")
        raise UserError(describe_taken_port(server.host, server.port))


def filter_plan(plan: Plan, arms: Iterable[str] | None, scenarios: Iterable[str] | None) -> Plan:
    """The plan restricted to the named arms and scenarios; an unknown name is a user error."""
    data = plan.model_dump()
    if arms:
        data["arms"] = [a.model_dump() for a in _pick("arms", plan.name, plan.arms, arms)]
    if scenarios:
        data["scenarios"] = [s.model_dump()
                             for s in _pick("scenarios", plan.name, plan.scenarios, scenarios)]
    return Plan.model_validate(data) if (arms or scenarios) else plan


def _pick(option: str, plan_name: str, items: list[_Named], names: Iterable[str]) -> list[_Named]:
    wanted = [n.strip() for n in names if n.strip()]
    known = [item.name for item in items]
    for name in wanted:
        if name not in known:
            raise UserError(f"--{option}: no {option[:-1]} named {name!r} in plan {plan_name!r} "
                            f"({option}: {', '.join(known)})")
    return [item for item in items if item.name in wanted]


RUNNER_PLAN_VAR = "DSPARK_RUNNER_PLAN"


def plan_of_run(store: RunStore) -> Plan:
    """The plan a run was started with. run.json keeps it with secrets masked; the launcher hands
    its runner the whole plan in RUNNER_PLAN_VAR, and a later resume takes each masked secret
    from the environment (DSPARK_API_KEY for bench.api_key, the variable's own name for
    server.env), so no key is ever written to the run directory."""
    manifest = store.read_manifest()
    snapshot = dict(manifest.plan)
    if not snapshot:
        raise UserError(f"{store.manifest_path}: holds no plan snapshot; cannot resume this run")
    handed = os.environ.pop(RUNNER_PLAN_VAR, None)  # not for the server processes it starts
    if handed:
        plan = Plan.model_validate_json(handed)
        if plan.name == snapshot.get("name"):
            return plan
    snapshot = _with_secrets_from_environment(snapshot, store.manifest_path)
    try:
        return Plan.model_validate(snapshot)
    except ValueError as exc:
        first = str(exc).splitlines()[0]
        raise UserError(f"{store.manifest_path}: its plan snapshot is not valid ({first})") from None


def _with_secrets_from_environment(snapshot: dict, where: Path) -> dict:
    bench = dict(snapshot.get("bench") or {})
    if bench.get("api_key") == REDACTED:
        bench["api_key"] = os.environ.get("DSPARK_API_KEY") or None
        snapshot["bench"] = bench
    server = dict(snapshot.get("server") or {})
    env = dict(server.get("env") or {})
    for name, value in env.items():
        if value == REDACTED:
            if name not in os.environ:
                raise UserError(f"{where}: server.env.{name} is a secret run.json does not keep; "
                                f"export {name} to resume this run")
            env[name] = os.environ[name]
    server["env"] = env
    if REDACTED in server.get("command", []) or any(
            str(part).endswith("=" + REDACTED) for part in server.get("command", [])):
        raise UserError(f"{where}: the server command held a secret run.json does not keep; "
                        "pass it through server.env (e.g. VLLM_API_KEY) to make runs resumable")
    snapshot["server"] = server
    return snapshot


class _ServerDied(Exception):
    pass


class _Aborted(Exception):
    """Startup or warmup given up because the run was aborted."""


class Runner:
    """Runs one run directory to its end. Control methods are safe to call from any coroutine
    of the runner's loop; other processes use control.jsonl."""

    def __init__(
        self,
        plan: Plan,
        store: RunStore,
        *,
        driver: BenchDriver | None = None,
        lang: str = "zh",
        parent_pid: int | None = None,
        other_roots: Iterable[Path] = (),
        gpu: GpuProbe | str | None = "auto",
    ) -> None:
        self.plan = plan
        self.store = store
        self.lang = lang
        self.parent_pid = parent_pid
        self.other_roots = [store.path.parent, *other_roots]
        self._driver = driver
        self._gpu: GpuProbe | None = detect_gpu() if gpu == "auto" else gpu  # type: ignore[assignment]
        self._subscribers: list[Subscriber] = []
        self._cells = plan.cells()
        self._done: set[CellKey] = set()
        self._failed: set[CellKey] = set()
        self._attempted: set[CellKey] = set()
        self._paused = asyncio.Event()
        self._paused.set()  # set = not paused
        self._cell_interrupt = asyncio.Event()
        self._interrupt_reason: str | None = None
        self._skip_requested = False
        self._cell_running = False
        self._abort_reason: str | None = None
        self._storage_error: str | None = None
        self._abort_event = asyncio.Event()
        self._signal_name: str | None = None
        self._main: asyncio.Task[RunStatus] | None = None
        self._control = ControlReader(store.path)
        self._last_progress_t = 0.0
        self._server: ServerProcess | None = None

    # -- subscribers and control -----------------------------------------------------------

    def subscribe(self, subscriber: Subscriber) -> None:
        self._subscribers.append(subscriber)

    def pause(self) -> None:
        self._paused.clear()
        self._ack("pause", "will pause after the current cell")

    def resume(self) -> None:
        self._paused.set()
        self._ack("resume", "resumed")

    def skip(self) -> None:
        if not self._cell_running:
            self._ack("skip", "no cell is running; nothing to skip")
            return
        self._skip_requested = True
        self._cell_interrupt.set()
        self._ack("skip", "skipping the current cell")

    def abort(self, reason: str = "aborted by user") -> None:
        if self._abort_reason is None:
            self._abort_reason = reason
        self._abort_event.set()
        self._paused.set()
        self._cell_interrupt.set()
        self._ack("abort", reason)

    def retry(self) -> None:
        """Cells that failed so far go back in the queue (their arm's server restarts if needed)."""
        queued = self._failed - self._done
        self._attempted -= queued
        self._ack("retry", f"{len(queued)} failed cell(s) queued again")

    def install_signal_handlers(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, self._on_signal, sig.name)

    def _on_signal(self, name: str) -> None:
        if self._signal_name is not None:
            return  # cleanup is under way; a second Ctrl-C must not cut it short
        self._signal_name = name
        self._emit(Notice(level="warning", message=f"{name}: stopping the server and saving state"))
        if self._main is not None:
            self._main.cancel()

    def _ack(self, action: str, message: str) -> None:
        self._emit(RunControl(action=action, message=message))

    # -- the run ---------------------------------------------------------------------------

    async def run(self) -> RunStatus:
        self._main = asyncio.current_task()  # type: ignore[assignment]
        self._control.skip_existing()
        self._mark_running()
        background = [
            asyncio.create_task(self._heartbeat_loop()),
            asyncio.create_task(self._control_loop()),
        ]
        if self.parent_pid is not None:
            background.append(asyncio.create_task(self._parent_watch_loop()))
        status: RunStatus = "failed"
        message = ""
        try:
            await self._prepare()
            await self._execute()
            if self._storage_error is not None:
                status, message = "interrupted", self._storage_error
                self._emit(Notice(level="error", message=message))
            elif self._abort_reason is not None:
                status, message = "aborted", self._abort_reason
            else:
                status, message = self._outcome()
        except asyncio.CancelledError:
            status, message = "interrupted", f"{self._signal_name or 'cancelled'}"
            if self._signal_name is None:
                raise
        except UserError as exc:
            status, message = "failed", str(exc)
            self._emit(Notice(level="error", message=message))
        except Exception as exc:
            status, message = "failed", f"internal error: {type(exc).__name__}: {exc}"
            self._emit(Notice(level="error", message=message))
            raise
        finally:
            for task in background:
                task.cancel()
            for task in background:
                with contextlib.suppress(BaseException):
                    await task
            await self._finish(status, message)
        return status

    def _outcome(self) -> tuple[RunStatus, str]:
        """Completed only when every cell of the plan has an ok result, this session or before."""
        cells, _ = self.store.load_cells()
        statuses = [cells[c.key].status if c.key in cells else None for c in self._cells]
        failed = statuses.count(CellStatus.FAILED)
        skipped = statuses.count(CellStatus.SKIPPED)
        missing = statuses.count(None)
        if failed == skipped == missing == 0:
            return "completed", ""
        parts = [f"{n} {what}" for n, what in ((failed, "failed"), (skipped, "skipped"),
                                               (missing, "not run")) if n]
        return "failed", "cells: " + ", ".join(parts)

    async def _prepare(self) -> None:
        orphans = await asyncio.to_thread(stop_orphaned_server, self.store.path)
        if orphans:
            self._emit(Notice(level="warning", message="stopped the server left by the previous "
                              f"runner of this run (pids {', '.join(map(str, orphans))})"))
        preflight(self.plan, self.other_roots, exclude=self.store.path)
        self._done = self.store.done_keys() & {c.key for c in self._cells}
        manifest = self.store.read_manifest()
        self._emit(RunStarted(
            run_dir=str(self.store.path), name=manifest.name, arms=[a.name for a in self.plan.arms],
            total_cells=len(self._cells), resumed_cells=len(self._done),
        ))

    async def _execute(self) -> None:
        while self._abort_reason is None:
            todo = self._todo()
            if not todo:
                return
            await self._run_arm(self.plan.arm(todo[0].key.arm))

    def _todo(self, arm: str | None = None) -> list[CellSpec]:
        return [
            c for c in self._cells
            if c.key not in self._done and c.key not in self._attempted
            and (arm is None or c.key.arm == arm)
        ]

    async def _run_arm(self, arm: Arm) -> None:
        restarts_left = 1
        scraper: MetricsScraper | None = None
        try:
            while self._abort_reason is None:
                todo = self._todo(arm.name)
                if not todo:
                    return
                if self._server is None:
                    try:
                        scraper = await self._start_server(arm)
                    except ServerError as exc:
                        self._fail_cells(todo, f"server failed to start: {exc.reason}")
                        return
                    except _Aborted:
                        return
                await self._wait_while_paused()
                if self._abort_reason is not None:
                    return
                assert scraper is not None and self._server is not None
                try:
                    await self._run_cell(todo[0], self._server, scraper)
                except _ServerDied:
                    await self._stop_server(scraper)
                    scraper = None
                    if restarts_left == 0:
                        self._fail_cells(self._todo(arm.name),
                                         "not run: the server died twice during this arm")
                        return
                    restarts_left -= 1
                    self._emit(ServerStateChanged(arm=arm.name, state="restarting",
                                                  message="restarting once for the remaining cells"))
        finally:
            await self._stop_server(scraper)

    async def _start_server(self, arm: Arm) -> MetricsScraper:
        """Start, wait ready, warm up; an abort cuts a long startup short."""
        server = ServerProcess(
            self.plan, arm, log_path=self.store.server_log_path(arm.name), run_dir=self.store.path,
            emit=self._emit, gpu=self._gpu,
        )
        self._server = server
        scraper: MetricsScraper | None = None
        try:
            await self._unless_aborted(server.start())
            scraper = MetricsScraper(
                server.base_url, arm.name, interval_s=self.plan.bench.scrape_interval_s,
                emit=self._emit, gpu=self._gpu, headers=self._auth_headers(),
            )
            await scraper.start()
            await self._unless_aborted(self._warm_up(arm, server))
            return scraper
        except ServerError as exc:
            self._emit(Notice(level="error", message=f"{arm.name}: {exc.with_tail(10)}"))
            await self._stop_server(scraper)
            raise
        except BaseException:
            await self._stop_server(scraper)
            raise

    async def _unless_aborted(self, work: Awaitable[_T]) -> _T:
        task = asyncio.ensure_future(work)
        aborted = asyncio.create_task(self._abort_event.wait())
        try:
            await asyncio.wait({task, aborted}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            aborted.cancel()
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        if task.cancelled():
            raise _Aborted()
        return task.result()

    async def _warm_up(self, arm: Arm, server: ServerProcess) -> None:
        count = self.plan.bench.warmup_requests
        if count <= 0:
            return
        self._emit(ServerStateChanged(arm=arm.name, state="warming_up",
                                      message=f"{count} requests", pid=server.pid))
        from dspark_tui.engine.drivers.native import warmup

        try:
            await asyncio.wait_for(warmup(self._context(arm, server), count),
                                   timeout=self.plan.bench.cell_timeout_s)
        except (CellError, TimeoutError, OSError) as exc:
            self._emit(Notice(level="warning", message=f"{arm.name}: warmup incomplete ({exc})"))
        death = server.death_reason()
        if death is not None:
            raise ServerError(f"{death} during warmup", server.tail())
        self._emit(ServerStateChanged(arm=arm.name, state="ready", message="warmed up", pid=server.pid))

    async def _stop_server(self, scraper: MetricsScraper | None) -> None:
        if scraper is not None:
            await scraper.stop()
        server, self._server = self._server, None
        if server is not None:
            await server.stop()

    def _context(self, arm: Arm, server: ServerProcess) -> DriverContext:
        return DriverContext(
            base_url=server.base_url, host=server.host, port=server.port,
            served_model_name=self.plan.served_model_name, model_path=self.plan.model,
            bench=self.plan.bench, raw_dir=self.store.raw_dir(arm.name),
        )

    def _auth_headers(self) -> dict[str, str]:
        key = self.plan.bench.api_key
        return {"Authorization": f"Bearer {key}"} if key else {}

    # -- one cell --------------------------------------------------------------------------

    async def _run_cell(self, cell: CellSpec, server: ServerProcess, scraper: MetricsScraper) -> None:
        key = cell.key
        index = next(i for i, c in enumerate(self._cells) if c.key == key) + 1
        self._emit(CellStarted(key=key, num_prompts=cell.num_prompts, index=index,
                               total=len(self._cells)))
        self._skip_requested = False
        self._cell_interrupt.clear()
        self._cell_running = True  # until the cell's tasks are over; see skip()
        if self._abort_reason is not None:
            self._cell_interrupt.set()
        started_at = now_iso()
        await scraper.begin_window(key)
        driver = self._get_driver()
        # The drivers time out at cell_timeout_s with their own, detailed message; this one
        # is only a backstop for a driver that does not return.
        timeout = self.plan.bench.cell_timeout_s + CELL_TIMEOUT_MARGIN_S
        run = asyncio.create_task(asyncio.wait_for(
            driver.run(cell, self._context(self.plan.arm(key.arm), server), self._on_progress),
            timeout=timeout))
        watch = asyncio.create_task(self._watch(server, scraper))
        interrupt = asyncio.create_task(self._cell_interrupt.wait())
        tasks = {run, watch, interrupt}
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._cell_running = False
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(BaseException):
                    await task
        summary, samples = await scraper.end_window()
        if samples:
            try:
                write_series(self.store.series_path(key), samples)
            except OSError as err:  # evidence, not the result: the cell's own save decides
                self._emit(Notice(level="warning", message=f"series of {key.id} not written: "
                                  f"{err.strerror or err}"))
        self._attempted.add(key)
        provenance = cell.provenance(driver.name, started_at=started_at, finished_at=now_iso())
        if run in done and not run.cancelled():
            exc = run.exception()
            death = await _death_after_failures(server, run)
            if exc is None and death is None:
                self._finish_cell(run.result(), summary, provenance)
                return
            if exc is None:
                # The client finished only because the server went away under it.
                metrics = run.result().metrics
                self._fail_cell(key, f"{death} during the cell ({metrics.completed or 0} requests "
                                f"completed, {metrics.failed or 0} failed)", summary, provenance)
                raise _ServerDied(death)
            if isinstance(exc, TimeoutError):
                reason = (f"timed out after {timeout:g}s (bench.cell_timeout_s + "
                          f"{CELL_TIMEOUT_MARGIN_S:g}s; the bench client did not stop by itself)")
            elif isinstance(exc, CellError):
                reason = str(exc) or "the bench client failed"
            else:
                reason = f"driver error: {type(exc).__name__}: {exc}"
            self._fail_cell(key, f"{death}: {reason}" if death else reason, summary, provenance)
            if death:
                raise _ServerDied(death)
            return
        if watch in done and not watch.cancelled() and watch.exception() is None:
            reason = watch.result()
            self._fail_cell(key, reason, summary, provenance)
            raise _ServerDied(reason)
        if self._abort_reason is not None:
            self._attempted.discard(key)  # never finished; a resume redoes it
            return
        if self._skip_requested:
            result = CellResult(arm=key.arm, scenario=key.scenario, concurrency=key.concurrency,
                                status=CellStatus.SKIPPED, error="skipped by user", server=summary,
                                provenance=provenance)
            if self._save(result):
                self._emit(CellSkipped(key=key, reason="skipped by user"))

    def _finish_cell(self, result: CellResult, summary: ServerSummary, provenance: Provenance) -> None:
        result.server = summary
        result.provenance.started_at = result.provenance.started_at or provenance.started_at
        result.provenance.finished_at = result.provenance.finished_at or provenance.finished_at
        for name in ("input_len", "output_len", "range_ratio", "num_prompts"):
            if getattr(result.provenance, name) is None:
                setattr(result.provenance, name, getattr(provenance, name))
        incomplete = _incomplete_reason(result)
        if result.status == CellStatus.OK and incomplete:
            # Throughput over a grid with failed requests is not comparable; keep the numbers
            # for inspection, but the cell is failed so that retry and resume redo it.
            result = result.model_copy(update={"status": CellStatus.FAILED, "error": incomplete})
        if result.status == CellStatus.OK:
            if not self._save(result):
                return
            self._done.add(result.key)
            self._failed.discard(result.key)
            self._emit(CellFinished(result=result))
        else:
            result.error = result.error or "the bench client reported failure"
            if not self._save(result):
                return
            self._failed.add(result.key)
            self._attempted.add(result.key)
            self._emit(CellFailed(key=result.key, reason=result.error))

    def _fail_cell(self, key: CellKey, reason: str, summary: ServerSummary | None,
                   provenance: Provenance) -> None:
        result = CellResult(arm=key.arm, scenario=key.scenario, concurrency=key.concurrency,
                            status=CellStatus.FAILED, error=reason, server=summary,
                            provenance=provenance)
        if not self._save(result):
            return
        self._failed.add(key)
        self._attempted.add(key)
        self._emit(CellFailed(key=key, reason=reason))

    def _save(self, result: CellResult) -> bool:
        """Save a cell; when the disk refuses (full, read-only), stop the run: nothing more could
        be kept, and every cell saved so far stays valid for a resume."""
        try:
            self.store.save_cell(result)
            return True
        except OSError as exc:
            self._storage_error = (f"cannot save {result.key.id} in {self.store.path} "
                                   f"({exc.strerror or exc}); the run stopped with every earlier "
                                   f"cell kept: free space, then dspark-tui run --resume "
                                   f"{self.store.path}")
            self._attempted.discard(result.key)  # never saved: a resume runs it again
            self.abort(self._storage_error)
            return False

    def _fail_cells(self, cells: list[CellSpec], reason: str) -> None:
        for cell in cells:
            self._fail_cell(cell.key, reason, None, cell.provenance(self.plan.bench.driver))

    async def _watch(self, server: ServerProcess, scraper: MetricsScraper) -> str:
        """Returns why the server can no longer serve this cell; runs until cancelled otherwise."""
        failures = 0
        last_health = time.monotonic()
        stall_s = self.plan.server.stall_timeout_s
        while True:
            await asyncio.sleep(0.25)
            death = server.death_reason()
            if death is not None:
                return death
            if time.monotonic() - last_health >= HEALTH_EVERY_S:
                last_health = time.monotonic()
                ok = await server.probe_health(timeout=3.0)
                failures = 0 if ok else failures + 1
                if failures >= HEALTH_FAILURES_FATAL:
                    death = server.death_reason()
                    return death or f"server /health failed {failures} times in a row"
            idle = scraper.seconds_without_progress()
            if idle is not None and idle > stall_s:
                return (f"server stalled: no token counted for {idle:.0f}s with requests in "
                        f"flight (server.stall_timeout_s = {stall_s:g})")

    def _on_progress(self, progress: CellProgress) -> None:
        now = time.monotonic()
        if now - self._last_progress_t < PROGRESS_EVERY_S and progress.completed < progress.total:
            return
        self._last_progress_t = now
        self._emit(progress)

    def _get_driver(self) -> BenchDriver:
        if self._driver is None:
            from dspark_tui.engine.drivers import make_driver

            self._driver = make_driver(self.plan.bench)
        return self._driver

    async def _wait_while_paused(self) -> None:
        if not self._paused.is_set():
            self._emit(Notice(message="paused; resume to go on"))
            await self._paused.wait()

    # -- bookkeeping -----------------------------------------------------------------------

    def _emit(self, event: Event) -> None:
        try:
            self.store.append_event(event)
        except OSError as exc:
            if event.kind != "notice":
                self._notify(Notice(level="error", message=f"events.jsonl not written: {exc}"))
        self._notify(event)

    def _notify(self, event: Event) -> None:
        for subscriber in list(self._subscribers):
            try:
                subscriber(event)
            except (Exception, SystemExit) as exc:  # a broken viewer must not stop a benchmark
                # (rich turns a closed stdout into SystemExit)
                self._subscribers.remove(subscriber)
                with contextlib.suppress(OSError):
                    self.store.append_event(Notice(level="error",
                                                   message=f"a subscriber failed and was dropped: {exc!r}"))

    def _mark_running(self) -> None:
        manifest = self.store.read_manifest()
        manifest.status = "running"
        manifest.runner_pid = os.getpid()
        manifest.finished_at = None
        self.store.write_manifest(manifest)
        touch_heartbeat(self.store.path)

    async def _finish(self, status: RunStatus, message: str) -> None:
        if self._server is not None:
            await self._stop_server(None)
        cells, _problems = self.store.load_cells()
        try:
            self.store.write_results_csv(cells.values())
        except OSError as exc:
            self._emit(Notice(level="error", message=f"results.csv not written: {exc}"))
        if cells:
            self._write_report()
        manifest = self.store.read_manifest()
        manifest.status = status
        manifest.finished_at = now_iso()
        if message and status != "completed":
            manifest.notes.append(f"{dt.datetime.now():%Y-%m-%d %H:%M:%S} {status}: {message}")
        try:
            self.store.write_manifest(manifest)
        except OSError as exc:
            # run.json still says running; with its runner gone, History shows it interrupted.
            self._emit(Notice(level="error", message=f"run.json not updated: {exc.strerror or exc}"))
        ok = sum(1 for c in cells.values() if c.ok)
        failed = sum(1 for c in cells.values() if c.status == CellStatus.FAILED)
        self._emit(RunFinished(status=status, done=ok, failed=failed, total=len(self._cells),
                               message=message))
        with contextlib.suppress(OSError):
            (self.store.path / "heartbeat").unlink()

    def _write_report(self) -> None:
        try:
            from dspark_tui.report import render_report

            run = load_run(self.store.path)
            for lang in ("zh", "en"):  # report.md and report.en.md: both are cheap
                self.store.write_report(render_report(run, lang=lang), lang)
        except Exception as exc:  # the results are safe; a report bug must not hide them
            self._emit(Notice(level="error", message=f"report.md not written: "
                              f"{type(exc).__name__}: {exc} (retry: dspark-tui report "
                              f"{self.store.path})"))

    async def _heartbeat_loop(self) -> None:
        while True:
            await asyncio.to_thread(touch_heartbeat, self.store.path)
            await asyncio.sleep(HEARTBEAT_EVERY_S)

    async def _control_loop(self) -> None:
        handlers = {"pause": self.pause, "resume": self.resume, "skip": self.skip,
                    "abort": self.abort, "retry": self.retry}
        while True:
            await asyncio.sleep(0.5)
            for action in self._control.poll():
                handlers[action]()

    async def _parent_watch_loop(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            if os.getppid() != self.parent_pid or not pid_alive(self.parent_pid):
                self.abort("the process that started this runner is gone")
                return


def _incomplete_reason(result: CellResult) -> str | None:
    """Why a cell whose client returned numbers still does not count: some requests failed."""
    wanted = result.provenance.num_prompts
    completed = result.metrics.completed
    failed = result.metrics.failed or 0
    if completed is not None and wanted is not None and completed < wanted:
        failed = max(failed, wanted - completed)
    if failed <= 0:
        return None
    detail = next((n for n in result.provenance.notes if "failed" in n), "")
    return f"{failed} of {wanted or completed or '?'} requests failed" + (f" ({detail})" if detail else "")


async def _death_after_failures(server: ServerProcess, run: asyncio.Task[CellResult]) -> str | None:
    """A crashing server closes its sockets a moment before its process is reaped: when requests
    failed, give the exit a short while to show, so the cell is blamed on the death, not on them."""
    death = server.death_reason()
    exc = run.exception()
    failures = exc is not None or bool(_incomplete_reason(run.result()))
    deadline = time.monotonic() + 1.0
    while death is None and failures and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        death = server.death_reason()
    return death

