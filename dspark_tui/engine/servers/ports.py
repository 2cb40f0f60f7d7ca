"""Is a TCP port free, and if not, who holds it: the first thing a user needs to fix a clash."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import socket
import time

import psutil

from dspark_tui.model import Plan, UserError


def _not_local(host: str, exc: OSError) -> UserError:
    return UserError(f"server.host {host!r} is not an address of this machine ({exc})")


def port_is_free(host: str, port: int) -> bool:
    """True when a server could bind (host, port) now; SO_REUSEADDR as servers set it, so
    sockets in TIME_WAIT after a stop do not count as taken."""
    bind_host = "" if host in ("0.0.0.0", "::", "") else host
    family = socket.AF_INET6 if ":" in bind_host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((bind_host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise _not_local(host, exc) from None
    return True


def port_holder(port: int) -> str | None:
    """`pid 1234 (python -m http.server)` for the process listening on the port, if visible."""
    with contextlib.suppress(psutil.Error, OSError):
        for conn in psutil.net_connections(kind="inet"):
            if conn.laddr and conn.laddr.port == port and conn.status == psutil.CONN_LISTEN:
                if conn.pid is None:
                    return "a process of another user"
                try:
                    cmd = " ".join(psutil.Process(conn.pid).cmdline())[:100]
                except psutil.Error:
                    cmd = "?"
                return f"pid {conn.pid} ({cmd})"
    return None


def describe_taken_port(host: str, port: int) -> str:
    holder = port_holder(port)
    who = f" by {holder}" if holder else ""
    return (f"port {port} on {host} is already in use{who}; stop that process or set "
            f"server.port in the plan")


async def wait_port_free(host: str, port: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if port_is_free(host, port):
            return True
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.1)


def with_concrete_port(plan: Plan) -> Plan:
    """`server.port = 0` means any free port: pick one now, so the run's snapshot records it,
    and that it was picked (`port_picked`: a serve command to copy should not repeat it)."""
    if plan.server.port != 0:
        return plan
    host = plan.server.host
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host if host not in ("0.0.0.0", "") else "", 0))
        except OSError as exc:
            raise _not_local(host, exc) from None
        port = int(sock.getsockname()[1])
    server = plan.server.model_copy(update={"port": port, "port_picked": True})
    return plan.model_copy(update={"server": server})
