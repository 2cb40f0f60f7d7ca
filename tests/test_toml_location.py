"""Finding the line a plan error points to: tables, arrays of tables, inline tables, missing keys."""

from __future__ import annotations

import pytest

from dspark_tui.model.toml_location import line_of

TEXT = """\
name = "p"
model = "m"

[server]
command = ["serve", "{model}"]
port = 8000

[server.env]
HF_HOME = "/x"

[[arms]]
name = "a"
vars = { spec_tokens = 3 }

[[arms]]
name = "b"
vars = { spec_tokens = 5, extra = 1 }

[[scenarios]]
name = "s"
concurrencies = [1, 8]
num_prompts = { per_concurrency = 4, min = 8 }
"""


@pytest.mark.parametrize(
    ("loc", "line"),
    [
        (("model",), 2),
        (("server", "port"), 6),
        (("server", "timeout_s"), 4),  # not written: its table's header stands for it
        (("arms", 1, "name"), 16),
        (("arms", 1, "vars", "extra"), 17),  # inside an inline table
        (("arms", 0, "description"), 11),
        (("arms", 1), 15),
        (("scenarios", 0, "concurrencies", 1), 21),  # an item of an inline array
        (("scenarios", 0, "num_prompts", "NumPromptsRule", "min"), 22),  # pydantic's union branch
        (("scenarios", 3, "name"), None),  # no fourth [[scenarios]]: no line rather than a wrong one
        (("bench", "driver"), None),
        (("missing",), None),
    ],
)
def test_line_of(loc: tuple[object, ...], line: int | None):
    assert line_of(TEXT, loc) == line
