"""Warmup and `random-ids` against a model whose vocabulary is not 32,000 (issue 21), through
the runner and the real simulator subprocess."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.engine.helpers import sim_runner


@pytest.mark.slow
async def test_random_ids_and_warmup_draw_below_the_served_vocabulary(tmp_path: Path, port: int):
    """A 3,000-token model: 32,000-wide ids failed every arm's warmup and most requests; the
    run finds the size from the server, records it and every cell is ok."""
    runner, events = sim_runner(tmp_path, port, "--vocab-size", "3000", arms=(3,), warmup=4)
    assert await runner.run() == "completed"
    vocabulary = runner.store.read_manifest().vocabulary
    assert vocabulary is not None and (vocabulary.size, vocabulary.source) == (3000, "server")
    notices = [e.message for e in events.of("notice")]
    assert any(m.startswith("random-ids: token ids drawn below 3,000, from the server (first id "
                            "refused by /v1/completions,") for m in notices), notices
    assert not [e for e in events.of("notice") if e.level != "info" and "warmup" in e.message]


@pytest.mark.slow
async def test_a_failed_warmup_is_one_error_and_no_cell_is_measured(tmp_path: Path, port: int):
    """Every stream cut: the warmup fails; the arm's cells are not run (failed, naming the
    warmup) instead of each failing the same way after a warning."""
    runner, events = sim_runner(tmp_path, port, "--cut-stream-every", "1", arms=(3,), warmup=3)
    assert await runner.run() == "failed"
    errors = [e.message for e in events.of("notice") if e.level == "error"]
    assert errors == ["st=3: warmup: 3 of 3 requests failed; first: RemoteProtocolError: the "
                      "server closed the stream early"]
    assert not [e for e in events.of("notice") if e.level == "warning" and "warmup" in e.message]
    assert not events.of("cell_started")
    cells = runner.store.load_cells()[0]
    assert {cell.error for cell in cells.values()} == {
        "not run: warmup: 3 of 3 requests failed; first: RemoteProtocolError: the server closed "
        "the stream early"}
