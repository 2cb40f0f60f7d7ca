"""The runner: a plan in rounds — per round, per arm (alternating order) one server session
(start, ready, warm up), `repeats` passes over the round's cells, stop; then adaptive rounds for
the cells still unsure, up to the plan's budget.

Everything it learns goes two ways at once: to in-process subscribers (TUI, headless printer)
and into the run directory (events.jsonl, one file per measurement, run.json), so a crash at any
moment loses at most the measurement in flight and a resume knows exactly where to go on.

Its parts: setup.py (run directory, port checks), resume_plan.py (the plan and secrets of a
resumed run), schedule.py (what to measure), steering.py (pause/skip/abort state), session.py
(one server session), measure.py (one measurement, an outcome value), finish.py (what is left
behind), loops.py (heartbeat, control, parent watch).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Literal

from dspark_tui.engine.checks.disk_budget import refuse_resume_without_room
from dspark_tui.engine.checks.setup import filter_plan, preflight, prepare_run
from dspark_tui.engine.drivers.base import BenchDriver
from dspark_tui.engine.run import finish
from dspark_tui.engine.run.lanes import Lane, Lanes, lane_emit, round_nodes
from dspark_tui.engine.run.loops import control_loop, heartbeat_loop, parent_watch_loop
from dspark_tui.engine.run.measure import Measurement, Outcome, failed_unrun, measure
from dspark_tui.engine.run.resume_plan import RUNNER_PLAN_VAR, plan_of_run
from dspark_tui.engine.run.session import ArmSession, auth_headers
from dspark_tui.engine.run.steering import Steering
from dspark_tui.engine.rundir.control import CONTROLS_SINCE_VAR, ControlReader, controls_since
from dspark_tui.engine.rundir.event_sink import EventSink, Subscriber
from dspark_tui.engine.rundir.liveness import touch_heartbeat
from dspark_tui.engine.rundir.save_errors import save_advice, save_problem
from dspark_tui.engine.schedule import (
    GridCell,
    RoundPlan,
    Schedule,
    Slot,
    SlotState,
    adaptive_round,
    rounds_from_events,
)
from dspark_tui.engine.servers.cpus import ClientPinning, plan_split
from dspark_tui.engine.servers.gpu import GpuProbe, detect_gpu
from dspark_tui.engine.servers.launchers import stop_orphaned_launch
from dspark_tui.engine.servers.server_record import stop_orphaned_server
from dspark_tui.model import Arm, CellResult, Plan, UserError
from dspark_tui.model import events as ev
from dspark_tui.model.cell import FailureKind
from dspark_tui.model.secrets import Scrubber
from dspark_tui.results import RunStore
from dspark_tui.results.run_lock import RunLock

__all__ = ["RUNNER_PLAN_VAR", "Runner", "filter_plan", "plan_of_run", "preflight", "prepare_run"]

# (measurements, plan, look) -> (scenario, concurrency) to measure again; injectable for tests.
Remeasure = Callable[[Sequence[CellResult], Plan, int], list[GridCell]]


def cells_to_remeasure(measurements: Sequence[CellResult], plan: Plan, look: int) -> list[GridCell]:
    """The verdicts' choice (analysis/verdicts.py), imported when an adaptive round is first
    planned: numpy and the statistics are ~0.5 s of CPU that a runner which never gets there
    (killed, stopped, a plan without adaptive rounds) need not pay at its start."""
    from dspark_tui.analysis.verdicts import cells_to_remeasure as chosen

    return chosen(measurements, plan, look)
SessionEnd = Literal["done", "server_died", "not_started", "moved"]
PROGRESS_EVERY_S = 0.2


# Why a signal ended the run, as run.json and the screens say it (all such runs are resumable).
TERMINAL_CLOSED = "terminal closed"
SIGNAL_REASONS = {"SIGHUP": TERMINAL_CLOSED, "SIGINT": "SIGINT", "SIGTERM": "SIGTERM"}


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
        remeasure: Remeasure = cells_to_remeasure,
        charts: bool = True,
    ) -> None:
        self.plan = plan
        self.charts = charts  # draw the report's charts at the end (setting `charts`)
        self.store = store
        self.lang = lang
        self.parent_pid = parent_pid
        self.other_roots = [store.path.parent, *other_roots]
        self._driver = driver
        self._gpu: GpuProbe | None = detect_gpu() if gpu == "auto" else gpu  # type: ignore[assignment]
        self._remeasure = remeasure
        self._scrubber = Scrubber(plan.secrets())
        self._events = EventSink(store, plan.secrets())
        self._steering = Steering()
        self._schedule: Schedule | None = None
        self._announced: set[int] = set()  # rounds whose ev.RoundPlanned is in events.jsonl
        self._sessions = 0  # server sessions of this run so far, earlier runners' included
        self._evidence_told: set[str] = set()  # arms whose missing /metrics was told
        self._looked_empty = False
        self._signal_name: str | None = None
        self._main: asyncio.Task[ev.RunStatus] | None = None
        self._control = ControlReader(store.path)
        # Requests from the moment this runner was asked for: the launcher's clock when it
        # started this process, else now (a runner in the process that asked for it)
        self._controls_since = controls_since(os.environ.pop(CONTROLS_SINCE_VAR, None), time.time())
        self._last_progress_t: dict[Slot, float] = {}  # per measurement in flight
        self._parent_watch: asyncio.Task[None] | None = None
        self._prompts_ready = False
        self._vocab_size: int | None = None
        self._behind_told = False  # a measurement whose client fell behind was warned of
        self._prompts_lock = asyncio.Lock()

    # -- subscribers and control -----------------------------------------------------------

    def subscribe(self, subscriber: Subscriber) -> None:
        self._events.subscribe(subscriber)

    def pause(self) -> None:
        self._steering.pause()
        self._ack("pause", "will pause after the current cell")

    def resume(self) -> None:
        self._steering.resume()
        self._ack("resume", "resumed")

    def skip(self) -> None:
        if cut := self._steering.request_skip():
            self._ack("skip", "skipping the current cell" if cut == 1 else
                      f"skipping the {cut} cells in flight")
        else:
            self._ack("skip", "no cell is running; nothing to skip")

    def abort(self, reason: str = "aborted by user") -> None:
        self._steering.stop(reason)
        self._ack("abort", reason)

    def detach(self, why: str = "") -> None:
        """The process that started this runner leaves it going: stop watching it. `why`: what
        made it go (TERMINAL_CLOSED), said in the acknowledgement."""
        if self._parent_watch is not None:
            self._parent_watch.cancel()
            self._parent_watch = None
        self.parent_pid = None
        what = f"{why}, detached" if why else "detached"
        self._ack("detach", f"{what}: the run goes on without the app that started it")

    def retry(self) -> None:
        """Measurements that failed or were skipped so far go back in the queue (a server
        restarts if needed)."""
        failed, skipped = self._schedule.retry() if self._schedule is not None else (0, 0)
        also = f" and {skipped} skipped" if skipped else ""
        self._ack("retry", f"{failed} failed{also} cell(s) queued again")

    def install_signal_handlers(self, on_hangup: Callable[[], None] | None = None) -> None:
        """SIGINT and SIGTERM stop the run (interrupted, resumable); so does SIGHUP, unless
        `on_hangup` is given: then a lost terminal is told to it and the run goes on."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            if sig == signal.SIGHUP and on_hangup is not None:
                loop.add_signal_handler(sig, on_hangup)
            else:
                loop.add_signal_handler(sig, self._on_signal, sig.name)

    def _on_signal(self, name: str) -> None:
        if self._signal_name is not None:
            return  # cleanup is under way; a second Ctrl-C must not cut it short
        self._signal_name = name
        self._emit(ev.Notice(level="warning", message=f"{name}: stopping the server and saving state"))
        if self._main is not None:
            self._main.cancel()

    def _ack(self, action: str, message: str) -> None:
        self._emit(ev.RunControl(action=action, message=message))

    # -- the run ---------------------------------------------------------------------------

    async def run(self) -> ev.RunStatus:
        """Run to the end. The run directory's lock is held throughout (taken here unless the
        store already holds it: prepare_run, a resume, a launcher's hand-down); a second runner
        of the same directory is refused before it writes anything."""
        lock = self.store.lock or RunLock.acquire(self.store.path)
        self.store.lock = lock
        try:
            return await self._run_locked()
        finally:
            lock.release()
            self.store.lock = None

    async def _run_locked(self) -> ev.RunStatus:
        self._main = asyncio.current_task()
        self._control.skip_existing(self._controls_since)
        self._mark_running()
        background = self._start_background()
        status: ev.RunStatus = "failed"
        message = ""
        pinning: ClientPinning | None = None
        try:
            await self._prepare()  # its preflight checks server.cpus against this process's CPUs
            pinning = self._pin_client()
            if pinning is not None:  # said once the mask is held where the finally restores it
                self._emit(ev.Notice(level="info", message=f"server.cpus: {pinning.split.said()} "
                                     "(the server's whole process tree; the client keeps off it)"))
            await self._execute()
            status, message = self._ending()
        except asyncio.CancelledError:
            status, message = "interrupted", SIGNAL_REASONS.get(self._signal_name or "", "cancelled")
            if self._signal_name is None:
                raise
        except UserError as exc:
            status, message = "failed", str(exc)
            self._emit(ev.Notice(level="error", message=message))
        except Exception as exc:
            status, message = "failed", f"internal error: {type(exc).__name__}: {exc}"
            self._emit(ev.Notice(level="error", message=message))
            raise
        finally:
            for task in background:
                task.cancel()
            for task in background:
                with contextlib.suppress(BaseException):
                    await task
            try:
                self._finish(status, message)
            finally:
                if pinning is not None:
                    pinning.restore()
        return status

    def _pin_client(self) -> ClientPinning | None:
        """`[server] cpus`: this process (the client) on the CPUs the server is not given, for
        the run's duration (engine/servers/cpus.py); the servers are pinned as they start."""
        split = plan_split(self.plan)
        if split is None:
            return None
        pinning = ClientPinning(split)
        pinning.apply()
        return pinning

    def _start_background(self) -> list[asyncio.Task[None]]:
        handlers = {"pause": self.pause, "resume": self.resume, "skip": self.skip,
                    "abort": self.abort, "retry": self.retry, "detach": self.detach,
                    "hangup": lambda: self.detach(TERMINAL_CLOSED)}
        tasks = [asyncio.create_task(heartbeat_loop(self.store.path)),
                 asyncio.create_task(control_loop(self._control, handlers))]
        if self.parent_pid is not None:
            self._parent_watch = asyncio.create_task(parent_watch_loop(self.parent_pid, self.abort))
            tasks.append(self._parent_watch)
        return tasks

    def _ending(self) -> tuple[ev.RunStatus, str]:
        steering = self._steering
        if steering.storage_failed:
            message = steering.stop_reason or "the disk refused a save"
            self._emit(ev.Notice(level="error", message=message))
            return "interrupted", message
        if steering.stopping:
            return "aborted", steering.stop_reason or "aborted"
        return self._outcome()

    def _outcome(self) -> tuple[ev.RunStatus, str]:
        """Completed when every planned measurement is ok, this runner's or an earlier one's, or
        was skipped by the user: a skip is a choice, not a failure (the message counts them)."""
        assert self._schedule is not None
        states = list(self._schedule.cell_states().values())
        counts = [(states.count(state), what) for state, what in (
            (SlotState.FAILED, "failed"), (SlotState.SKIPPED, "skipped"),
            (SlotState.PENDING, "not run"))]
        message = "cells: " + ", ".join(f"{n} {what}" for n, what in counts if n)
        failed, skipped, not_run = (n for n, _ in counts)
        if failed or not_run:
            return "failed", message
        return "completed", message if skipped else ""

    async def _prepare(self) -> None:
        events = self.store.read_events()
        rounds = rounds_from_events(self.plan, events)
        self._schedule = Schedule(self.plan, rounds, self.store.done_slots())
        self._announced = {e.round for e in events if isinstance(e, ev.RoundPlanned)}
        self._sessions = self.store.sessions_used()
        undone = await asyncio.to_thread(stop_orphaned_launch, self.store.path,
                                         self.plan.server.launcher)
        if undone:
            self._emit(ev.Notice(level="warning", message=f"{undone}, left by the previous runner"))
        orphans = await asyncio.to_thread(stop_orphaned_server, self.store.path)
        if orphans:
            self._emit(ev.Notice(level="warning", message="stopped the server left by the previous "
                              f"runner of this run (pids {', '.join(map(str, orphans))})"))
        # The disk is checked on what is left to measure (all of it for a new run), not the plan.
        # The runner's plan is the run's snapshot: a key's problem names run.json (a resume on
        # another machine may lack the CPUs of `server.cpus`).
        checked = await asyncio.to_thread(preflight, self.plan, self.other_roots,
                                          exclude=self.store.path,
                                          source=str(self.store.path / "run.json"))
        await asyncio.to_thread(refuse_resume_without_room, self.store, self.plan)
        for warning in checked.warnings:
            self._emit(ev.Notice(level="warning", message=warning.message))
        manifest = self.store.read_manifest()
        self._emit(ev.RunStarted(
            run_dir=str(self.store.path), name=manifest.name, arms=[a.name for a in self.plan.arms],
            total_cells=self._schedule.total, resumed_cells=self._schedule.count(SlotState.OK),
            statistics=self.plan.statistics(),
        ))
        _, problems = self.store.load_measurements()
        for problem in problems:  # bounded: many bad files come as one problem
            self._emit(ev.Notice(level="warning", message=f"{problem}"))

    async def _execute(self) -> None:
        schedule = self._schedule
        assert schedule is not None
        # Every planned round is told at the start, so every watcher's total is the plan's
        # from the first cell (rounds in parallel start out of order; adaptive ones come later).
        for rnd in schedule.rounds:
            if rnd.reason == "planned":
                self._announce(rnd)
        while not self._steering.stopping:
            if schedule.next_session() is not None:
                await self._run_lanes(Lanes(self.plan.bench.parallel, self._round_nodes()))
            elif not self._plan_adaptive_round():
                return

    def _round_nodes(self) -> dict[int, str]:
        """The node each round's saved measurements ran on; a local server names none, so
        such a run reads no cell file for it."""
        if self.plan.server.launcher == "local":
            return {}
        return round_nodes(self.store.load_measurements()[0])

    async def _run_lanes(self, lanes: Lanes) -> None:
        """Every round with something pending, up to `parallel` at once (engine/run/lanes.py)."""
        if not lanes.parallel:
            await self._lane_loop(lanes.lanes[0], lanes)
            return
        try:
            async with asyncio.TaskGroup() as group:
                for lane in lanes.lanes:
                    group.create_task(self._lane_loop(lane, lanes))
        except BaseExceptionGroup as failed:
            raise failed.exceptions[0] from None  # as a single lane would have raised it

    async def _lane_loop(self, lane: Lane, lanes: Lanes) -> None:
        """One lane: a round at a time, every arm of it in turn on the round's node."""
        assert self._schedule is not None
        while not self._steering.stopping and (rnd := lanes.claim(lane, self._schedule)):
            self._announce(rnd)
            for arm in rnd.arms:
                if self._steering.stopping:
                    break
                if self._schedule.todo(rnd.round, arm):
                    await self._run_round_arm(rnd, self.plan.arm(arm), lane, lanes)
            lanes.release(lane)

    def _announce(self, rnd: RoundPlan) -> None:
        if rnd.round not in self._announced:
            self._announced.add(rnd.round)
            self._emit(rnd.event())

    def _plan_adaptive_round(self) -> bool:
        """Look at the measurements so far; add one more round for the cells still unsure."""
        schedule = self._schedule
        assert schedule is not None
        if self._looked_empty or schedule.extra_rounds >= self.plan.bench.adaptive_rounds:
            return False
        look = schedule.extra_rounds + 1
        measurements, _ = self.store.load_measurements()
        cells = self._remeasure(measurements, self.plan, look)
        rnd = adaptive_round(self.plan, len(schedule.rounds) + 1, cells)
        if not rnd.cells:
            self._looked_empty = True
            return False
        event = rnd.event()
        event.message = f"look {look}: {len(rnd.cells)} cell(s) still unsure"
        self._announced.add(rnd.round)
        schedule.add_round(rnd)
        self._emit(event)
        return True

    async def _run_round_arm(self, rnd: RoundPlan, arm: Arm, lane: Lane, lanes: Lanes) -> None:
        """One arm's part of a round: a session, and one restart if its server dies."""
        restarts_left = 1
        emit = lane_emit(self._emit, lanes.tag(lane), rnd.round)
        while not self._steering.stopping:
            ended = await self._one_session(rnd, arm, lane, lanes, emit)
            if ended == "moved":
                continue  # the same cells, off the node that did not start them
            if ended != "server_died":
                return
            if not self._schedule or not self._schedule.todo(rnd.round, arm.name):
                return  # it died with the arm's last measurement: nothing to restart for
            if restarts_left == 0:
                self._fail_unrun(rnd, arm, "not run: the server died twice during this arm", "server_died")
                return
            restarts_left -= 1
            emit(ev.ServerStateChanged(arm=arm.name, state="restarting",
                                       message="restarting once for the remaining cells"))

    async def _one_session(self, rnd: RoundPlan, arm: Arm, lane: Lane, lanes: Lanes,
                           emit: Callable[[ev.Event], None]) -> SessionEnd:
        assert self._schedule is not None
        if arm.url is not None:
            # Never restarted by us: every round measures the same server session.
            session_id = f"ext-{arm.dirname}"
        else:
            self._sessions += 1
            session_id = f"s{self._sessions}"
        async with ArmSession(self.plan, arm, self.store, session=session_id, round=rnd.round,
                              emit=emit, steering=self._steering, gpu=self._gpu,
                              evidence_told=self._evidence_told,
                              placement=lanes.placement(lane)) as session:
            lane.locating = lambda: session.node  # the other lanes keep off it while it starts
            try:
                problem = await session.open(prepare=self._prepare_prompts)
            except UserError as exc:  # prompts the file cannot give (too few), or not tokenized
                self._emit(ev.Notice(level="error", message=str(exc)))
                self._fail_every_unrun(f"not run: prompts not prepared: {exc}", session_id)
                return "done"
            finally:
                lane.locating = None
            if problem is not None:
                if problem.aborted:
                    return "not_started"
                if problem.warmup:  # the server started: the node is not to blame
                    self._fail_unrun(rnd, arm, f"not run: {problem.reason}", None, session_id)
                    return "not_started"
                pinned = lane.node
                if lanes.move_off(lane):
                    emit(ev.Notice(level="warning", message=(
                        f"{arm.name}: no server started on {pinned}, round {rnd.round}'s node "
                        f"({problem.reason}); the round goes on elsewhere, and its cells measured "
                        "on two nodes are not compared")))
                    return "moved"
                self._fail_unrun(rnd, arm, CellResult.start_failed_error(problem.reason), "server_start",
                                 session_id)
                return "not_started"
            lanes.placed(lane, session.node)
            while todo := self._schedule.todo(rnd.round, arm.name):
                if not await self._may_go_on():
                    return "done"
                cell, repeat = todo[0]
                outcome = await self._measure(Measurement(cell, rnd.round, repeat, session_id),
                                              session, emit)
                if outcome.kind == "server_died":
                    return "server_died"
            return "done"

    async def _prepare_prompts(self, session: ArmSession) -> None:
        """A text dataset's prompts and the model's vocabulary (`random-ids`), once per run, as
        soon as a server is ready (it tokenizes them, it bounds the ids), before its warmup
        sends them; kept in prompts/ and recorded in run.json, so a resume reuses them. Lanes
        that reach this together wait for the first: every arm and node sends the same prompts."""
        async with self._prompts_lock:
            if not self._prompts_ready:
                await self._prepare_prompts_once(session)
            session.vocab_size = self._vocab_size

    async def _prepare_prompts_once(self, session: ArmSession) -> None:
        from dspark_tui.engine.datasets import needs_preparing, peer_records, prepare_prompt_sets
        from dspark_tui.engine.datasets.vocab import draws_random_ids, model_vocabulary, vocabulary_line

        manifest = self.store.read_manifest()
        if needs_preparing(self.plan):
            started = time.monotonic()
            records = await prepare_prompt_sets(self.plan, self.store.path, session.server.base_url,
                                                auth_headers(self.plan), manifest.prompt_sets)
            fresh = [r for r in records if r not in manifest.prompt_sets]
            if fresh:
                self._emit(ev.Notice(message=(
                    f"prompts: {len(fresh)} set(s) prepared in {time.monotonic() - started:.1f} s "
                    f"({fresh[0].dataset}, {fresh[0].tokenizer}) in prompts/")))
        else:
            records = await asyncio.to_thread(peer_records, self.plan)  # hashes the file
        vocabulary = manifest.vocabulary
        if vocabulary is None and draws_random_ids(self.plan):
            vocabulary = await model_vocabulary(self.plan.model, session.server.base_url,
                                                self.plan.served_model_name, auth_headers(self.plan))
            manifest.vocabulary = vocabulary
            self._emit(ev.Notice(message=vocabulary_line(vocabulary)))
        self._vocab_size = vocabulary.size if vocabulary is not None else None
        self._prompts_ready = True
        files = {r.file for r in records}
        records += [r for r in manifest.prompt_sets if r.file not in files]  # narrowed resumes
        if records != manifest.prompt_sets or vocabulary is not None:
            manifest.prompt_sets = records
            self.store.write_manifest(manifest)

    async def _may_go_on(self) -> bool:
        if self._steering.mode == "paused":
            self._emit(ev.Notice(message="paused; resume to go on"))
            await self._steering.until_not_paused()
        return not self._steering.stopping

    async def _measure(self, m: Measurement, session: ArmSession,
                       emit: Callable[[ev.Event], None]) -> Outcome:
        assert self._schedule is not None
        key = m.cell.key
        slot = (key, m.round, m.repeat)
        emit(ev.CellStarted(key=key, num_prompts=m.cell.num_prompts, round=m.round,
                            repeat=m.repeat, index=self._schedule.index(slot),
                            total=self._schedule.total))
        outcome = await measure(m, session, self._get_driver(), self._steering, emit,
                                lambda progress: self._on_progress(progress, emit, slot))
        if outcome.result is not None:
            outcome.result.node = session.node  # the block the analysis pairs arms within
            self._record(outcome.result, outcome.kind)
            health = outcome.result.client
            if health is not None and health.behind:
                # A warning (a toast in the app) the first time only: one a measurement piled
                # toasts over the app's dialogs on a busy box and slowed its UI (the keyboard
                # tests failed on it). The later ones are in the log; the report counts them all.
                first = not self._behind_told
                self._behind_told = True
                later = "; later ones are in the log only" if first else ""
                emit(ev.Notice(level="warning" if first else "info", message=(
                    f"{key.id} r{m.round} p{m.repeat}: the client fell behind "
                    f"({'; '.join(health.reasons)}); its latencies are left out of comparisons"
                    f"{later}")))
        return outcome

    def _record(self, result: CellResult, kind: str) -> None:
        """Save one measurement and say so; the state changes before the event, so a subscriber
        reacting to it (retry) sees it."""
        assert self._schedule is not None
        if result.error and self._scrubber:  # a server's error body echoing the key
            result.error = self._scrubber.scrub_text(result.error)
        if not self._save(result):
            return  # stays pending: a resume measures it again
        slot = (result.key, result.round, result.repeat)
        if kind == "ok":
            self._schedule.mark(slot, SlotState.OK)
            self._emit(ev.CellFinished(result=result))
        elif kind == "skipped":
            self._schedule.mark(slot, SlotState.SKIPPED)
            self._emit(ev.CellSkipped(key=result.key, reason=result.error or "skipped",
                                      round=result.round, repeat=result.repeat))
        else:
            self._schedule.mark(slot, SlotState.FAILED)
            self._emit(ev.CellFailed(key=result.key, reason=result.error or "failed",
                                     round=result.round, repeat=result.repeat))

    def _fail_unrun(self, rnd: RoundPlan, arm: Arm, reason: str, failure: FailureKind | None,
                    session: str | None = None) -> None:
        assert self._schedule is not None
        driver = self.plan.bench.driver
        for cell, repeat in self._schedule.todo(rnd.round, arm.name):
            self._record(failed_unrun(Measurement(cell, rnd.round, repeat, session), reason,
                                      driver, failure), "failed")

    def _fail_every_unrun(self, reason: str, session: str | None) -> None:
        """Every measurement not yet made, of every round and arm, failed with `reason`: what a
        run cannot go on without (its prompts) ends it with the counts saying what happened."""
        assert self._schedule is not None
        for rnd in list(self._schedule.rounds):
            for arm in self.plan.arms:
                for cell, repeat in self._schedule.todo(rnd.round, arm.name):
                    self._record(failed_unrun(Measurement(cell, rnd.round, repeat, session),
                                              reason, self.plan.bench.driver, None), "failed")

    def _save(self, result: CellResult) -> bool:
        """Save a measurement; when the disk refuses (full, read-only), stop the run: nothing more
        could be kept, and every measurement saved so far stays valid for a resume."""
        try:
            self.store.save_cell(result)
            return True
        except OSError as exc:
            reason = (f"cannot save {result.key.id}: {save_problem(exc, self.store.path)}; the run "
                      f"stopped with every earlier cell kept: {save_advice(exc)}, then "
                      f"dspark-tui run --resume {self.store.path}")
            self._steering.stop(reason, storage=True)
            self._ack("abort", reason)
            return False

    def _on_progress(self, progress: ev.CellProgress, emit: Callable[[ev.Event], None],
                     slot: Slot) -> None:
        """At most one progress event a measurement every PROGRESS_EVERY_S (and its last: every
        request answered, failures included); events.jsonl keeps fewer (event_sink.py). By
        slot: two lanes may measure one cell in two rounds at once."""
        now = time.monotonic()
        last = self._last_progress_t.get(slot, 0.0)
        if now - last < PROGRESS_EVERY_S and progress.completed + progress.failed < progress.total:
            return
        self._last_progress_t[slot] = now
        emit(progress)

    def _get_driver(self) -> BenchDriver:
        if self._driver is None:
            from dspark_tui.engine.drivers import make_driver

            self._driver = make_driver(self.plan.bench)
        return self._driver

    # -- bookkeeping -----------------------------------------------------------------------

    def _emit(self, event: ev.Event) -> None:
        self._events.emit(event)

    def _mark_running(self) -> None:
        manifest = self.store.read_manifest()
        manifest.status = "running"
        manifest.runner_pid = os.getpid()
        manifest.finished_at = None
        manifest.cells_ok = None
        self.store.write_manifest(manifest)
        touch_heartbeat(self.store.path)

    def _undo_leftover_launches(self) -> None:
        """A job or pod whose cancel failed at its session's stop is tried once more here: no
        resume may come after a run that ended, and a job left holds a node's GPUs."""
        if self.plan.server.launcher == "local":
            return
        undone = stop_orphaned_launch(self.store.path, self.plan.server.launcher)
        if undone:
            self._emit(ev.Notice(level="warning", message=f"{undone}, left live by a stop that "
                                 "could not cancel it"))

    def _finish(self, status: ev.RunStatus, message: str) -> None:
        self._undo_leftover_launches()
        finish.write_outputs(self.store, self._emit, status, charts=self.charts)
        schedule = self._schedule
        cells = schedule.cell_states() if schedule is not None else {}
        cells_ok = sum(1 for state in cells.values() if state == SlotState.OK)
        finish.close_manifest(self.store, status, message, cells_ok, self._emit)
        # Counted in measurements, as RunStarted and CellStarted count them (and runner_gone).
        done = schedule.count(SlotState.OK) if schedule is not None else 0
        failed = schedule.count(SlotState.FAILED) if schedule is not None else 0
        total = schedule.total if schedule is not None else len(self.plan.cells())
        self._emit(ev.RunFinished(status=status, done=done, failed=failed, total=total,
                                  message=message))
        finish.drop_heartbeat(self.store)
