"""How sure the report is: the summary at its top (what to deploy for which load, and how
sure) and the list of cells still unsure. Both read the verdicts of report/verdicts.py."""

from __future__ import annotations

import math

from dspark_tui.report import frames as fr
from dspark_tui.report.analysis import RunAnalysis
from dspark_tui.report.findings import band_label
from dspark_tui.report.tables import pct
from dspark_tui.report.texts import Texts
from dspark_tui.report.verdicts import TIE, UNSURE, WINS

SIMULATOR_MARK = "dspark_tui.sim"
# Past this many more rounds, "measure more" is not advice: the margin sits on the band's edge.
MAX_ROUNDS_WORTH_SAYING = 20


def summary_section(analysis: RunAnalysis, t: Texts) -> list[str]:
    lines = [t("summary_heading"), ""]
    if analysis.winners.empty:
        return [*lines, t("no_findings")]
    layout = analysis.layout
    def label(arm: str) -> str:
        return f"`{layout.setting(arm)}`" if layout.compared_flag or layout.compared_var else f"`{arm}`"

    decided = {band["band"]: band for band in analysis.bands.to_dict("records")}
    unsure = analysis.unsure
    for band_id in [b.id for b in fr.BANDS]:
        open_cells = unsure[unsure["band"] == band_id] if not unsure.empty else unsure
        band = decided.get(band_id)
        if band is None and open_cells.empty:
            continue
        if band is None:
            concurrencies = sorted(int(c) for c in open_cells["concurrency"].unique())
            lines.append(t("summary_unsure", where=band_label(band_id, concurrencies),
                           n=len(open_cells)))
            continue
        where = band_label(band_id, band["concurrencies"])
        verdict, cells = band["verdict"], band["cells"]
        extra = t("summary_unsure_extra", n=len(open_cells)) if not open_cells.empty else ""
        if verdict in analysis.arms:
            lines.append(t("summary_deploy", where=where, setting=label(verdict),
                           wins=int(band[f"wins:{verdict}"]), cells=cells, extra=extra))
        elif verdict == fr.EVEN:
            lines.append(t("summary_even", where=where, ties=band["ties"], cells=cells, extra=extra))
        else:
            lines.append(t("summary_mixed", where=where, cells=cells, extra=extra))
    lines.append("")
    lines.append(_how_sure(analysis, t))
    if SIMULATOR_MARK in (analysis.run.manifest.backend_label or ""):
        lines.append(t("summary_simulated"))
    return lines


def _how_sure(analysis: RunAnalysis, t: Texts) -> str:
    winners = analysis.winners
    settings = analysis.verdicts.settings if analysis.verdicts else None
    band = f"{(settings.tie_band if settings else fr.TIE_MARGIN) * 100:g}"
    if not analysis.has_intervals:
        return t("summary_single", band=band)
    verdicts = winners["verdict"].tolist()
    noise = analysis.verdicts.noise[0] if analysis.verdicts and analysis.verdicts.noise else None
    rounds = noise.rounds if noise else 0
    line = t(
        "summary_sure", wins=verdicts.count(WINS), ties=verdicts.count(TIE),
        unsure=verdicts.count(UNSURE), total=len(verdicts), band=band,
        level=f"{settings.level * 100:.1f}" if settings else "95", rounds=rounds,
    )
    if noise is not None and noise.prior:
        line += " " + t("summary_prior", prior=noise.prior)
    return line


def unsure_section(analysis: RunAnalysis, t: Texts) -> list[str]:
    unsure = analysis.unsure
    if unsure.empty:
        return []
    lines = [t("unsure_heading"), "", t("unsure_lead"), ""]
    for row in unsure.itertuples(index=False):
        more = row.rounds_to_settle
        settles = isinstance(more, float) and not math.isnan(more) and more <= MAX_ROUNDS_WORTH_SAYING
        hint = t("unsure_more", n=int(more)) if settles else t("unsure_edge")
        lines.append(t("unsure_item", scenario=row.scenario, c=int(row.concurrency),
                       leader=row.winner, margin=pct(row.margin, 1),
                       low=_signed(row.margin_low), high=_signed(row.margin_high), hint=hint))
    return lines


def _signed(value: float) -> str:
    return "—" if value is None or math.isnan(value) else f"{value * 100:+.1f}%"


def margin_interval_text(low: float, high: float) -> str:
    return f"{_signed(low)} … {_signed(high)}"
