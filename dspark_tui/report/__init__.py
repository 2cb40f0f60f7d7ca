"""Turning a result directory into analysis frames and the Markdown report (zh or en).

Public API (the TUI, the engine and the CLI call these):
`render_report`, `comparison_rows` (the live A/B table), `render_comparison` and
`run_comparison_frame` (two runs), `analyse` (every frame the report uses).

The names load on first use (PEP 562): the app imports `report.live` for its table at start-up,
and that must not pull in pandas with the analysis frames.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dspark_tui.report.analysis import RunAnalysis, analyse
    from dspark_tui.report.compare import render_comparison, run_comparison_frame
    from dspark_tui.report.live import ArmFigures, ComparisonRow, comparison_rows
    from dspark_tui.report.markdown import render_report

_WHERE = {
    "RunAnalysis": "analysis",
    "analyse": "analysis",
    "render_comparison": "compare",
    "run_comparison_frame": "compare",
    "ArmFigures": "live",
    "ComparisonRow": "live",
    "comparison_rows": "live",
    "render_report": "markdown",
}

__all__ = [  # the same names as _WHERE
    "ArmFigures",
    "ComparisonRow",
    "RunAnalysis",
    "analyse",
    "comparison_rows",
    "render_comparison",
    "render_report",
    "run_comparison_frame",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
