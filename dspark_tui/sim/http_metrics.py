"""`http_requests_total`, as real vLLM serves it: its API server counts every request but its
probes by handler, method and status class (prometheus-fastapi-instrumentator), and a scraper
or dashboard pointed at the simulator finds the same family (docs/vllm-cpu.md)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Asgi = Callable[[Scope, Receive, Send], Awaitable[None]]

# vLLM's excluded handlers: the probes and the scrape itself are not counted.
UNCOUNTED = frozenset({"/metrics", "/health", "/load", "/ping", "/version", "/server_info"})


def http_requests_counter(registry: CollectorRegistry) -> Counter:
    return Counter("http_requests", "Total number of requests by method, status and handler.",
                   ["handler", "method", "status"], registry=registry)


class CountRequests:
    """Pure ASGI middleware: one increment a request, when its response starts (or fails)."""

    def __init__(self, app: Asgi, counter: Counter, handlers: frozenset[str]) -> None:
        self.app, self.counter, self.handlers = app, counter, handlers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path in UNCOUNTED:
            await self.app(scope, receive, send)
            return
        status = "5xx"

        async def send_counting(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = f"{message['status'] // 100}xx"
            await send(message)

        try:
            await self.app(scope, receive, send_counting)
        finally:
            handler = path if path in self.handlers else "none"
            self.counter.labels(handler=handler, method=scope["method"], status=status).inc()
