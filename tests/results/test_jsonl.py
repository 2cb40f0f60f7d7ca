"""Reading an appended JSONL file in complete lines: what events.jsonl and control.jsonl readers share."""

from __future__ import annotations

from pathlib import Path

from dspark_tui.engine.rundir.control import ControlReader, controls_since
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


def test_a_runner_reads_the_requests_sent_since_it_was_asked_for_not_before(tmp_path: Path):
    """A pause sent after the runner's process was started but before it first read the file
    (a key pressed in a run's first second) is for it; one an earlier runner left is not. It
    was dropped with everything already written (CI, 2026-12-03: the run went to its end)."""
    path = tmp_path / "control.jsonl"
    path.write_text('{"action": "abort", "t": 100.0, "id": "old"}\n'
                    '{"action": "pause", "t": 200.0, "id": "new"}\n')
    reader = ControlReader(tmp_path)
    reader.skip_existing(150.0)
    assert reader.poll() == ["pause"]
    assert controls_since("150.5", 300.0) == 150.5
    assert controls_since(None, 300.0) == controls_since("nan", 300.0) == 300.0
    assert controls_since("400", 300.0) == 300.0  # a launcher's clock ahead of ours: ours
