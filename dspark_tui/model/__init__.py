"""Plain data shared by every layer: the plan, cells and their results, events."""

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
from dspark_tui.model.statistics import StatisticsSettings, TieBand

__all__ = [
    "Arm",
    "BenchConfig",
    "CellKey",
    "CellResult",
    "CellSpec",
    "CellStatus",
    "ClientMetrics",
    "KubernetesOptions",
    "NumPromptsRule",
    "Plan",
    "PlanError",
    "Provenance",
    "Scenario",
    "ServerConfig",
    "ServerSummary",
    "SessionNoisePrior",
    "SlurmOptions",
    "StatisticsSettings",
    "TieBand",
    "UserError",
    "load_plan",
    "parse_plan",
    "safe_name",
]
