"""Server kinds: what differs between serving engines, behind one base class (base.py).
`[server] kind` in a plan picks one by name; `vllm` is the default and, for now, the only one.
To add a kind: subclass `ServerKind` in a module here and list it in `KINDS`."""

from __future__ import annotations

from dspark_tui.model.kinds.base import (
    MetricsDialect,
    Readiness,
    ServerKind,
    SpeculativeSettings,
)
from dspark_tui.model.kinds.vllm import VllmKind

DEFAULT_KIND = "vllm"
KINDS: dict[str, ServerKind] = {kind.name: kind for kind in (VllmKind(),)}


def server_kind(name: str) -> ServerKind:
    """The kind of that name; KeyError (naming the known ones) for any other."""
    try:
        return KINDS[name]
    except KeyError:
        raise KeyError(f"unknown server kind {name!r} (known: {', '.join(sorted(KINDS))})") from None


__all__ = [
    "DEFAULT_KIND",
    "KINDS",
    "MetricsDialect",
    "Readiness",
    "ServerKind",
    "SpeculativeSettings",
    "VllmKind",
    "server_kind",
]
