"""Which server a session measures: only the one it started (issue 25).

Readiness used to ask only that something answers at host:port. While a server loads (the
port closed, for minutes with vLLM) anything that binds the port answers, and was measured. A
session is now ready only when the server that answers proves to be its own:

- **a per-session name**: a vLLM-like serve command (`vllm serve`, vLLM's OpenAI api_server
  module, the simulator's `serve`) gets `--served-model-name dspark-session-<token>` first
  among its served names (the names it gave, else the plan's, still follow, so `/tokenize` and
  users' own requests keep working). The server must list it on `/v1/models` before it is
  ready, and every request of the session (warmup, greedy check, measurements) names it, so a
  request that reaches another server is refused by it, never measured.
- **the socket** (a local launch): the listening socket on the port belongs to the process
  tree the session started (psutil, the tree's own connections).

A container's port is held by its runtime's proxy (docker-proxy, rootlessport), outside the
tree: such a command proves itself by name only, which `server.session_name = true` asks for
(the name goes at the end of the command, where `docker run IMAGE ARGS…` passes it on).

A server on the port that fails either proof is foreign: the start fails in one line naming it
(pid and command where visible). What proved the session is its `identity`, recorded in the
session's `servers/*.json` and in each measurement's provenance (`server_identity`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable

import httpx
import psutil

from dspark_tui.engine.servers.ports import port_holder

IDENTITY_PREFIX = "dspark-session-"
SERVED_NAME_FLAG = "--served-model-name"
_SERVE_MODULES = {"vllm.entrypoints.openai.api_server"}


def session_model_name(token: str) -> str:
    """The name a session's server serves under: unique to the session, DNS- and label-safe."""
    return IDENTITY_PREFIX + token[:16]


def takes_served_model_name(argv: list[str]) -> bool:
    """Whether the command is a server known to take `--served-model-name NAME…` (vLLM's
    `serve` and api_server, the simulator's `serve`). A wrapper (`sh -c "…"`, a script) is
    left as it is: only the socket proves such a server."""
    if not argv:
        return False
    program = os.path.basename(argv[0])
    if program == "vllm":
        return argv[1:2] == ["serve"]
    if program == "dspark-tui":
        return argv[1:3] == ["sim", "serve"]
    if "-m" in argv[:-1]:
        at = argv.index("-m")
        module, rest = argv[at + 1], argv[at + 2:at + 3]
        if module in _SERVE_MODULES:
            return True
        if module in ("vllm", "vllm.entrypoints.cli.main", "dspark_tui.sim") and rest == ["serve"]:
            return True
        if module == "dspark_tui" and argv[at + 2:at + 4] == ["sim", "serve"]:
            return True
    return False


def with_session_name(argv: list[str], name: str, fallback: str) -> list[str]:
    """`argv` serving `name` first: the command's own `--served-model-name` values (else
    `fallback`, the plan's served model name) follow it in one flag at the end."""
    kept: list[str] = []
    given: list[str] = []
    index = 0
    while index < len(argv):
        arg = argv[index]
        index += 1
        if arg == SERVED_NAME_FLAG:
            while index < len(argv) and not argv[index].startswith("-"):
                given.append(argv[index])
                index += 1
        elif arg.startswith(SERVED_NAME_FLAG + "="):
            given.extend(arg.split("=", 1)[1].split())
        else:
            kept.append(arg)
    return [*kept, SERVED_NAME_FLAG, *dict.fromkeys([name, *(given or [fallback])])]


def listening_pids(pids: Iterable[int], port: int) -> list[int]:
    """Those of `pids` with a socket listening on `port` (their own connections: no root)."""
    found = []
    for pid in pids:
        with contextlib.suppress(psutil.Error, OSError):
            for conn in psutil.Process(pid).net_connections(kind="inet"):
                if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port:
                    found.append(pid)
                    break
    return found


def foreign_listener(host: str, port: int, tree: Iterable[int], own_pid: int | None) -> str | None:
    """None when a process of the session's tree listens on the port; else the one line that
    fails the start, naming who holds it (pid and command where visible)."""
    if listening_pids(tree, port):
        return None
    holder = port_holder(port) or "a process this user cannot see"
    return (f"port {port} on {host} answers, but not from this session's server (pid {own_pid}): "
            f"it is held by {holder}; stop it or set server.port (a server in a container, "
            "behind its runtime's proxy, proves itself by name: server.session_name = true)")


async def served_names(client: httpx.AsyncClient) -> list[str] | None:
    """The model ids `/v1/models` lists; None when it does not answer them (yet)."""
    try:
        response = await client.get("/v1/models")
        if response.status_code != 200:
            return None
        data = response.json().get("data")
        return [str(card.get("id")) for card in data if isinstance(card, dict)]
    except (httpx.HTTPError, ValueError, AttributeError, TypeError):
        return None


def foreign_names(base_url: str, name: str, listed: list[str]) -> str:
    """The one line for a server that answers without the session's name."""
    shown = ", ".join(listed[:3]) + (" …" if len(listed) > 3 else "") if listed else "nothing"
    return (f"the server at {base_url} is not this session's: /v1/models lists {shown}, not "
            f"{name}; another server holds the port")
