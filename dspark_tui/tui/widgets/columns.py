"""Sideways scrolling of a DataTable by whole columns, so that a number is never shown cut."""

from __future__ import annotations

from typing import Any

from textual.widgets import DataTable


def step_columns(table: DataTable[Any], direction: int) -> None:
    """Scroll `table` one whole unpinned column right (direction > 0) or left."""
    edges = [0]
    for column in list(table.columns.values())[table.fixed_columns:]:
        edges.append(edges[-1] + column.get_render_width(table))
    now = round(table.scroll_x)
    if direction > 0:
        target = next((edge for edge in edges if edge > now), now)
    else:
        target = max((edge for edge in edges if edge < now), default=0)
    table.scroll_to(x=min(target, table.max_scroll_x), animate=False)
