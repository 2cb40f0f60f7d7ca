"""The whole report.md: header, the seed's tables, findings, failures, recommendations."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from dspark_tui.analysis.analysis import RunAnalysis, analyse
from dspark_tui.analysis.counting import start_failure
from dspark_tui.analysis.deploy import deploy_answer
from dspark_tui.analysis.frames import CORE_COLUMNS, arm_pairs, core_table, server_table
from dspark_tui.analysis.greedy import greedy_result
from dspark_tui.analysis.slo import slo_answer, slo_of
from dspark_tui.analysis.verification import verification_of
from dspark_tui.model import shown
from dspark_tui.report.adaptive_section import adaptive_section
from dspark_tui.report.advice import advice_section
from dspark_tui.report.categories import category_section
from dspark_tui.report.certainty import margin_interval_text, unsure_section
from dspark_tui.report.charts import existing_charts
from dspark_tui.report.client_lines import client_health_line, cpus_line
from dspark_tui.report.decision_section import deploy_section, sweep_section
from dspark_tui.report.external_servers import external_server_lines
from dspark_tui.report.findings import findings_section
from dspark_tui.report.greedy_section import greedy_section
from dspark_tui.report.headline import is_simulated, summary_section
from dspark_tui.report.nodes import nodes_line
from dspark_tui.report.slo_section import slo_section, slo_summary
from dspark_tui.report.tables import markdown_table, num, pct
from dspark_tui.report.verification_section import verification_section
from dspark_tui.report.words import Texts
from dspark_tui.results.store import LoadedRun

CORE_HEADER = [
    "Scenario",
    "Concurrency",
    "Spec",
    "Duration(s)",
    "Req/s",
    "Out tok/s",
    "Total tok/s",
    "Mean E2E(ms)",
    "P95 E2E(ms)",
    "P99 E2E(ms)",
    "Mean TTFT(ms)",
    "P99 TTFT(ms)",
    "Mean TPOT(ms)",
    "P99 TPOT(ms)",
]
SEPARATOR = "---"


def render_report(run: LoadedRun, lang: str = "zh", analysis: RunAnalysis | None = None,
                  charts: Sequence[tuple[str, str]] | None = None,
                  partial_schedule: bool = False) -> str:
    """The Markdown report of a run, in Chinese (the seed's language) or English; pass the
    run's `analyse(run)` when it is at hand, to compute it once for several outputs. `charts`
    are (kind, path relative to the run directory) of the charts drawn beside it
    (report/charts.py), linked from the summary and shown after the winner table; None links
    those already in the run's charts/ folder (a report regenerated from a screen keeps them).
    `partial_schedule` makes a K sweep that lacks arms a schedule anyway (it says so).

    The title, then the answer (report/headline.py), then the run's facts and the tables."""
    t = Texts(lang)
    analysis = analysis if analysis is not None else analyse(run)
    answer = deploy_answer(analysis, partial_schedule)  # None unless the arms are a K sweep
    if charts is None:
        charts = existing_charts(run.path)
    titled = [(t(f"chart.{kind}"), path) for kind, path in charts]
    greedy = greedy_section(greedy_result(run.path, run.manifest), t)
    slo = slo_answer(analysis) if slo_of(run) is not None else None  # None without [slo]
    sections = [
        [_title(analysis, t), "", *greedy, *([""] if greedy else []),
         *summary_section(analysis, answer, t, titled), *slo_summary(slo, t)],
        _header(analysis, t),
        verification_section(verification_of(analysis), t),
        deploy_section(answer, t, simulated=is_simulated(run.manifest)),
        adaptive_section(answer, t),
        slo_section(slo, t),
        _core(analysis, t),
        _server(analysis, t),
        _winners(analysis, t),
        _charts(titled, t),
        sweep_section(answer, t),
        category_section(analysis, answer, t),
        unsure_section(analysis, t),
        findings_section(analysis, t),
        _problems(analysis, t),
        advice_section(analysis, t),
    ]
    blocks = ["\n".join(lines) for lines in sections if lines]
    # No control character, whatever a run file said (notes, host, a server's words): the report
    # is printed to terminals too (`report --stdout`). Names were made safe by load_run.
    return shown.text(f"\n\n{SEPARATOR}\n\n".join(blocks) + "\n")


def _title(analysis: RunAnalysis, t: Texts) -> str:
    layout, manifest = analysis.layout, analysis.run.manifest
    backend = (manifest.backend_label or manifest.name).split(" (")[0]
    if layout.compared_flag:
        subject = f"`{layout.compared_flag}`"
    elif layout.compared_var:
        subject = f"`{layout.compared_var}`"
    else:
        subject = " vs ".join(f"`{arm}`" for arm in layout.arms)
    return t("title", backend=backend, subject=subject)


def _header(analysis: RunAnalysis, t: Texts) -> list[str]:
    run, layout = analysis.run, analysis.layout
    manifest = run.manifest
    if layout.compared_flag or layout.compared_var:
        settings = " vs ".join(f"`{layout.setting(arm)}`" for arm in layout.arms)
    else:
        settings = " vs ".join(f"`{arm}`" for arm in layout.arms)
    lines = [t("result_dir", path=manifest.original_dir or str(run.path))]
    if manifest.model:
        lines.append(t("model", model=manifest.model))
    if manifest.backend_label:
        lines.append(t("backend", backend=manifest.backend_label))
    lines.append(t("compared", settings=settings))
    if manifest.warmup_requests is not None:
        lines.append(t("warmup", n=manifest.warmup_requests))
    if manifest.client:
        lines.append(t("client", client=manifest.client))
    lines += external_server_lines(manifest, t)
    if (nodes := nodes_line(run, t)) is not None:
        lines.append(nodes)
    lines.append(_cells_line(analysis, t))
    servers = int(analysis.cells["has_server"].sum())
    not_started = start_failure(run) if not servers else None
    if servers:
        lines.append(t("server_line_some", n=servers))
    elif not_started is not None:
        lines.append(t("server_line_not_started", reason=not_started))
    else:
        lines.append(t("server_line_none"))
    sources = {c.provenance.source for c in run.cells.values() if c.provenance.source}
    if len(sources) == 1:
        lines.append(t("source_line", source=next(iter(sources))))
    if (client := client_health_line(run, t)) is not None:
        lines.append(client)
    if (cpus := cpus_line(run, t)) is not None:
        lines.append(cpus)
    if len(layout.arms) > 2:
        pairs = ", ".join(f"{b} vs {a}" for a, b in arm_pairs(layout.arms))
        lines.append(t("pairs_line", n=len(layout.arms), base=layout.baseline, pairs=pairs))
    return lines


def _cells_line(analysis: RunAnalysis, t: Texts) -> str:
    """Cells counted across rounds (model/outcome.py): a user's skip is not a failure."""
    counts = analysis.completeness.counts  # read once with the summary's first line
    if counts.completed:
        status = t("status_completed_skipped", skipped=counts.skipped) if counts.skipped \
            else t("status_completed")
    else:
        status = t("status_incomplete")
    skipped = t("cells_skipped", n=counts.skipped) if counts.skipped else ""
    return t("cells_line", status=status, ok=counts.ok, skipped=skipped, failed=counts.failed,
             missing=counts.not_run, total=counts.total)


def _charts(charts: list[tuple[str, str]], t: Texts) -> list[str]:
    if not charts:
        return []
    lines = [t("charts_heading")]
    for title, path in charts:
        lines += ["", f"![{title}]({path})"]
    return lines


def _core(analysis: RunAnalysis, t: Texts) -> list[str]:
    table = core_table(analysis.cells)
    header = [*CORE_HEADER]
    header[2] = analysis.layout.spec_header()
    label = analysis.layout.spec_label
    rows = [
        [scenario, str(int(concurrency)), label(arm), *(num(v) for v in values)]
        for scenario, concurrency, arm, *values in table[
            ["scenario", "concurrency", "arm", *CORE_COLUMNS]
        ].itertuples(index=False)
    ]
    return [t("core_heading"), "", *markdown_table(header, rows)]


def _server(analysis: RunAnalysis, t: Texts) -> list[str]:
    if not analysis.has_server_metrics:
        return []
    table = server_table(analysis.cells)
    header = [
        "Scenario", "Concurrency", analysis.layout.spec_header(), "Accept len", "Accept rate",
        "KV peak", "Preemptions", "Running peak", "Waiting peak",
    ]
    label = analysis.layout.spec_label
    rows = [
        [
            r.scenario, str(int(r.concurrency)), label(r.arm), num(r.accept_length),
            pct(r.acceptance_rate, 1), pct(r.kv_usage_peak, 1), num(r.preemptions, 0),
            num(r.running_peak, 0), num(r.waiting_peak, 0),
        ]
        for r in table.itertuples(index=False)
    ]
    return [t("server_heading"), "", *markdown_table(header, rows)]


def _winners(analysis: RunAnalysis, t: Texts) -> list[str]:
    winners = analysis.winners
    if winners.empty:
        return []
    arms = analysis.arms
    several = len(arms) > 2
    header = [
        "Scenario",
        "Concurrency",
        t("winner_col"),
        *(f"{arm} Total tok/s" for arm in arms),
        *([t("runner_up_col")] if several else []),
        t("margin_col"),
    ]
    intervals = analysis.has_intervals
    if intervals:  # the seed's table (single measurements) stays exactly as it was
        header += [t("interval_col"), t("verdict_col")]
    rows = []
    per_arm = winners[arms].to_numpy(dtype=float)
    for i, record in enumerate(
        winners[["scenario", "concurrency", "winner", "runner_up", "margin", "margin_low",
                 "margin_high", "verdict"]].itertuples(index=False)
    ):
        rows.append(
            [
                record.scenario,
                str(int(record.concurrency)),
                record.winner,
                *(num(v) for v in per_arm[i]),
                *([record.runner_up] if several else []),
                pct(record.margin),
                *([margin_interval_text(record.margin_low, record.margin_high),
                   t(f"verdict.{record.verdict}")] if intervals else []),
            ]
        )
    lines = [t("winner_heading"), "", *markdown_table(header, rows)]
    if intervals:
        note = _margin_note(winners, arms, t)
        if note:
            lines += ["", note]
    return lines


def _margin_note(winners: pd.DataFrame, arms: list[str], t: Texts) -> str:
    """Where the margin (the paired geometric mean over rounds) and the ratio of the mean Total
    tok/s in the same row differ as printed, say what the margin is, with the row that differs
    most."""
    worst: tuple[float, str, str, str] | None = None
    for _, row in winners.iterrows():
        if row["verdict"] == "single" or row["winner"] not in arms or row["runner_up"] not in arms:
            continue
        means = float(row[row["winner"]]) / float(row[row["runner_up"]]) - 1.0
        if pct(means) == pct(row["margin"]):
            continue
        gap = abs(means - float(row["margin"]))
        if worst is None or gap > worst[0]:
            worst = (gap, f"{row['scenario']} c={int(row['concurrency'])}", pct(row["margin"]), pct(means))
    if worst is None:
        return ""
    _, where, margin, of_means = worst
    return t("margin_note", where=where, margin=margin, means=of_means)


def _problems(analysis: RunAnalysis, t: Texts) -> list[str]:
    failed, missing, problems = analysis.failed, analysis.missing, analysis.run.problems
    if failed.empty and not missing and not problems:
        return []
    lines = [t("failed_heading"), ""]
    for row in failed.itertuples(index=False):
        reason = row.error or row.status
        template = "skipped_item" if row.status == "skipped" else "failed_item"  # a skip is no failure
        lines.append(t(template, arm=row.arm, scenario=row.scenario, c=int(row.concurrency), reason=reason))
    for key in missing:
        lines.append(t("missing_item", arm=key.arm, scenario=key.scenario, c=key.concurrency))
    if problems:
        if failed.size or missing:
            lines.append("")
        lines.append(t("problems_lead"))
        lines.extend(t("problem_item", path=p.path, reason=p.reason) for p in problems)
    return lines

