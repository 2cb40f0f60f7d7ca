"""Plain data shared by every layer: the plan, cells and their results, events.

The names below are loaded when first asked for (PEP 562), not when the package is: a small
process that needs one module of model/ (the log relay needs only secrets.py) would otherwise
build every pydantic model first — half a second of CPU for each server session's relay.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dspark_tui.model.cell import (
        CellKey,
        CellResult,
        CellStatus,
        ClientMetrics,
        Provenance,
        ServerSummary,
    )
    from dspark_tui.model.errors import UserError
    from dspark_tui.model.naming import safe_name
    from dspark_tui.model.plan import (
        Arm,
        BenchConfig,
        CellSpec,
        KubernetesOptions,
        NumPromptsRule,
        Plan,
        PlanError,
        Scenario,
        ServerConfig,
        SessionNoisePrior,
        SlurmOptions,
        load_plan,
        parse_plan,
    )

_HOMES = {
    "cell": ("CellKey", "CellResult", "CellStatus", "ClientMetrics", "Provenance", "ServerSummary"),
    "errors": ("UserError",),
    "naming": ("safe_name",),
    "plan": ("Arm", "BenchConfig", "CellSpec", "KubernetesOptions", "NumPromptsRule", "Plan",
             "PlanError", "Scenario", "ServerConfig", "SessionNoisePrior", "SlurmOptions",
             "load_plan", "parse_plan"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "Arm", "BenchConfig", "CellKey", "CellResult", "CellSpec", "CellStatus", "ClientMetrics",
    "KubernetesOptions", "NumPromptsRule", "Plan", "PlanError", "Provenance", "Scenario",
    "ServerConfig", "ServerSummary", "SessionNoisePrior", "SlurmOptions", "UserError", "load_plan",
    "parse_plan", "safe_name",
]


def __getattr__(name: str) -> Any:
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # asked once
    return value
