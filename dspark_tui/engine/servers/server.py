"""One arm's inference server: launch, wait until it really serves, watch it, stop all of it.

The server writes into a pipe that a relay process (log_relay.py) copies to its log file with
every known secret scrubbed; it runs in its own session so one signal reaches its whole process
group, and carries an environment token so workers that left the group (and the relay) are
still found at stop time.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import re
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx

from dspark_tui.engine.servers.auth import bearer_headers
from dspark_tui.engine.servers.cpus import PinError, spawning_on
from dspark_tui.engine.servers.cpus import said as said_cpus
from dspark_tui.engine.servers.gpu import GpuProbe
from dspark_tui.engine.servers.identity import (
    foreign_listener,
    foreign_names,
    served_names,
    session_model_name,
    takes_served_model_name,
    with_session_name,
)
from dspark_tui.engine.servers.log_relay import MARKER_PREFIX, caught_up, head_bytes, start_relay
from dspark_tui.engine.servers.placement import Placement
from dspark_tui.engine.servers.ports import describe_taken_port, port_is_free, wait_port_free
from dspark_tui.engine.servers.procs import TOKEN_VAR, ProcRef, descendants, terminate_tree
from dspark_tui.engine.servers.server_record import RecordedProc, ServerRecord, write_record
from dspark_tui.engine.servers.tls import verifying_context
from dspark_tui.model import Arm, Plan
from dspark_tui.model.events import Event, ServerLog, ServerState, ServerStateChanged
from dspark_tui.model.secrets import scrub_argv, secret_values

# Lines worth showing while a server starts: what vLLM prints as it loads, compiles and binds.
_PROGRESS = re.compile(
    r"Loading (safetensors|weights|model)|Model loading took|Loading weights took|"
    r"Capturing CUDA graph|Graph capturing finished|torch\.compile|Compil(ing|ation)|"
    r"Available KV cache memory|GPU KV cache size|init engine|Starting vLLM API server|"
    r"Uvicorn running on|Application startup complete|Waiting for application startup",
    re.IGNORECASE,
)
# Lines after which a starting server will not become ready, even if it has not exited yet.
_FATAL = re.compile(
    r"EngineCore failed to start|Engine core initialization failed|CUDA out of memory|"
    r"OutOfMemoryError|\[Errno 98\]|address already in use|^\s*(FATAL|CRITICAL)\b",
    re.IGNORECASE,
)
_NOTEWORTHY = re.compile(r"\b(WARNING|ERROR|CRITICAL|FATAL)\b|Traceback", re.IGNORECASE)

TAIL_LINES = 200
MAX_LINE_CHARS = 2000
READ_CHUNK = 1 << 20
MAX_BACKLOG = 4 << 20  # a flood beyond this is skipped, not parsed
LOG_EVENTS_PER_S = 20.0
RELAY_DRAIN_S = 3.0  # how long a stopped server's last lines may take to reach the log


def is_progress_line(line: str) -> bool:
    """A line that tells how far a starting server has got (worth showing a user)."""
    return bool(_PROGRESS.search(line))




class ServerError(Exception):
    """The server could not start or stopped serving; str() is one line, the tail follows."""

    def __init__(self, reason: str, tail: list[str] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.tail = tail or []

    def with_tail(self, lines: int = 15) -> str:
        if not self.tail:
            return self.reason
        return self.reason + "\n" + "\n".join(self.tail[-lines:])


Emit = Callable[[Event], None]


class ServerProcess:
    """A local server process. The launchers (engine/servers/launchers/) subclass it: their local
    process is the one that carries the remote server's output (`srun`, `kubectl logs -f`),
    and the hooks below say where the server is and how to end it. A launcher honours a
    `Placement` (which node, which not) and sets `node` once it knows where the server runs."""

    # The server listens on this machine: its port is checked before and after (not so for a
    # server on a cluster node or in a pod), and its listening socket must be its tree's.
    local_port = True
    # The command is this session's to extend: a vLLM-like one serves under the session's own
    # name (engine/servers/identity.py). A pod's command is rendered from the plan instead.
    names_session = True
    # `[server] cpus` pins the started process tree here (engine/servers/cpus.py); a launcher's
    # local process holds a remote server, which the plan refuses to pin (model/plan.py).
    pins_here = True

    def __init__(
        self,
        plan: Plan,
        arm: Arm,
        *,
        log_path: Path,
        run_dir: Path,
        emit: Emit,
        gpu: GpuProbe | None = None,
        session: str | None = None,
        placement: Placement | None = None,
    ) -> None:
        self.plan = plan
        self.arm = arm
        self.session = session
        self.log_path = log_path
        self.run_dir = run_dir
        self._emit = emit
        self._gpu = gpu
        self.argv = plan.server_argv(arm)
        self.host = plan.server.host
        self.port = plan.server.port
        # Where a launcher is asked to run the server, and the node it runs on once known
        # (None for a local server: this machine, which ignores the placement).
        self.placement = placement or Placement()
        self.node: str | None = None
        self.token = uuid.uuid4().hex
        # The session's own served model name (None: the command takes none, or a pod's), and
        # the name every request of the session gives: that one, else the plan's.
        self.identity_name: str | None = None
        named = plan.server.session_name
        if self.names_session and (named or (named is None and takes_served_model_name(self.argv))):
            self.identity_name = session_model_name(self.token)
            self.argv = with_session_name(self.argv, self.identity_name, plan.served_model_name)
        self.served_model = self.identity_name or plan.served_model_name
        self.identity: str | None = None  # what proved the answering server is this session's
        self._port_foreign = False
        self._popen: subprocess.Popen[bytes] | None = None
        self._relay: subprocess.Popen[bytes] | None = None
        self._refs: dict[int, ProcRef] = {}
        self._record: ServerRecord | None = None
        self._tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        self._fatal: str | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._log_offset = 0
        self._partial = b""
        self._cut_seen = b""
        self._ready = False
        self._stopped = False
        self._log_budget = LOG_EVENTS_PER_S
        self._log_budget_t = time.monotonic()
        self.state: ServerState = "stopped"

    # -- facts -----------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        if ":" in host:
            host = f"[{host}]" if host != "::" else "[::1]"
        return f"http://{host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._popen.pid if self._popen else None

    def exit_code(self) -> int | None:
        return self._popen.poll() if self._popen else None

    def tail(self) -> list[str]:
        return list(self._tail)

    # -- lifecycle -------------------------------------------------------------------------

    async def __aenter__(self) -> ServerProcess:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def start(self) -> None:
        """Launch and wait until ready; on any failure the process is stopped and ServerError raised."""
        try:
            await self._submit()
            self._launch()
            await self.wait_ready()
        except BaseException as exc:
            await self.stop(quiet=True)
            if isinstance(exc, ServerError):
                self._set_state("failed", exc.reason)
            raise

    def _launch(self) -> None:
        if self.local_port and not port_is_free(self.host, self.port):
            raise ServerError(describe_taken_port(self.host, self.port))
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **self.plan.server.env, TOKEN_VAR: self.token}
        secrets = self._secrets(env)
        shown = scrub_argv(self.argv, secrets)  # a key inside `sh -c "…"` is no flag to mask
        self._set_state("starting", " ".join(shown))
        # Recorded before the spawn: a runner killed between Popen and the record below would
        # otherwise leave a server no resume knows of (the token finds it; pid 0 = not yet known).
        self._record = ServerRecord(
            arm=self.arm.name, pid=0, pgid=0, create_time=0.0, token=self.token, host=self.host,
            port=self.port, argv=shown, session=self.session, state="starting",
        )
        write_record(self.run_dir, self._record)
        with contextlib.suppress(OSError):
            self._log_offset = os.path.getsize(self.log_path)
        # The relay carries the token (a resume finds it) but not the plan's secret variables.
        try:
            self._relay, fd = start_relay(self.log_path, secrets,
                                          {**os.environ, TOKEN_VAR: self.token},
                                          self.plan.server.log_max_bytes)
        except OSError as exc:
            self._record.state = "stopped"
            write_record(self.run_dir, self._record)
            raise ServerError(f"cannot start the server's log relay: {exc}") from None
        argv = self._local_argv()
        try:
            try:
                with spawning_on(self.plan.server.cpus if self.pins_here else None):
                    self._popen = subprocess.Popen(
                        argv,
                        stdin=subprocess.DEVNULL,
                        stdout=fd,
                        stderr=subprocess.STDOUT,
                        env=env,
                        start_new_session=True,
                        close_fds=True,
                    )
            except OSError as exc:
                self._record.state = "stopped"
                write_record(self.run_dir, self._record)
                if isinstance(exc, PinError):
                    raise ServerError(str(exc)) from None
                raise ServerError(f"cannot run {argv[0]!r}: {exc.strerror or exc}") from None
        finally:
            os.close(fd)  # the server holds the only write end: its exit ends the relay
        pid = self._popen.pid
        ref = ProcRef.of(pid)
        self._record = self._record.model_copy(update={
            "pid": pid, "pgid": pid, "create_time": ref.create_time if ref else 0.0,
            "state": "running"})
        write_record(self.run_dir, self._record)
        pinned = said_cpus(self.plan.server.cpus) if self.pins_here else ""
        self._set_state("loading", f"pid {pid}" + (f", its process tree on {pinned}" if pinned else ""))
        self._tasks = [
            asyncio.create_task(self._follow_log_loop()),
            asyncio.create_task(self._track_descendants_loop()),
        ]

    def _secrets(self, env: dict[str, str]) -> set[str]:
        """Every secret this server could print: the API key, what masking hides in its command
        and the bench's extra arguments, the secret-named variables of its environment."""
        return secret_values(argvs=[self.argv, self.plan.bench.extra_args], env=env,
                             keys=[self.plan.bench.api_key])

    # -- hooks of the launchers ------------------------------------------------------------

    async def _submit(self) -> None:
        """Before the local process starts (a pod is applied here)."""

    def _local_argv(self) -> list[str]:
        """What runs on this machine: the server itself, or what holds a remote one."""
        return self.argv

    async def _located(self) -> bool:
        """Whether the server's address (host, port) is known yet; may raise ServerError."""
        return True

    async def _end_remote(self) -> None:
        """Before the local processes are ended: cancel the job, delete the pod."""

    # -- readiness ---------------------------------------------------------------------------

    async def wait_ready(self) -> None:
        timeout = self.plan.server.startup_timeout_s
        deadline = time.monotonic() + timeout
        while True:
            self._read_log()
            code = self.exit_code()
            if code is not None:
                await self._drain_log()
                raise ServerError(f"server exited with code {code} while starting", self.tail())
            if self._fatal is not None:
                code = await self._exit_within(1.0)
                if code is not None:
                    await self._drain_log()
                    raise ServerError(f"server exited with code {code} while starting: "
                                      f"{self._fatal}", self.tail())
                raise ServerError(f"server log shows a fatal error: {self._fatal}", self.tail())
            if time.monotonic() >= deadline:
                raise ServerError(f"server not ready after {timeout:g}s (startup_timeout_s)",
                                  self.tail())
            if await self._located() and await self._serves():
                await self._catch_up_log()  # what it printed so far comes before "ready"
                self._ready = True
                self._set_state("ready", f"{self.base_url} pid {self.pid}")
                return
            await asyncio.sleep(0.25)

    async def _serves(self) -> bool:
        # A client per attempt: a launcher learns the address (base_url) while the server starts.
        async with self._client(timeout=5.0) as client:
            return (await self._health(client) and await self._proves_identity(client)
                    and await self._tiny_completion(client))

    async def _proves_identity(self, client: httpx.AsyncClient) -> bool:
        """Whether what answers is this session's server (engine/servers/identity.py); a foreign one
        raises ServerError naming it. False: not provable yet (its /v1/models is not up).
        The session's name on /v1/models is the stronger proof: with it, a port held outside
        the tree (a container runtime's proxy) is a proxy to our server; without it, the
        socket decides."""
        proofs = []
        foreign = None
        if self.local_port and self._popen is not None:
            tree = {self._popen.pid, *(ref.pid for ref in descendants(self._popen.pid))}
            foreign = await asyncio.to_thread(foreign_listener, self.host, self.port, tree,
                                              self._popen.pid)
            if foreign is None:
                proofs.append(f"port {self.port} listened on by its process tree (pid {self.pid})")
        if self.identity_name is not None:
            listed = await served_names(client)
            if listed is None and foreign is None:
                return False
            if listed is None or self.identity_name not in listed:
                reason = foreign or foreign_names(self.base_url, self.identity_name, listed or [])
                self._port_foreign = foreign is not None  # its stop waits for no such port
                raise ServerError(reason, self.tail())
            proofs.insert(0, f"{self.identity_name} on /v1/models")
            if foreign is not None:
                proofs.append(f"port {self.port} held outside its process tree (a proxy to it)")
        elif foreign is not None:
            self._port_foreign = True
            raise ServerError(foreign, self.tail())
        self.identity = "; ".join(proofs) or None
        if self._record is not None and self.identity:
            self._record.identity = self.identity
            write_record(self.run_dir, self._record)
        return True

    async def _exit_within(self, seconds: float) -> int | None:
        """A fatal line is usually followed by the exit; its code is the clearer message."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            code = self.exit_code()
            if code is not None:
                return code
            await asyncio.sleep(0.05)
        return None

    async def stop(self, *, quiet: bool = False) -> None:
        """End the whole tree, then wait for the port (and GPU memory) to be free again."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(BaseException):
                await task
        self._tasks = []
        if self._popen is None and not self._stopped:
            await self._end_remote()  # a pod applied before its local process could start
        if self._popen is None or self._stopped:
            await self._drain_log()
            return
        self._stopped = True
        if not quiet:
            self._set_state("stopping", f"pid {self.pid}")
        await self._end_remote()
        self._refresh_descendants()
        popen = self._popen
        refs = list(self._refs.values())
        if self._record is not None:
            refs.append(ProcRef(popen.pid, self._record.create_time))
        killed = await asyncio.to_thread(
            terminate_tree, pgid=popen.pid, refs=refs, token=self.token,
            grace_s=self.plan.server.stop_timeout_s,
        )
        with contextlib.suppress(subprocess.TimeoutExpired):
            await asyncio.to_thread(popen.wait, 5)
        await self._drain_log()
        if self._record is not None:
            self._record.state = "stopped"
            write_record(self.run_dir, self._record)
        port_ok = (not self.local_port or self._port_foreign
                   or await wait_port_free(self.host, self.port, timeout=15.0))
        gpu_ok = await self._wait_gpu_released(timeout=60.0)
        notes = []
        if killed:
            notes.append(f"killed after {self.plan.server.stop_timeout_s:g}s: pids "
                         + ",".join(map(str, killed)))
        if not port_ok:
            notes.append(f"port {self.port} still busy")
        if not gpu_ok:
            notes.append("GPU memory still held")
        if not quiet:
            self._set_state("stopped", "; ".join(notes))
        self._ready = False

    async def _catch_up_log(self, timeout: float = 2.0) -> None:
        deadline = time.monotonic() + timeout
        while (self._relay is not None and not caught_up(self._relay)
               and time.monotonic() < deadline):
            await asyncio.sleep(0.01)
        self._read_log()

    async def _drain_log(self) -> None:
        """Wait for the relay to copy the server's last lines (it ends with the server's output),
        then read them. A worker still holding the pipe past RELAY_DRAIN_S costs its lines."""
        relay = self._relay
        if relay is not None:
            try:
                await asyncio.to_thread(relay.wait, RELAY_DRAIN_S)
            except subprocess.TimeoutExpired:
                relay.kill()
                await asyncio.to_thread(relay.wait)
            self._relay = None
        self._read_log()

    async def _wait_gpu_released(self, timeout: float) -> bool:
        if self._gpu is None:
            return True
        ours = set(self._refs) | ({self.pid} if self.pid else set())
        deadline = time.monotonic() + timeout
        while True:
            pids = await asyncio.to_thread(self._gpu.compute_pids)
            if pids is None or not (pids & ours):
                return True
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(1.0)

    # -- watching a serving server ----------------------------------------------------------

    async def probe_health(self, timeout: float = 3.0) -> bool:
        async with self._client(timeout=timeout) as client:
            return await self._health(client)

    def death_reason(self) -> str | None:
        code = self.exit_code()
        if code is not None:
            return f"server exited with code {code}"
        return None

    # -- internals -------------------------------------------------------------------------

    def _client(self, timeout: float) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.base_url, timeout=timeout, verify=verifying_context(),
                                 headers=bearer_headers(self.plan.bench.api_key))

    async def _health(self, client: httpx.AsyncClient) -> bool:
        try:
            return (await client.get(self.plan.kind.readiness.health_path)).status_code == 200
        except httpx.HTTPError:
            return False

    async def _tiny_completion(self, client: httpx.AsyncClient) -> bool:
        readiness = self.plan.kind.readiness
        try:
            response = await client.post(readiness.completion_path,
                                         json=readiness.completion_body(self.served_model))
        except httpx.HTTPError:
            return False
        return response.status_code == 200

    def _set_state(self, state: ServerState, message: str = "") -> None:
        self.state = state
        self._emit(ServerStateChanged(arm=self.arm.name, state=state, message=message, pid=self.pid))

    async def _follow_log_loop(self) -> None:
        while True:
            await asyncio.sleep(0.2)
            self._read_log()

    def _read_log(self) -> None:
        try:
            size = os.path.getsize(self.log_path)
        except OSError:
            return
        if self._log_was_cut(size):
            return
        if size < self._log_offset:
            self._log_offset = 0
            self._partial = b""
        if size - self._log_offset > MAX_BACKLOG:
            skipped = size - READ_CHUNK - self._log_offset
            self._log_offset = size - READ_CHUNK
            self._partial = b""
            self._tail.append(f"[... {skipped} bytes of log skipped ...]")
        try:
            with open(self.log_path, "rb") as handle:
                handle.seek(self._log_offset)
                data = handle.read(READ_CHUNK)
        except OSError:
            return
        self._log_offset += len(data)
        chunks = (self._partial + data).split(b"\n")
        self._partial = chunks.pop()[-MAX_LINE_CHARS:]
        for raw in chunks:
            for piece in raw.split(b"\r"):
                line = piece.decode("utf-8", "replace").rstrip()[:MAX_LINE_CHARS]
                if line:
                    self._on_line(line)

    def _log_was_cut(self, size: int) -> bool:
        """The relay cuts a log past server.log_max_bytes (log_relay.BoundedLog), rewriting the
        cut line at the head's end each time: a new cut number there means what follows it is
        new, so reading goes on from the end (a flood's lines are not all read anyway)."""
        head = head_bytes(self.plan.server.log_max_bytes)
        if size <= head:
            return False
        try:
            with open(self.log_path, "rb") as handle:
                handle.seek(head)
                found = handle.read(len(MARKER_PREFIX) + 6)
        except OSError:
            return False
        if not found.startswith(MARKER_PREFIX) or found[len(MARKER_PREFIX):] == self._cut_seen:
            return False
        self._cut_seen = found[len(MARKER_PREFIX):]
        self._log_offset = size
        self._partial = b""
        self._tail.append("[... server log cut (server.log_max_bytes); reading on from its end ...]")
        return True

    def _on_line(self, line: str) -> None:
        self._tail.append(line)
        if not self._ready and self._fatal is None and _FATAL.search(line):
            self._fatal = line.strip()[:300]
        wanted = bool(_PROGRESS.search(line)) or bool(_NOTEWORTHY.search(line)) or not self._ready
        if wanted and self._take_log_budget():
            self._emit(ServerLog(arm=self.arm.name, line=line))

    def _take_log_budget(self) -> bool:
        now = time.monotonic()
        self._log_budget = min(LOG_EVENTS_PER_S,
                               self._log_budget + (now - self._log_budget_t) * LOG_EVENTS_PER_S)
        self._log_budget_t = now
        if self._log_budget >= 1.0:
            self._log_budget -= 1.0
            return True
        return False

    async def _track_descendants_loop(self) -> None:
        while True:
            await asyncio.to_thread(self._refresh_descendants)
            await asyncio.sleep(1.0)

    def _refresh_descendants(self) -> None:
        if self._popen is None or self._record is None:
            return
        fresh = {ref.pid: ref for ref in descendants(self._popen.pid)}
        if not set(fresh) - set(self._refs):
            return
        self._refs.update(fresh)
        self._record.descendants = [RecordedProc(pid=r.pid, create_time=r.create_time)
                                    for r in self._refs.values()]
        write_record(self.run_dir, self._record)
