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
from dspark_tui.analysis.bands import NOT_SHOWN, UNDECIDED, BandAnswer
from dspark_tui.analysis.completeness import Completeness, is_simulated
from dspark_tui.analysis.contention import contention
from dspark_tui.analysis.deploy import DeployAnswer, deploy_answer
from dspark_tui.analysis.schedule import DECIDED, SINGLE_ANSWER, UNSURE_ANSWER
from dspark_tui.analysis.slo import slo_answer, slo_of
from dspark_tui.analysis.verification import VerificationResult, same_k_apart, verification_of
from dspark_tui.report.certainty import how_sure, node_warnings
from dspark_tui.report.findings import band_label, lean_text, not_shown_words
from dspark_tui.report.slo_section import slo_summary
from dspark_tui.report.tables import signed
from dspark_tui.report.verification_section import same_k_results
from dspark_tui.report.words import Texts
from dspark_tui.results.store import LoadedRun


def headline_markdown(run: LoadedRun, lang: str) -> str:
    """The summary that opens the report, as short Markdown for a screen: a few bullet lines,
    no heading, no table, no links to files."""
    t = Texts(lang)
    analysis = analyse(run)
    lines = headline_lines(analysis, deploy_answer(analysis), t, in_report=False)
    if slo_of(run) is not None:  # the answer under the plan's [slo] (none without one)
        lines += slo_summary(slo_answer(analysis), t)
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
    first = incomplete_lines(analysis.completeness, t)
    if analysis.winners.empty:
        return [*first, t("no_findings")]
    simulated = is_simulated(analysis.run.manifest)
    first += verification_lines(verification_of(analysis), t)
    if answer is not None and answer.withheld:
        lines = [*first, _withheld_line(analysis, answer, t)]
    elif _has_schedule(answer):
        lines = [*first, *_sweep_lines(analysis, answer, t, simulated)]
    else:
        lines = [*first, *_band_lines(analysis, t, simulated)]
    lines += ["", how_sure(analysis, t, in_report), *node_warnings(analysis, t),
              *contention_lines(analysis, t)]
    if simulated:
        lines.append(t("summary_simulated"))
    return lines


def contention_lines(analysis: RunAnalysis, t: Texts) -> list[str]:
    """One line when the run's own records say the box was busy while it measured
    (analysis/contention.py); none on a quiet run."""
    found = contention(analysis.run)
    if not found.contended:
        return []
    what = []
    if found.sim_sessions_behind:
        what.append(t("contended_sim", n=found.sim_sessions_behind, m=found.sim_sessions,
                      s=f"{found.sim_behind_s:.1f}"))
    if found.client_behind:
        what.append(t("contended_client", n=found.client_behind, m=found.client_measured))
    return [t("summary_contended", what=t.join(what))]


def _has_schedule(answer: DeployAnswer | None) -> bool:
    return answer is not None and answer.schedule is not None


# Failed cells named in the summary's first line; the rest are in "Failed and missing cells".
FAILED_NAMED = 3


def incomplete_lines(run: Completeness, t: Texts) -> list[str]:
    """The summary's first line for a run that did not measure its whole plan: its status, the
    arms never measured, the failed cells (arm, cell, why). Nothing for a whole run."""
    if run.complete:
        return []
    arms = t("summary_incomplete_arms", arms=t.join(f"`{a}`" for a in run.missing_arms)) \
        if run.missing_arms else ""
    failed = ""
    if run.failed:
        named = t.join(t("summary_incomplete_failed_item", arm=c.arm, scenario=c.scenario,
                         c=c.concurrency, reason=c.reason) for c in run.failed[:FAILED_NAMED])
        more = t("summary_incomplete_more", n=len(run.failed) - FAILED_NAMED) \
            if len(run.failed) > FAILED_NAMED else ""
        failed = t("summary_incomplete_failed", n=len(run.failed), cells=named + more)
    status = t.get(f"run_status.{run.status}", run.status)
    return [t("summary_incomplete", status=status, ok=run.ok, total=run.total, arms=arms,
              failed=failed)]


def verification_lines(result: VerificationResult | None, t: Texts) -> list[str]:
    """A --verify rerun's answer first: whether the schedule it reran was confirmed against the
    fixed K (analysis/verification.VerificationResult.outcome), with the gain it rests on."""
    if result is None:
        return []
    gain = result.gain
    if gain is None:
        text = "—"
    else:
        text = signed(gain.ratio)
        if gain.low is not None and gain.high is not None:
            text += f" ({signed(gain.low)} … {signed(gain.high)})"
    cells = t.join(f"{c.scenario} c={c.concurrency}" for c in result.fixed_wins)
    record = result.record
    lines = [t(f"summary_verify.{result.outcome}", sweep=record.sweep_name or record.sweep,
               k=record.fixed_k, gain=text, band=result.band.percent,
               cells=t("summary_verify_cells", k=record.fixed_k, cells=cells) if cells else "")]
    collapsed = [b for b in result.boundaries if b.collapses]
    if collapsed:
        moves = t.join(t(f"summary_verify_move.{b.move or 'none'}", b=b.boundary, b1=b.boundary + 1)
                       for b in collapsed)
        lines.append(t("summary_verify_collapse", moves=moves, cells=t.join(
            f"{c.scenario} c={c.concurrency}" for c in result.collapses)))
    return lines


def _withheld_line(analysis: RunAnalysis, answer: DeployAnswer, t: Texts) -> str:
    assert answer.run is not None
    arms = t.join(f"`{a}`" for a in answer.run.missing_arms)
    return t("summary_k_withheld", arms=arms, path=analysis.run.path)


def _sweep_lines(analysis: RunAnalysis, answer: DeployAnswer | None, t: Texts,
                 simulated: bool) -> list[str]:
    assert answer is not None and answer.schedule is not None
    schedule = answer.schedule
    ranges = t.join(t("summary_k_range", lo=lo, hi=hi, k=k) for lo, hi, k in schedule.ranges)
    keyed = "summary_k_keyed_client" if schedule.keyed_on == "client_concurrency" else \
        "summary_k_keyed_batch"
    lead = "summary_k_sim" if simulated else ("summary_k_deploy" if answer.deploy else "summary_k_leaders")
    lines = [t(lead, keyed=t(keyed), ranges=ranges)]
    if answer.run is not None and answer.run.missing_arms:  # asked for with --partial-schedule
        lines.append(t("summary_k_partial", arms=t.join(f"`{a}`" for a in answer.run.missing_arms)))
    lines.append(schedule_status_line(answer, t))
    if answer.single is not None:
        lines.append(single_k_line(answer, t, simulated))
    return lines


def schedule_status_line(answer: DeployAnswer, t: Texts) -> str:
    """How many cells' choices the schedule rests on are decided, and which are not."""
    choices = answer.decision.choices
    status = answer.status
    if status == DECIDED:
        return t("summary_k_status_decided", n=len(choices))
    if status == SINGLE_ANSWER:
        return t("summary_k_status_single", n=len(choices))
    open_cells = [c for c in choices if c.status != DECIDED]
    cells = t.join(f"{c.scenario} c={c.concurrency}" for c in open_cells)
    return t("summary_k_status_unsure", unsure=len(open_cells), n=len(choices), cells=cells)


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
    """One line a concurrency band (analysis/bands.py): the arm that wins most of its cells, a
    tie, no consistent winner, or not decided — and how many of its cells decided, and which
    way the unsure ones lean."""
    layout = analysis.layout

    def label(arm: str) -> str:
        return f"`{layout.setting(arm)}`" if layout.compared_flag or layout.compared_var else f"`{arm}`"

    def line_of(band: BandAnswer, apart: list[int]) -> str:
        where = band_label(band.band, sorted({*band.concurrencies, *apart}))
        extra = t("summary_unsure_extra", n=band.unsure, lean=lean_text(t, band)) if band.unsure else ""
        if band.verdict in analysis.arms:
            key = "summary_sim_favours" if simulated else "summary_deploy"
            return t(key, where=where, setting=label(band.verdict),
                     wins=band.wins[band.verdict], cells=band.decided, extra=extra)
        if band.verdict == NOT_SHOWN:
            words = not_shown_words(band)
            return t("summary_not_shown", **{**words, "where": where, "extra": extra,
                                             "setting": label(words["arm"]),
                                             "other": label(words["other"])})
        if band.verdict == fr.EVEN:
            return t("summary_even", where=where, ties=band.ties, cells=band.decided, extra=extra)
        if band.verdict == UNDECIDED:
            won = t.join(t("counts_item", arm=arm, n=n) for arm, n in band.wins.items() if n)
            return t("summary_undecided", where=where, decided=band.decided, cells=band.cells,
                     won=t("summary_undecided_won", wins=won) if won else "",
                     lean=lean_text(t, band) if band.unsure else t("summary_no_lean"))
        return t("summary_mixed", where=where, cells=band.decided, extra=extra)

    # A verification run's cells where the schedule runs the fixed K throughout are A-vs-A
    # checks, counted apart from the band's choices (analysis/verification.same_k_apart).
    answers, apart = same_k_apart(analysis)
    by_band = {band.band: band for band in answers}
    verified = verification_of(analysis) if apart else None
    fixed_k = verified.record.fixed_k if verified is not None else None
    lines: list[str] = []
    for spec in fr.BANDS:
        band, same = by_band.get(spec.id), apart.get(spec.id, [])
        if band is not None:
            extra = t("summary_same_k_extra", results=same_k_results(same, t)) if same else ""
            lines.append(line_of(band, [c.concurrency for c in same]) + extra)
        elif same:
            lines.append(t("summary_same_k_band", where=band_label(
                spec.id, [c.concurrency for c in same]), k=fixed_k,
                results=same_k_results(same, t)))
    return lines
