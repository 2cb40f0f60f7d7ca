"""A failed measurement's kind is a field (CellResult.failure), written by the runner and read by
the report; a file saved before the field is known by its words."""

from __future__ import annotations

import json

from dspark_tui.analysis.counting import start_failure
from dspark_tui.engine.run.measure import Measurement, failed_unrun
from dspark_tui.model import CellResult, CellStatus, parse_plan
from dspark_tui.results import load_run
from tests.report.builders import model_cell, plan_text, write_run

ARMS = {"st=3": 3, "st=5": 5}
SCENARIOS = {"chat": (128, 64, [1, 8])}


def test_the_runner_s_record_of_a_start_that_failed_carries_the_kind():
    plan = parse_plan(plan_text(ARMS, SCENARIOS))
    cell = plan.cells()[0]
    record = failed_unrun(Measurement(cell, 1, 1, None), CellResult.start_failed_error(
        "server exited with code 1"), "sglang", "server_start")
    assert record.failure == "server_start" and record.status == CellStatus.FAILED
    assert record.error == "server failed to start: server exited with code 1"  # the words shown
    assert record.failure_reason == "server exited with code 1"
    died = failed_unrun(Measurement(cell, 1, 1, "s1"), "not run: the server died twice", "sglang",
                        "server_died")
    assert died.failure == "server_died" and died.failure_reason is None


def _failed_run(tmp_path, records: list[dict[str, object]]):
    store = write_run(tmp_path, ARMS, SCENARIOS, skip={(a, "chat", c) for a in ARMS for c in (1, 8)})
    for i, record in enumerate(records):
        cell = model_cell("st=3", 3, "chat", (1, 8)[i])
        data = {**json.loads(cell.model_dump_json()), "status": "failed", "metrics": {},
                "server": None, **record}
        path = store.cell_path(cell.key, 1, 1)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data), encoding="utf-8")
    return load_run(tmp_path)


def test_the_report_counts_by_the_kind(tmp_path):
    run = _failed_run(tmp_path / "new", [
        {"error": "server exited with code 3", "failure": "server_start"}])
    assert start_failure(run) == "server exited with code 3"
    # Words alone no longer decide for a file that states its kind.
    other = _failed_run(tmp_path / "other", [
        {"error": "server failed to start: but it died later", "failure": "server_died"}])
    assert start_failure(other) is None


def test_an_old_file_without_the_kind_is_read_by_its_words(tmp_path):
    run = _failed_run(tmp_path, [{"error": "server failed to start: server exited with code 1"}])
    (record,) = run.measurements
    assert record.failure == "server_start"
    assert start_failure(run) == "server exited with code 1"


def test_a_record_without_a_failure_is_saved_as_before():
    saved = json.loads(model_cell("st=3", 3, "chat", 1).model_dump_json())
    assert "failure" not in saved
    kept = json.loads(CellResult(arm="a", scenario="s", concurrency=1, status=CellStatus.FAILED,
                                 error="x", failure="server_died").model_dump_json())
    assert kept["failure"] == "server_died"
