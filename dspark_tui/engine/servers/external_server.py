"""A server that something else runs: an arm with `url = "http://host:port"`.

It keeps `ServerProcess`'s contract as a session uses it — `start`, `stop`, `base_url`,
`probe_health`, `death_reason` — but starting is only a check that it serves (/health, one tiny
completion) and stopping does nothing: the tool never starts, stops or signals such a server,
and writes no server.json for it, so a resume has nothing to clean up.

`describe_server` reads what the server says about itself (/version, the labels of every
`*_info` gauge on /metrics, such as vLLM's `vllm:cache_config_info`) for run.json.
"""

from __future__ import annotations

import asyncio
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from dspark_tui.engine.servers.auth import bearer_headers
from dspark_tui.engine.servers.server import ServerError
from dspark_tui.engine.servers.tls import verifying_context
from dspark_tui.model import Arm, Plan
from dspark_tui.model.events import Event, ServerState, ServerStateChanged
from dspark_tui.model.secrets import mask_value

# A server someone else runs should already serve; this long covers a brief restart of theirs.
READY_TIMEOUT_S = 60.0
PROBE_TIMEOUT_S = 5.0
MAX_INFO_LABELS = 64  # labels kept per *_info family: run.json stays small whatever a page holds


class ExternalServer:
    """One arm's endpoint; one object per session, as `ServerProcess`."""

    pid: int | None = None  # no process of ours

    def __init__(self, plan: Plan, arm: Arm, *, emit: Callable[[Event], None]) -> None:
        assert arm.url is not None, "an ExternalServer needs an arm with a url"
        self.plan = plan
        self.arm = arm
        self.base_url = arm.url
        parts = urllib.parse.urlsplit(arm.url)
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self._emit = emit
        self.state: ServerState = "stopped"
        self.info: dict[str, Any] | None = None
        # As ServerProcess's: the name requests give, and what the measurements record of who
        # served them (no proof is possible for a server that something else runs).
        self.served_model = plan.served_model_name
        self.identity: str | None = f"external server {self.base_url} (not started by dspark-tui)"

    async def __aenter__(self) -> ExternalServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def start(self) -> None:
        """Wait until it serves (at most READY_TIMEOUT_S, within startup_timeout_s), then read
        what it says about itself; ServerError when it does not serve."""
        self._set_state("starting", f"external server {self.base_url} (not started by dspark-tui)")
        timeout = min(READY_TIMEOUT_S, self.plan.server.startup_timeout_s)
        deadline = time.monotonic() + timeout
        readiness = self.plan.kind.readiness
        async with self._client(PROBE_TIMEOUT_S) as client:
            while not (await _ok(client.get(readiness.health_path)) and await _ok(client.post(
                    readiness.completion_path,
                    json=readiness.completion_body(self.plan.served_model_name)))):
                if time.monotonic() >= deadline:
                    self._set_state("failed", "not serving")
                    raise ServerError(f"external server {self.base_url} did not serve within "
                                      f"{timeout:g}s (/health and one completion)")
                await asyncio.sleep(0.5)
            self.info = await describe_server(client)
        self._set_state("ready", f"external server {self.base_url}")

    async def stop(self, *, quiet: bool = False) -> None:
        """Nothing to stop: the server is someone else's and keeps running."""
        if self.state != "stopped" and not quiet:
            self._set_state("stopped", "external server left running (not ours to stop)")
        self.state = "stopped"

    async def probe_health(self, timeout: float = 3.0) -> bool:
        async with self._client(timeout) as client:
            return await _ok(client.get(self.plan.kind.readiness.health_path))

    def death_reason(self) -> str | None:
        """No process to watch: a server that goes away shows as failed /health probes."""
        return None

    def exit_code(self) -> int | None:
        return None

    def tail(self) -> list[str]:
        return []  # its log is on its own machine

    def _client(self, timeout: float) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.base_url, timeout=timeout, verify=verifying_context(),
                                 headers=bearer_headers(self.plan.bench.api_key))

    def _set_state(self, state: ServerState, message: str) -> None:
        self.state = state
        self._emit(ServerStateChanged(arm=self.arm.name, state=state, message=message, pid=None))


async def _ok(request: Any) -> bool:
    try:
        response = await request
    except httpx.HTTPError:
        return False
    return bool(response.status_code == 200)


async def describe_server(client: httpx.AsyncClient) -> dict[str, Any]:
    """{"version": …, "info": {family: {label: value}}} as far as the server tells; a page it
    does not serve is left out, never an error (it is evidence, not a condition)."""
    described: dict[str, Any] = {}
    try:
        response = await client.get("/version")
        if response.status_code == 200:
            version = response.json().get("version")
            if isinstance(version, str):
                described["version"] = mask_value(version)[:200]
    except (httpx.HTTPError, ValueError, AttributeError):
        pass
    try:
        response = await client.get("/metrics")
        if response.status_code == 200:
            described["info"] = info_labels(response.text)
    except httpx.HTTPError:
        pass
    return described


def info_labels(page: str) -> dict[str, dict[str, str]]:
    """The labels of every `*_info` gauge on a Prometheus page, secret-looking values masked.
    Only the `_info` sample lines are parsed: a vLLM page has thousands of others."""
    lines = [line for line in page.splitlines()
             if "_info" in line.split("{", 1)[0].split(" ", 1)[0] and not line.startswith("#")]
    found: dict[str, dict[str, str]] = {}
    try:
        families = list(text_string_to_metric_families("\n".join(lines) + "\n"))
    except ValueError:
        return found
    for family in families:
        for sample in family.samples:
            if not sample.name.endswith("_info"):
                continue
            labels = found.setdefault(sample.name, {})
            for key, value in list(sample.labels.items())[:MAX_INFO_LABELS]:
                labels[key] = mask_value(f"{key}={value}").split("=", 1)[1][:200]
    return found
