"""What a finished (or re-reported) run leaves in its directory: report.md (zh),
report.en.md, analysis.json and the charts in charts/ — written together, so the report, the
charts and the machine-readable verdicts always come from the same measurements."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from dspark_tui.analysis.analysis import RunAnalysis, analyse
from dspark_tui.analysis.deploy import deploy_answer, write_schedule
from dspark_tui.analysis.greedy import greedy_result
from dspark_tui.analysis.layout import adaptive_split
from dspark_tui.analysis.slo import slo_answer, slo_of
from dspark_tui.analysis.verdicts import RunVerdicts, run_verdicts
from dspark_tui.analysis.verification import verification_of
from dspark_tui.report.charts import chart_data
from dspark_tui.report.markdown import render_report
from dspark_tui.results import RunStore, atomic_write_text
from dspark_tui.results.store import LoadedRun

ANALYSIS_FILE = "analysis.json"


def analysis_json(run: LoadedRun, verdicts: RunVerdicts | None = None,
                  analysis: RunAnalysis | None = None) -> str:
    """analysis.json: the verdicts, the greedy check's when the run made one, and under `slo`
    the answer under the plan's `[slo]` when it has one (analysis/slo.py), and under
    `verification` a --verify rerun's arms and its A-vs-A cells."""
    document = (verdicts if verdicts is not None else run_verdicts(run)).to_json()
    if slo_of(run) is not None:
        answer = slo_answer(analysis if analysis is not None else analyse(run))
        if answer is not None:
            document["slo"] = answer.to_json()
    if adaptive_split(run.manifest, run.manifest.arm_names()) is not None:
        # A K sweep with adaptive-verification arms: each against the per-cell choice and its
        # hybrid with the schedule (analysis/adaptive.py); absent without such arms.
        deployed = deploy_answer(analysis if analysis is not None else analyse(run))
        if deployed is not None and deployed.adaptive:
            document["adaptive"] = [arm.to_json() for arm in deployed.adaptive]
    if run.manifest.verification is not None:
        # A --verify rerun: which of its cells compare the fixed K with itself (A-vs-A, counted
        # apart in the summary; analysis/verification.VerifiedCell.same_k); absent elsewhere.
        verified = verification_of(analysis if analysis is not None else analyse(run))
        if verified is not None:
            document["verification"] = {
                "schedule_arm": verified.record.schedule_arm,
                "fixed_arm": verified.record.fixed_arm, "fixed_k": verified.record.fixed_k,
                "same_k_cells": [{"scenario": c.scenario, "concurrency": c.concurrency}
                                 for c in verified.same_k]}
    greedy = greedy_result(run.path, run.manifest)
    if greedy is not None:
        document["greedy"] = {
            "reference": greedy.reference, "prompts": greedy.prompts,
            "max_tokens": greedy.max_tokens, "control_differs": greedy.control_differs,
            "verdicts": [verdict.model_dump() for verdict in greedy.verdicts],
            "problems": greedy.problems,
        }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _warn(line: str) -> None:
    print(f"dspark-tui: warning: {line}", file=sys.stderr)


def write_outputs(run: LoadedRun, langs: tuple[str, ...] = ("zh", "en"),
                  warn: Callable[[str], None] = _warn, partial_schedule: bool = False,
                  charts: bool = True) -> list[Path]:
    """Write the reports in `langs`, analysis.json, (K sweeps) schedule.json and (unless
    `charts` is false: the setting of that name) the charts, from one analysis of the run;
    OSError of the reports goes to the caller, a chart that is not written to `warn` (stderr; a
    runner's goes to runner.log). The reports come first in the list."""
    store = RunStore(run.path)
    analysis = analyse(run)
    path = run.path / ANALYSIS_FILE
    verdicts = analysis.verdicts if analysis.verdicts is not None else run_verdicts(run)
    # First: the verdicts stand even if a report fails.
    atomic_write_text(path, analysis_json(run, verdicts, analysis))
    drawing = chart_data(analysis) if charts else []  # plain data: cheap, and no matplotlib yet

    def write_reports(links: list[tuple[str, str]]) -> list[Path]:
        return [store.write_report(render_report(run, lang=lang, analysis=analysis, charts=links,
                                                 partial_schedule=partial_schedule),
                                   lang) for lang in langs]

    # The reports before the charts: drawing can fail or be slow, the report must not wait on it.
    from dspark_tui.report.chart_drawing import chart_link, write_charts

    planned = [chart_link(chart) for chart in drawing]
    written = write_reports(planned)
    schedule = write_schedule(run, analysis, partial_schedule)  # K sweeps only (docs/decision.md)
    drawn, problems = write_charts(drawing, run.path)
    for problem in problems:
        warn(problem)
    if drawn != planned:  # link only the charts that exist
        written = write_reports(drawn)
    chart_paths = [run.path / relative for _, relative in drawn]
    return [*written, path, *([schedule] if schedule is not None else []), *chart_paths]
