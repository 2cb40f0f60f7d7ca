"""Turning a result directory into analysis frames and the Markdown report (zh or en).

Public API (the TUI, the engine and the CLI call these):
`render_report`, `comparison_rows` (the live A/B table), `render_comparison` and
`run_comparison_frame` (two runs), `analyse` (every frame the report uses).
"""

from dspark_tui.report.analysis import RunAnalysis, analyse
from dspark_tui.report.compare import render_comparison, run_comparison_frame
from dspark_tui.report.live import ArmFigures, ComparisonRow, comparison_rows
from dspark_tui.report.markdown import render_report

__all__ = [
    "ArmFigures",
    "ComparisonRow",
    "RunAnalysis",
    "analyse",
    "comparison_rows",
    "render_comparison",
    "render_report",
    "run_comparison_frame",
]
