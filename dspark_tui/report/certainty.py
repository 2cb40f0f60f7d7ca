"""How sure the report is: the line of the summary that counts wins, ties and unsure cells
(report/headline.py writes the rest) and the list of cells still unsure. Both read the
verdicts of analysis/verdicts.py; a verification run's A-vs-A cells (the schedule runs the
fixed K there: analysis/verification.same_k_cells) are counted and listed apart."""

from __future__ import annotations

import math

from dspark_tui.analysis.analysis import RunAnalysis
from dspark_tui.analysis.verdicts import TIE, UNSURE, WINS
from dspark_tui.analysis.verification import choice_verdicts, same_k_cells, without_same_k
from dspark_tui.report.external_servers import unreplicated_note
from dspark_tui.report.tables import pct
from dspark_tui.report.verification_section import same_k_results
from dspark_tui.report.words import Texts

# Past this many more rounds, "measure more" is not advice: the margin sits on the band's edge.
MAX_ROUNDS_WORTH_SAYING = 20
# The node check's level (docs/statistics.md, "Rounds on several nodes"): a warning, never a
# change of verdict.
NODE_CHECK_ALPHA = 0.05


def how_sure(analysis: RunAnalysis, t: Texts, in_report: bool = True) -> str:
    """The summary's how-sure line; `in_report` points at the list of unsure cells below it.
    A verification run's A-vs-A cells are not among its comparisons: a clause counts them."""
    settings = analysis.verdicts.settings if analysis.verdicts else None
    band = analysis.band.percent
    external = unreplicated_note(analysis.verdicts, t)
    nodes = nodes_note(analysis, t)
    if not analysis.has_intervals:
        return t("summary_single", band=band) + "".join(" " + note for note in (external, nodes) if note)
    verdicts = choice_verdicts(analysis)[0]
    noise = analysis.verdicts.noise[0] if analysis.verdicts and analysis.verdicts.noise else None
    rounds: int | str = noise.rounds if noise else 0
    # Per cell, the sessions both arms of a pair have: say the range when cells differ.
    paired = sorted({p.n for p in analysis.verdicts.pairs if p.verdict != "single"}) \
        if analysis.verdicts else []
    if len(paired) > 1:
        rounds = f"{paired[0]}–{paired[-1]}"
    # Rounds of a server never restarted are not server sessions: the note after says why.
    line = t(
        "summary_sure_external" if external else "summary_sure", wins=verdicts.count(WINS),
        ties=verdicts.count(TIE), unsure=verdicts.count(UNSURE), total=len(verdicts), band=band,
        below=t("summary_below") if in_report and UNSURE in verdicts else "",
        level=f"{settings.level * 100:.1f}" if settings else "95", rounds=rounds,
    )
    if external:
        line += " " + external  # it names the prior, when one carries the session term
    elif noise is not None and noise.prior:
        line += " " + t("summary_prior", prior=noise.prior)
    return line + _same_k_clause(analysis, t) + (" " + nodes if nodes else "")


def _same_k_clause(analysis: RunAnalysis, t: Texts) -> str:
    """` Counted apart: 2 A-vs-A check(s) …`: the verdicts of a verification run's A-vs-A
    cells, which the how-sure line's comparisons leave out; nothing for any other run."""
    same = same_k_cells(analysis)
    if not same:
        return ""
    verdicts = choice_verdicts(analysis)[1]
    cells = t.join(f"{c.scenario} c={c.concurrency}" for c in same)
    return " " + t("summary_sure_same_k", n=len(same), cells=cells, wins=verdicts.count(WINS),
                   ties=verdicts.count(TIE), unsure=verdicts.count(UNSURE))


def nodes_note(analysis: RunAnalysis, t: Texts) -> str:
    """The how-sure line's note for rounds on two nodes or more: how many, that each round's
    arms were paired on one node, the rounds left unpaired and the inference target."""
    verdicts = analysis.verdicts
    if verdicts is None or not verdicts.several_nodes:
        return ""
    unpaired = verdicts.unpaired_rounds
    return t("summary_nodes", nodes=len(verdicts.known_nodes),
             unpaired=t("summary_nodes_unpaired", n=unpaired) if unpaired else "")


def node_warnings(analysis: RunAnalysis, t: Texts) -> list[str]:
    """One line per pair whose round effects differ between nodes: a node may be unlike the
    others. The verdicts are not changed. The pairs are tested together at NODE_CHECK_ALPHA by
    Holm's step-down rule (a K sweep of 8 arms has 28 pairs; each at 5 % would flag one by
    chance more often than not); with one pair it is the plain test."""
    verdicts = analysis.verdicts
    if verdicts is None:
        return []
    tested = sorted((n for n in verdicts.noise if n.node_check is not None),
                    key=lambda n: n.node_check.p)  # type: ignore[union-attr]
    flagged = []
    for rank, noise in enumerate(tested):
        check = noise.node_check
        assert check is not None
        if check.p >= NODE_CHECK_ALPHA / (len(tested) - rank):
            break
        flagged.append(noise)
    order = {id(n): i for i, n in enumerate(verdicts.noise)}
    return [t("summary_node_differs", a=n.a, b=n.b, p=_p_value(n.node_check.p),
              nodes=n.node_check.nodes, spread=f"{math.expm1(n.node_check.spread):.1%}")
            for n in sorted(flagged, key=lambda n: order[id(n)]) if n.node_check is not None]


def _p_value(p: float) -> str:
    return "< 0.001" if p < 0.001 else f"= {p:.3f}"


def unsure_section(analysis: RunAnalysis, t: Texts) -> list[str]:
    """The unsure cells with what would settle each; a verification run's A-vs-A cells after
    them on one line, unsure as such a check expects (more rounds settle no K there)."""
    if analysis.unsure.empty:
        return []
    unsure = without_same_k(analysis, analysis.unsure)
    lines = [t("unsure_heading"), "", t("unsure_lead"), ""]
    for row in unsure.itertuples(index=False):
        more = row.rounds_to_settle
        settles = isinstance(more, float) and not math.isnan(more) and more <= MAX_ROUNDS_WORTH_SAYING
        # "Near the band's edge" only when the margin is: within twice the band of it.
        near_edge = abs(row.margin - analysis.band.fraction) <= analysis.band.fraction
        hint = t("unsure_more", n=int(more)) if settles else \
            t("unsure_edge") if near_edge else t("unsure_wide")
        lines.append(t("unsure_item", scenario=row.scenario, c=int(row.concurrency),
                       leader=row.winner, margin=pct(row.margin, 1),
                       low=_signed(row.margin_low), high=_signed(row.margin_high), hint=hint))
    apart = analysis.unsure.loc[analysis.unsure.index.difference(unsure.index)]
    if not apart.empty:
        keys = set(zip(apart["scenario"], apart["concurrency"].astype(int), strict=True))
        cells = [c for c in same_k_cells(analysis) if c.key in keys]
        lines.append(t("unsure_same_k", cells=same_k_results(cells, t)))
    return lines


def _signed(value: float) -> str:
    return "—" if value is None or math.isnan(value) else f"{value * 100:+.1f}%"


def margin_interval_text(low: float, high: float) -> str:
    return f"{_signed(low)} … {_signed(high)}"
