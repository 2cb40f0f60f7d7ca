"""Reading tables back out of a Markdown report, to compare them with the seed's."""

from __future__ import annotations

from collections.abc import Callable


def table_after(text: str, is_anchor: Callable[[str], bool]) -> list[str]:
    """The lines of the first table that follows the first line matching `is_anchor`."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if is_anchor(line)), None)
    assert start is not None, "anchor line not found"
    table: list[str] = []
    for line in lines[start + 1 :]:
        if line.startswith("|"):
            table.append(line)
        elif table:
            break
    assert table, "no table after the anchor"
    return table


def cells_of(row: str) -> list[str]:
    return [part.strip() for part in row.strip().strip("|").split("|")]


def section(text: str, heading: str) -> str:
    """From the line starting with `heading` up to the next heading of the same level."""
    level = heading.split(" ")[0]
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].startswith(level + " ")), len(lines)
    )
    return "\n".join(lines[start:end])
