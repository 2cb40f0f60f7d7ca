"""What a finished (or re-reported) run leaves in its directory: report.md (zh),
report.en.md and analysis.json — written together, so the report and the machine-readable
verdicts always come from the same measurements."""

from __future__ import annotations

import json
from pathlib import Path

from dspark_tui.report.analysis import analyse
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
    settings = Settings.of_manifest(run.manifest)
    return analyse_measurements(measurements_of(run), layout_of(run).arms, settings)


def analysis_json(run: LoadedRun) -> str:
    return json.dumps(run_verdicts(run).to_json(), indent=2, ensure_ascii=False) + "\n"


def write_outputs(run: LoadedRun, langs: tuple[str, ...] = ("zh", "en")) -> list[Path]:
    """Write the reports in `langs`, analysis.json and (K sweeps) schedule.json, from one
    analysis of the run; OSError goes to the caller. The reports come first in the list."""
    store = RunStore(run.path)
    analysis = analyse(run)
    path = run.path / ANALYSIS_FILE
    verdicts = analysis.verdicts if analysis.verdicts is not None else run_verdicts(run)
    # First: the verdicts stand even if a report fails.
    atomic_write_text(path, json.dumps(verdicts.to_json(), indent=2, ensure_ascii=False) + "\n")
    written = [store.write_report(render_report(run, lang=lang, analysis=analysis), lang)
               for lang in langs]
    schedule = write_schedule(run, analysis)  # K sweeps only (docs/decision.md)
    return [*written, path, *([schedule] if schedule is not None else [])]
