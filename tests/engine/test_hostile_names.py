"""Names are shown, never obeyed. A plan refuses control characters in a name (one line naming
the key); a run whose files say otherwise (crafted or shared: ESC[2J clears a screen, OSC 52
writes the clipboard) is shown with them escaped: no ESC byte in any output of `run`, `attach`,
`runs` or `report`, no raw HTML and no split table row in the report, valid XML in the charts."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from dspark_tui.model import PlanError, parse_plan, shown
from tests.cli import run_cli, run_cli_here
from tests.engine.helpers import sim_plan_text

HTML_ARM = "st=3 <img src=x onerror=alert(1)>"
PIPE_ARM = "st=5|x"
CLEAR = "\x1b[2J"
CLIPBOARD = "\x1b]52;c;aGVsbG8=\x07"
HOSTILE_ARM = f"st=5{CLEAR}{CLIPBOARD}|x"


@pytest.mark.parametrize("name", [f"st=3{CLEAR}", f"st=3{CLIPBOARD}", "st=3\nx", "st\u202e3", "st\x003"])
def test_a_plan_refuses_control_characters_in_a_name_in_one_line(name: str):
    text = sim_plan_text(8000).replace('name = "st=3"', f"name = {json.dumps(name)}")
    with pytest.raises(PlanError) as caught:
        parse_plan(text, "plan.toml")
    said = str(caught.value)
    assert "\n" not in said and "\x1b" not in said and "\x00" not in said
    assert re.fullmatch(r'plan\.toml:13: arms\[".*"\]\.name: control characters are not allowed '
                        r"\(found \\(x1b|x0a|u202e|x00)\)", said), said


def test_shown_escapes_each_medium():
    assert shown.plain(HOSTILE_ARM) == "st=5\\x1b[2J\\x1b]52;c;aGVsbG8=\\x07|x"
    assert shown.md_name(HTML_ARM) == "st=3 ‹img src=x onerror=alert(1)›"
    assert shown.md_name("a|b `c` [d](e)") == "a∣b ˋcˋ ［d］(e)"
    assert shown.text("a\tb\nc\x1b") == "a\tb\nc\\x1b"
    assert shown.md_name("st=3") == "st=3"  # what this tool writes is never changed


def _table_rows_have_their_columns(markdown: str) -> None:
    """Every row of every table has as many cells as its header (a `|` in a name would add one)."""
    for block in re.split(r"\n\s*\n", markdown):
        rows = [line for line in block.splitlines() if line.startswith("|")]
        if len(rows) < 2:
            continue
        widths = {len(re.split(r"(?<!\\)\|", row.strip())) for row in rows}
        assert len(widths) == 1, block


@pytest.mark.slow
@pytest.mark.timeout(400)  # seven commands, ~10 s each on a loaded box
def test_hostile_names_reach_no_terminal_report_or_chart_raw(tmp_path: Path, port: int):
    plan = tmp_path / "plan.toml"
    text = sim_plan_text(port, warmup=0).replace('name = "st=3"', f"name = {json.dumps(HTML_ARM)}")
    plan.write_text(text.replace('name = "st=5"', f"name = {json.dumps(PIPE_ARM)}"))
    results = tmp_path / "results"
    outputs = {"run": run_cli("run", str(plan), "--headless", "--results", str(results))}
    assert outputs["run"].returncode == 0, outputs["run"].stdout + outputs["run"].stderr
    assert "Total tok/s by arm" in outputs["run"].stdout  # the end-of-run comparison table
    (run_dir,) = results.iterdir()

    # Then the run's files are crafted: the second arm is named with ESC sequences everywhere.
    escaped = json.dumps(HOSTILE_ARM)[1:-1].encode()
    for path in [run_dir / "run.json", run_dir / "events.jsonl", *run_dir.glob("cells/*/*.json")]:
        path.write_bytes(path.read_bytes().replace(json.dumps(PIPE_ARM)[1:-1].encode(), escaped))
    assert escaped in (run_dir / "run.json").read_bytes()
    (run_dir / "report.md").unlink()

    # The commands that only read it run in this process (their stdout and stderr captured at
    # the file descriptors, tests/cli.run_cli_here): four Python starts fewer.

    outputs["report"] = run_cli_here("report", str(run_dir), env={"DSPARK_CHARTS": "true"})  # drawn here
    outputs["report --stdout"] = run_cli_here("report", str(run_dir), "--stdout", "--lang", "en")
    outputs["report --json"] = run_cli_here("report", str(run_dir), "--json")
    outputs["runs"] = run_cli_here("runs", "--results", str(results))
    outputs["attach"] = run_cli_here("attach", str(run_dir), "--headless")
    for what, done in outputs.items():
        assert done.returncode == 0, (what, done.stderr)
        for stream in (done.stdout, done.stderr):
            assert "\x1b" not in stream and "\x07" not in stream and "Traceback" not in stream, what
    assert "Total tok/s by arm" in outputs["attach"].stdout  # the replayed end-of-run table
    assert "st=5\\x1b[2J" in outputs["attach"].stdout  # shown, escaped

    for report in ((run_dir / "report.md").read_text(encoding="utf-8"),
                   outputs["report --stdout"].stdout):
        assert "<img" not in report and "‹img" in report
        assert "st=5\\x1b［2J" in report  # the name, visible
        _table_rows_have_their_columns(report)
    charts = sorted((run_dir / "charts").glob("*.svg"))
    assert charts
    for chart in charts:
        data = chart.read_bytes()
        assert b"\x1b" not in data and b"<img" not in data
        ET.fromstring(data)  # well-formed XML
