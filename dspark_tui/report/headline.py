"""The answer first: the few lines that open the report — what to deploy for which load (the
K schedule when the arms are a K sweep), how sure, and the one caveat that matters — and the
same lines for the TUI (`headline_markdown`), so the run screen, History's run detail and the
report never tell a run's answer differently.

A run measured on the simulator says what the simulator shows and that a GPU run decides; it
never tells the user to deploy or make a setting the default.
"""

from __future__ import annotations

from collections.abc import Sequence

from dspark_tui.analysis import frames as fr
from dspark_tui.analysis.analysis import RunAnalysis, analyse
from dspark_tui.analysis.deploy import DeployAnswer, deploy_answer
from dspark_tui.analysis.schedule import SINGLE_ANSWER, UNSURE_ANSWER
from dspark_tui.report.certainty import how_sure, node_warnings
from dspark_tui.report.findings import band_label
from dspark_tui.report.words import Texts
from dspark_tui.results.manifest import RunManifest
from dspark_tui.results.store import LoadedRun

SIMULATOR_MARK = "dspark_tui.sim"


def is_simulated(manifest: RunManifest) -> bool:
    """True when the run's server was the simulator: its backend label or its server command
    names dspark_tui.sim."""
    if SIMULATOR_MARK in (manifest.backend_label or ""):
        return True
    server = manifest.plan.get("server") if isinstance(manifest.plan, dict) else None
    command = server.get("command", []) if isinstance(server, dict) else []
    return any(SIMULATOR_MARK in str(part) for part in command)


def headline_markdown(run: LoadedRun, lang: str) -> str:
    """The summary that opens the report, as short Markdown for a screen: a few bullet lines,
    no heading, no table, no links to files."""
    t = Texts(lang)
    analysis = analyse(run)
    lines = headline_lines(analysis, deploy_answer(analysis), t, in_report=False)
    return "\n".join(lines).strip() + "\n"


def summary_section(analysis: RunAnalysis, answer: DeployAnswer | None, t: Texts,
                    charts: Sequence[tuple[str, str]] = ()) -> list[str]:
    """The report's summary: its heading, the headline and the line linking the charts
    ((title, relative path) pairs)."""
    lines = [t("summary_heading"), "", *headline_lines(analysis, answer, t)]
    if charts:
        links = t.join(f"[{title}]({path})" for title, path in charts)
        lines.append(t("summary_charts", links=links))
    return lines


def headline_lines(analysis: RunAnalysis, answer: DeployAnswer | None, t: Texts,
                   in_report: bool = True) -> list[str]:
    if analysis.winners.empty:
        return [t("no_findings")]
    simulated = is_simulated(analysis.run.manifest)
    lines = _sweep_lines(answer, t, simulated) if _has_schedule(answer) else \
        _band_lines(analysis, t, simulated)
    lines += ["", how_sure(analysis, t, in_report), *node_warnings(analysis, t)]
    if simulated:
        lines.append(t("summary_simulated"))
    return lines


def _has_schedule(answer: DeployAnswer | None) -> bool:
    return answer is not None and answer.schedule is not None


def _sweep_lines(answer: DeployAnswer | None, t: Texts, simulated: bool) -> list[str]:
    assert answer is not None and answer.schedule is not None
    schedule = answer.schedule
    ranges = t.join(t("summary_k_range", lo=lo, hi=hi, k=k) for lo, hi, k in schedule.ranges)
    keyed = "summary_k_keyed_client" if schedule.keyed_on == "client_concurrency" else \
        "summary_k_keyed_batch"
    lead = "summary_k_sim" if simulated else "summary_k_deploy"
    lines = [t(lead, keyed=t(keyed), ranges=ranges)]
    if answer.single is not None:
        lines.append(single_k_line(answer, t, simulated))
    return lines


def single_k_line(answer: DeployAnswer, t: Texts, simulated: bool) -> str:
    """The best fixed K by the per-cell rule (analysis/schedule.best_single_k): shown, a point
    estimate, or no K shown best and the leader named."""
    single = answer.single
    assert single is not None
    sim = "_sim" if simulated else ""
    if single.status == UNSURE_ANSWER:
        others = [k for k, g in sorted(single.gains.items())
                  if (g.low if g.low is not None else g.ratio) < answer.decision.band.floor]
        return t(f"summary_k_single_unsure{sim}", k=single.k,
                 others=", K=".join(str(k) for k in others))
    if single.status == SINGLE_ANSWER:
        return t(f"summary_k_single_point{sim}", k=single.k)
    return t(f"summary_k_single{sim}", k=single.k)


def _band_lines(analysis: RunAnalysis, t: Texts, simulated: bool) -> list[str]:
    """One line a concurrency band: the arm its decided cells favour, a tie, or no winner."""
    layout = analysis.layout

    def label(arm: str) -> str:
        return f"`{layout.setting(arm)}`" if layout.compared_flag or layout.compared_var else f"`{arm}`"

    decided = {band["band"]: band for band in analysis.bands.to_dict("records")}
    unsure = analysis.unsure
    lines: list[str] = []
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
            key = "summary_sim_favours" if simulated else "summary_deploy"
            lines.append(t(key, where=where, setting=label(verdict),
                           wins=int(band[f"wins:{verdict}"]), cells=cells, extra=extra))
        elif verdict == fr.EVEN:
            lines.append(t("summary_even", where=where, ties=band["ties"], cells=cells, extra=extra))
        else:
            lines.append(t("summary_mixed", where=where, cells=cells, extra=extra))
    return lines
