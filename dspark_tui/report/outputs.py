"""What a finished (or re-reported) run leaves in its directory: report.md (zh),
report.en.md and analysis.json — written together, so the report and the machine-readable
verdicts always come from the same measurements."""

from __future__ import annotations

import json
from pathlib import Path

from dspark_tui.report.deploy import write_schedule
from dspark_tui.report.layout import layout_of
from dspark_tui.report.markdown import render_report
from dspark_tui.report.measurements import measurements_of
from dspark_tui.report.verdicts import RunVerdicts, Settings, analyse_measurements
from dspark_tui.results import RunStore, atomic_write_text
from dspark_tui.results.store import LoadedRun

ANALYSIS_FILE = "analysis.json"


def run_verdicts(run: LoadedRun) -> RunVerdicts:
    """The verdicts of a loaded run under the statistics settings it was started with."""
    settings = Settings.from_bench((run.manifest.plan or {}).get("bench"))
    return analyse_measurements(measurements_of(run), layout_of(run).arms, settings)


def analysis_json(run: LoadedRun) -> str:
    return json.dumps(run_verdicts(run).to_json(), indent=2, ensure_ascii=False) + "\n"


def write_outputs(run: LoadedRun, langs: tuple[str, ...] = ("zh", "en")) -> list[Path]:
    """Write the reports in `langs` and analysis.json; OSError goes to the caller."""
    store = RunStore(run.path)
    path = run.path / ANALYSIS_FILE
    atomic_write_text(path, analysis_json(run))  # first: the verdicts stand even if a report fails
    written = [store.write_report(render_report(run, lang=lang), lang) for lang in langs]
    schedule = write_schedule(run)  # K sweeps only: the deployable schedule (docs/decision.md)
    return [*written, path, *([schedule] if schedule is not None else [])]
