"""One server session: one start of one arm's server — ready, warmed up, scraped — and its stop.

    async with ArmSession(...) as session:
        problem = await session.open()      # None: ready to measure
        ...measure with session.server and session.scraper...
    # stopped here, whatever happened inside
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from dspark_tui.engine.drivers.base import CellError, DriverContext
from dspark_tui.engine.run import greedy
from dspark_tui.engine.run.steering import Steering
from dspark_tui.engine.run.watch import watched
from dspark_tui.engine.servers.auth import bearer_headers
from dspark_tui.engine.servers.external_server import ExternalServer
from dspark_tui.engine.servers.gpu import GpuProbe
from dspark_tui.engine.servers.launchers import make_server
from dspark_tui.engine.servers.placement import Placement
from dspark_tui.engine.servers.scraper import MetricsScraper
from dspark_tui.engine.servers.server import ServerError, ServerProcess
from dspark_tui.model import Arm, CellSpec, Plan
from dspark_tui.model.events import Event, Notice, ServerStateChanged, SessionStarted
from dspark_tui.results import RunStore
from dspark_tui.results.manifest import record_server_info

_T = TypeVar("_T")
# What serves a session: a server this tool starts, or one that something else runs (a url).
ArmServer = ServerProcess | ExternalServer


@dataclass
class StartProblem:
    reason: str
    aborted: bool = False  # the user stopped the run during startup: no cell is to blame
    warmup: bool = False  # the server started; its warmup failed (the node is not to blame)


class WarmupFailed(Exception):
    """The warmup's requests failed: the cells would send the same prompts and fail the same way."""


class ArmSession:
    def __init__(self, plan: Plan, arm: Arm, store: RunStore, *, session: str, round: int,
                 emit: Callable[[Event], None], steering: Steering, gpu: GpuProbe | None,
                 evidence_told: set[str] | None = None, placement: Placement | None = None) -> None:
        self.plan = plan
        self.arm = arm
        self.store = store
        self.session = session
        self.round = round
        self._emit = emit
        self._steering = steering
        self._gpu = gpu
        self._evidence_told = evidence_told  # arms warned of missing /metrics, run-wide
        self.server: ArmServer = (
            ExternalServer(plan, arm, emit=emit) if arm.url is not None else
            make_server(plan, arm, log_path=store.server_log_path(arm.name, session),
                        run_dir=store.path, emit=emit, gpu=gpu, session=session,
                        placement=placement))
        self.scraper: MetricsScraper | None = None
        # The served model's vocabulary for `random-ids` (engine/datasets/vocab.py), set by the
        # runner's preparation before the warmup; None: the default size.
        self.vocab_size: int | None = None

    @property
    def node(self) -> str | None:
        """The node its server runs on (a cluster launcher's; None: this machine or a url)."""
        return getattr(self.server, "node", None)

    async def __aenter__(self) -> ArmSession:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def open(self, prepare: Callable[[ArmSession], Awaitable[None]] | None = None
                   ) -> StartProblem | None:
        """Start, wait ready, `prepare` (the run's prompts, once), warm up with them; an abort
        cuts a long startup short. A failed warmup is a start problem: no cell is measured."""
        try:
            if not await self._unless_stopping(self.server.start()):
                return StartProblem("aborted", aborted=True)
            self._emit(SessionStarted(arm=self.arm.name, round=self.round, session=self.session,
                                      node=self.node))
            if isinstance(self.server, ExternalServer):
                self._record_external(self.server)
            self.scraper = MetricsScraper(
                self.server.base_url, self.arm.name, interval_s=self.plan.bench.scrape_interval_s,
                emit=self._emit, headers=auth_headers(self.plan),
                # This machine's GPUs say nothing about a server running elsewhere.
                gpu=None if isinstance(self.server, ExternalServer) else self._gpu,
                told=self._evidence_told, dialect=self.plan.kind.metrics,
            )
            await self.scraper.start()
            if prepare is not None and not await self._unless_stopping(prepare(self)):
                return StartProblem("aborted", aborted=True)
            if not await self._unless_stopping(self._warm_up()):
                return StartProblem("aborted", aborted=True)
            if not await self._unless_stopping(self._check_greedy()):
                return StartProblem("aborted", aborted=True)
        except ServerError as exc:
            self._emit(Notice(level="error", message=f"{self.arm.name}: {exc.with_tail(10)}"))
            return StartProblem(exc.reason)
        except WarmupFailed as exc:
            self._emit(Notice(level="error", message=f"{self.arm.name}: {exc}"))
            return StartProblem(str(exc), warmup=True)
        return None

    def _record_external(self, server: ExternalServer) -> None:
        """What the server says about itself goes into run.json once; a later session that hears
        something else (their server was restarted or reconfigured mid-run) says so."""
        known = self.store.read_manifest()
        described = {"url": server.base_url, **(server.info or {})}
        change = record_server_info(known, self.arm.name, described)
        if change is not None:
            self._emit(Notice(level="warning", message=f"{self.arm.name}: {change}"))
        try:
            self.store.write_manifest(known)
        except OSError as exc:  # evidence, not a measurement: the cells' own saves decide
            self._emit(Notice(level="warning", message=f"{self.arm.name}: what the server says "
                              f"about itself was not saved to run.json ({exc.strerror or exc})"))

    async def close(self) -> None:
        if self.scraper is not None:
            await self.scraper.stop()
            self.scraper = None
        await self.server.stop()

    def driver_context(self, round: int, repeat: int) -> DriverContext:
        return DriverContext(
            base_url=self.server.base_url, host=self.server.host, port=self.server.port,
            served_model_name=self.server.served_model, model_path=self.plan.model,
            bench=self.plan.bench, raw_dir=self.store.raw_dir(self.arm.name, round, repeat),
            run_dir=self.store.path, secrets=frozenset(self.plan.secrets()),
            vocab_size=self.vocab_size,
        )

    async def _unless_stopping(self, work: Awaitable[_T]) -> bool:
        """Run `work` unless the run is stopped first; False when it was cut short."""
        task = asyncio.ensure_future(work)
        stopping = asyncio.create_task(self._steering.until_stopping())
        try:
            await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        if task.cancelled():
            return False
        task.result()  # raises what the work raised
        return True

    async def _watched(self, work: Awaitable[_T], during: str) -> _T:
        """`work`, ended with ServerError when the server dies or stalls first (engine/run/watch.py:
        server.stall_timeout_s, as a measurement is watched)."""
        return await watched(work, self.server, self.scraper, self.plan.server.stall_timeout_s,
                             during)

    async def _warm_up(self) -> None:
        count = self.plan.bench.warmup_requests
        if count <= 0:
            return
        name, server = self.arm.name, self.server
        self._emit(ServerStateChanged(arm=name, state="warming_up", message=f"{count} requests",
                                      pid=server.pid))
        from dspark_tui.engine.drivers.native import warmup

        timeout = self.plan.bench.cell_timeout_s
        failure: str | None = None
        try:
            # A server that stalls (/health 200, no token counted) or dies ends the wait, and
            # the session with it: a stalled server is never measured.
            await self._watched(asyncio.wait_for(
                warmup(self.driver_context(self.round, 0), count, self.warmup_cells()),
                timeout=timeout), "warmup")
        except TimeoutError:
            failure = f"warmup: not done after {timeout:g}s (bench.cell_timeout_s)"
        except (CellError, OSError) as exc:
            failure = str(exc) or type(exc).__name__
        death = server.death_reason()
        if death is not None:
            raise ServerError(f"{death} during warmup", server.tail())
        if failure is not None:
            raise WarmupFailed(failure if failure.startswith("warmup") else f"warmup: {failure}")
        self._emit(ServerStateChanged(arm=name, state="ready", message="warmed up", pid=server.pid))

    def warmup_cells(self) -> list[CellSpec]:
        """Whose prompts the warmup sends: the first cell of each of the arm's scenarios (their
        prompt sets), so every dataset the cells use is sent before any cell counts."""
        first: dict[str, CellSpec] = {}
        for cell in self.plan.cells():
            if cell.key.arm == self.arm.name:
                first.setdefault(cell.key.scenario, cell)
        return list(first.values())

    async def _check_greedy(self) -> None:
        """The greedy equivalence check (engine/run/greedy.py), once per arm and round."""
        count = self.plan.bench.check_greedy
        name, server = self.arm.name, self.server
        if count <= 0 or greedy.answered_in_round(self.store, name, self.round):
            return
        self._emit(ServerStateChanged(arm=name, state="warming_up", pid=server.pid,
                                      message=f"greedy check: {count} prompts, twice"))
        answers = await self._watched(greedy.collect(
            server.base_url, self.plan, self.arm, session=self.session, round=self.round,
            headers=auth_headers(self.plan), model=server.served_model), "the greedy check")
        death = server.death_reason()
        if death is not None:
            raise ServerError(f"{death} during the greedy check", server.tail())
        try:
            greedy.save_answers(self.store.path, answers)
        except OSError as exc:
            self._emit(Notice(level="warning", message=f"{name}: greedy answers not saved ({exc})"))
            return
        greedy.announce(self.store, answers, self._emit)
        self._emit(ServerStateChanged(arm=name, state="ready", pid=server.pid,
                                      message=f"greedy check done in {answers.seconds:.1f}s"))


def auth_headers(plan: Plan) -> dict[str, str]:
    return bearer_headers(plan.bench.api_key)
