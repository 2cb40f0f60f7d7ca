"""events.jsonl rounds the live numbers (model/events.py file_json) to the decimals the screens
print them with: a watcher reading the file prints the digits an in-process one does."""

from __future__ import annotations

import random

from dspark_tui.model import CellKey
from dspark_tui.model import events as ev
from dspark_tui.tui import format as fmt
from dspark_tui.tui.widgets.cell_panel import _latest

KEY = CellKey(arm="st=3", scenario="chat", concurrency=4)
PANEL_DIGITS = {"output_tok_s": 1, "ttft_p50_ms": 1, "ttft_p99_ms": 1, "tpot_p50_ms": 2,
                "tpot_p99_ms": 2}  # as cell_panel.py prints them
SPARKLINES = ("kv_usage", "running", "waiting", "acceptance_length", "gpu_util",
              "gpu_memory_mib", "gpu_power_w")


def _values(rng: random.Random) -> list[float]:
    return [rng.uniform(0, 10 ** rng.randint(-2, 6)) for _ in range(2000)]


def test_progress_read_from_the_file_prints_as_the_live_numbers():
    rng = random.Random(7)
    for value in _values(rng):
        event = ev.CellProgress(key=KEY, completed=1, total=2, **dict.fromkeys(PANEL_DIGITS, value))
        read = ev.parse_event(ev.file_json(event))
        for name, digits in PANEL_DIGITS.items():
            assert fmt.number(getattr(read, name), digits) == fmt.number(value, digits), name
        assert _latest("tok_s", read.output_tok_s) == _latest("tok_s", value)  # its sparkline


def test_samples_read_from_the_file_print_as_the_live_numbers():
    rng = random.Random(11)
    for value in _values(rng):
        fraction = value % 1.0
        fields = {name: fraction if name == "kv_usage" else value for name in SPARKLINES}
        read = ev.parse_event(ev.file_json(ev.MetricsSample(arm="st=3", **fields)))
        for name in SPARKLINES:
            assert _latest(name, getattr(read, name)) == _latest(name, fields[name]), name
