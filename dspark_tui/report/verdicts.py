"""Verdicts from a run's measurements: the one analysis that the runner (adaptive rounds), the
live table, the printer, History and the report all call.

Interface stub, filled in by the statistics work: `cells_to_remeasure` is what the runner asks
after each look.
"""

from __future__ import annotations

from collections.abc import Sequence

from dspark_tui.model import CellResult, Plan


def cells_to_remeasure(measurements: Sequence[CellResult], plan: Plan, look: int) -> list[tuple[str, int]]:
    """(scenario, concurrency) of the cells whose verdict is still unsure (or that are outliers
    against their neighbours) after `look` (1 = after the planned rounds, 2 = after the first
    adaptive round, ...). Every arm measures each again in one more session."""
    return []
