"""A report's Markdown cut into prose and tables, so prose wraps to the pane and a wide table
scrolls sideways with its label columns pinned (a Markdown widget does neither at 80 columns)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from markdown_it.token import Token
from rich.text import Text

# The label columns a table keeps in view while its numbers scroll: at most this many, and at
# most this many characters together, so that numbers still fit beside them at 80 columns.
MAX_PINNED = 3
MAX_PINNED_WIDTH = 36


@dataclass
class Table:
    header: list[Text]
    rows: list[list[Text]]
    right: list[bool]  # right-aligned columns (numbers), as the Markdown says
    pinned: int = 1


@dataclass
class Block:
    text: str = ""  # Markdown prose, when this block is not a table
    table: Table | None = None


@dataclass
class _Cells:
    texts: list[Text] = field(default_factory=list)
    right: list[bool] = field(default_factory=list)


def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table")


def report_blocks(markdown: str) -> list[Block]:
    """Prose and tables in document order; a table's lines become a Table, the rest stays text."""
    lines = markdown.splitlines()
    tokens = _parser().parse(markdown)
    blocks: list[Block] = []
    start = 0
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.type == "table_open" and token.map is not None:
            first, last = token.map
            prose = "\n".join(lines[start:first]).strip("\n")
            if prose.strip():
                blocks.append(Block(text=prose))
            end = next(i for i in range(index, len(tokens)) if tokens[i].type == "table_close")
            blocks.append(Block(table=_table(tokens[index:end + 1])))
            start, index = last, end + 1
            continue
        index += 1
    rest = "\n".join(lines[start:]).strip("\n")
    if rest.strip():
        blocks.append(Block(text=rest))
    return blocks


def _table(tokens: list[Token]) -> Table:
    rows: list[_Cells] = []
    for token, following in itertools.pairwise(tokens):
        if token.type == "tr_open":
            rows.append(_Cells())
        elif token.type in ("th_open", "td_open") and rows:
            rows[-1].right.append("right" in str(token.attrs.get("style", "")))
            rows[-1].texts.append(_inline(following) if following.type == "inline" else Text(""))
    header, body = (rows[0], rows[1:]) if rows else (_Cells(), [])
    width = len(header.texts)
    cells = [(row.texts + [Text("")] * width)[:width] for row in body]
    return Table(header.texts, cells, header.right, _pinned(header.texts, cells))


def _inline(token: Token) -> Text:
    """A cell's inline Markdown as styled text: **bold**, `code`, the words of a link."""
    text = Text()
    bold = 0
    for child in token.children or []:
        if child.type == "strong_open":
            bold += 1
        elif child.type == "strong_close":
            bold -= 1
        elif child.type == "code_inline" or child.type in ("text", "html_inline"):
            text.append(child.content, style="bold" if bold else "")
        elif child.type in ("softbreak", "hardbreak"):
            text.append(" ")
    return text


def _pinned(header: list[Text], rows: list[list[Text]]) -> int:
    """The first column, then the following ones that are labels too (no decimals: a
    concurrency, an arm), while they stay narrow."""
    def width(column: int) -> int:
        return max(row[column].cell_len for row in [header, *rows])

    pinned, used = 1, width(0) if header else 0
    for column in range(1, min(MAX_PINNED, len(header))):
        values = [row[column].plain for row in rows]
        if any("." in value or "%" in value for value in values):
            break
        if used + width(column) > MAX_PINNED_WIDTH:
            break
        used += width(column)
        pinned += 1
    return pinned
