"""The whole report.md: header, the seed's tables, findings, failures, recommendations."""

from __future__ import annotations

from dspark_tui.report.advice import advice_section
from dspark_tui.report.analysis import RunAnalysis, analyse
from dspark_tui.report.certainty import margin_interval_text, summary_section, unsure_section
from dspark_tui.report.decision_section import deploy_section, sweep_section
from dspark_tui.report.deploy import deploy_answer
from dspark_tui.report.findings import findings_section
from dspark_tui.report.frames import CORE_COLUMNS, arm_pairs, core_table, server_table
from dspark_tui.report.tables import markdown_table, num, pct
from dspark_tui.report.texts import Texts
from dspark_tui.report.verification import verification_of
from dspark_tui.report.verification_section import verification_section
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


def render_report(run: LoadedRun, lang: str = "zh", analysis: RunAnalysis | None = None) -> str:
    """The Markdown report of a run, in Chinese (the seed's language) or English; pass the
    run's `analyse(run)` when it is at hand, to compute it once for several outputs."""
    t = Texts(lang)
    analysis = analysis if analysis is not None else analyse(run)
    answer = deploy_answer(analysis)  # None unless the arms are a K sweep
    sections = [
        _header(analysis, t),
        verification_section(verification_of(analysis), t),
        deploy_section(answer, t),
        summary_section(analysis, t),
        _core(analysis, t),
        _server(analysis, t),
        _winners(analysis, t),
        sweep_section(answer, t),
        unsure_section(analysis, t),
        findings_section(analysis, t),
        _problems(analysis, t),
        advice_section(analysis, t),
    ]
    blocks = ["\n".join(lines) for lines in sections if lines]
    return f"\n\n{SEPARATOR}\n\n".join(blocks) + "\n"


def _header(analysis: RunAnalysis, t: Texts) -> list[str]:
    run, layout = analysis.run, analysis.layout
    manifest = run.manifest
    backend = (manifest.backend_label or manifest.name).split(" (")[0]
    if layout.compared_flag:
        subject = f"`{layout.compared_flag}`"
        settings = " vs ".join(f"`{layout.setting(arm)}`" for arm in layout.arms)
    elif layout.compared_var:
        subject = f"`{layout.compared_var}`"
        settings = " vs ".join(f"`{layout.setting(arm)}`" for arm in layout.arms)
    else:
        subject = " vs ".join(f"`{arm}`" for arm in layout.arms)
        settings = subject
    lines = [t("title", backend=backend, subject=subject), ""]
    lines.append(t("result_dir", path=manifest.original_dir or str(run.path)))
    if manifest.model:
        lines.append(t("model", model=manifest.model))
    if manifest.backend_label:
        lines.append(t("backend", backend=manifest.backend_label))
    lines.append(t("compared", settings=settings))
    if manifest.warmup_requests is not None:
        lines.append(t("warmup", n=manifest.warmup_requests))
    if manifest.client:
        lines.append(t("client", client=manifest.client))
    ok = int((analysis.cells["status"] == "ok").sum())
    total = max(len(layout.expected), ok + len(analysis.failed))
    lines.append(
        t("cells_line", ok=ok, failed=len(analysis.failed), missing=len(analysis.missing), total=total)
    )
    servers = int(analysis.cells["has_server"].sum())
    lines.append(t("server_line_some", n=servers) if servers else t("server_line_none"))
    sources = {c.provenance.source for c in run.cells.values() if c.provenance.source}
    if len(sources) == 1:
        lines.append(t("source_line", source=next(iter(sources))))
    if len(layout.arms) > 2:
        pairs = ", ".join(f"{b} vs {a}" for a, b in arm_pairs(layout.arms))
        lines.append(t("pairs_line", n=len(layout.arms), base=layout.baseline, pairs=pairs))
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
    return [t("winner_heading"), "", *markdown_table(header, rows)]


def _problems(analysis: RunAnalysis, t: Texts) -> list[str]:
    failed, missing, problems = analysis.failed, analysis.missing, analysis.run.problems
    if failed.empty and not missing and not problems:
        return []
    lines = [t("failed_heading"), ""]
    for row in failed.itertuples(index=False):
        reason = row.error or row.status
        lines.append(
            t("failed_item", arm=row.arm, scenario=row.scenario, c=int(row.concurrency), reason=reason)
        )
    for key in missing:
        lines.append(t("missing_item", arm=key.arm, scenario=key.scenario, c=key.concurrency))
    if problems:
        if failed.size or missing:
            lines.append("")
        lines.append(t("problems_lead"))
        lines.extend(t("problem_item", path=p.path, reason=p.reason) for p in problems)
    return lines

