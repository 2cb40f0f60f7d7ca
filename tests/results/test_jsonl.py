"""Reading an appended JSONL file in complete lines: what events.jsonl and control.jsonl readers share."""

from __future__ import annotations

from pathlib import Path

from dspark_tui.engine.rundir.control import ControlReader
from dspark_tui.results.jsonl import read_complete_lines


def test_a_torn_line_waits_for_its_writer(tmp_path: Path):
    path = tmp_path / "events.jsonl"
    assert read_complete_lines(path, 0) == ([], 0)  # not written yet
    path.write_bytes(b'{"a": 1}\n\n{"b": 2}\n{"c":')
    lines, offset = read_complete_lines(path, 0)
    assert lines == [b'{"a": 1}', b'{"b": 2}'] and offset == len(b'{"a": 1}\n\n{"b": 2}\n')
    assert read_complete_lines(path, offset) == ([], offset)
    with open(path, "ab") as handle:
        handle.write(b' 3}\n{"d": 4}\n')
    lines, end = read_complete_lines(path, offset)
    assert lines == [b'{"c": 3}', b'{"d": 4}'] and end == path.stat().st_size


def test_control_requests_are_read_once_and_only_when_complete(tmp_path: Path):
    reader = ControlReader(tmp_path)
    path = tmp_path / "control.jsonl"
    assert reader.poll() == []
    path.write_bytes(b'{"action": "pause", "id": "1"}\nnot json\n{"action": "skip", "id": "2"')
    assert reader.poll() == ["pause"]
    with open(path, "ab") as handle:
        handle.write(b'}\n{"action": "pause", "id": "1"}\n')  # a repeated id is one request
    assert reader.poll() == ["skip"]
    assert reader.poll() == []
