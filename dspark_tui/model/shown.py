"""A name read from a file, shown: never a terminal's control sequence, a markup tag, raw HTML
or a table's column break.

Arm and scenario names in a plan may not hold control characters (model/plan.py refuses them),
but a run directory is data someone else may have made: its run.json, cells and events can name
an arm `\\x1b[2J` (clears the screen), `\\x1b]52;c;…\\x07` (writes the clipboard),
`<img src=x onerror=…>` (runs in a Markdown viewer) or `a|b` (splits a table). Each medium
escapes what it would act on:

- `plain` — a terminal line or SVG/XML text: control characters (C0, DEL, C1, bidi and line
  separators) as visible `\\x1b` / `\\u202e` escapes;
- `text` — a whole multi-line output (a report): the same, keeping newlines and tabs;
- `md_name` — a name inside Markdown, in a code span or not, in a table or not: `plain`, and
  the characters Markdown acts on (`|`, `<`, `>`, backquote, `[`, `]`) as look-alikes that it
  does not;
- Rich and Textual markup: `plain`, then that library's own `escape` (in the layer that imports
  it: engine/start/printer.py, tui/).
"""

from __future__ import annotations

import re

# C0 but tab and newline are handled by the callers' choice; DEL and C1; the invisible
# direction and line controls a terminal or viewer acts on.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_CONTROL_BUT_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
                                "\u202a-\u202e\u2066-\u2069]")
_MARKDOWN = str.maketrans({"|": "∣", "<": "‹", ">": "›", "`": "ˋ", "[": "［", "]": "］"})


def has_control(value: str) -> bool:
    return _CONTROL.search(value) is not None


def first_control(value: str) -> str | None:
    """The first control character of `value`, as an escape (`\\x1b`), or None."""
    found = _CONTROL.search(value)
    return _escape(found) if found else None


def plain(value: object) -> str:
    return _CONTROL.sub(_escape, str(value))


def text(value: str) -> str:
    return _CONTROL_BUT_LINES.sub(_escape, value)


def md_name(value: object) -> str:
    return plain(value).translate(_MARKDOWN)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"
