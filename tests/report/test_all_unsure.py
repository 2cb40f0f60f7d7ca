"""A run in which no comparison is decided (every cell unsure) still gets its report: the
findings by concurrency band have nothing to say and are left out, not a KeyError."""

from __future__ import annotations

from pathlib import Path

from dspark_tui.analysis.analysis import analyse
from dspark_tui.report.markdown import render_report
from tests.report.test_verification import verification_run


def test_a_run_with_every_cell_unsure_is_reported(tmp_path: Path):
    run = verification_run(tmp_path, {1: 1.03, 16: 0.97, 128: 1.03}, rounds=2, noise=0.03)
    analysis = analyse(run)
    assert analysis.bands.empty and set(analysis.unsure["verdict"]) == {"unsure"}
    for lang in ("zh", "en"):
        assert "chat" in render_report(run, lang)
