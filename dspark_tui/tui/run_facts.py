"""What History says about a run beyond run.json: its best arm, and its cells counted by the one
rule every view that counts from files uses (analysis/counting.py: a cell is ok when every
measurement planned for it is ok, skipped when the user skipped one and none failed).

Read in History's background worker, one run at a time, newest first: the list is usable first.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.cells import cell_len

from dspark_tui.results import load_run
from dspark_tui.results.store import LoadedRun

# History's best-arm column for a run that stopped early or lacks arms is `incomplete` (in the
# app's language): no arm is "best" of a comparison that did not happen. A whole run with
# failed cells keeps its best arm, marked.
FAILED_MARK = " !"
# The column's width in cells (History's COLUMNS): every text below fits it at 80 columns.
BEST_WIDTH = 11


@dataclass(frozen=True)
class RunFacts:
    # `st=5 10/18` (wins 10 of 18 cells), `tie 4/5`, `unsure 5/5` (no cell has a winner),
    # `—`, `incomplete`, `st=5 9/18 !` (failed cells); a K sweep's answer: `K=6 ✓` (decided),
    # `K=2–6 ?2/9` (a schedule's K span; 2 of 9 cells unsure), `K=6 ≈` (single measurements:
    # point estimates); a `--verify` run's result: `verified ✓`, `collapse ✗` …, an unsure one
    # with A-vs-A cells `?2/3 ·3 AvA` (2 of 3 choices unsure, 3 A-vs-A apart); in the app's
    # language, within the column's 11 cells (screens.history.best_*)
    best: str
    cells_ok: int
    skipped: int  # cells the user skipped (and none of whose measurements failed)
    # Cells measured ok in some of their planned measurements, not all (a sweep aborted in its
    # second round: 0 cells ok, yet every cell has its first): the plan tree's ◐.
    partial: int = 0


def run_facts(path: Path, lang: str = "en") -> RunFacts:
    from dspark_tui.analysis.counting import cell_outcomes
    from dspark_tui.analysis.measurements import measurements_of
    from dspark_tui.model.outcome import CellCounts

    run = load_run(path)
    outcomes = cell_outcomes(run)
    counts = CellCounts.of(outcomes.values())
    measured = {m.key for m in measurements_of(run) if m.ok}
    partial = sum(1 for key, outcome in outcomes.items() if outcome != "ok" and key in measured)
    return RunFacts(best=best_column(run, lang), cells_ok=counts.ok, skipped=counts.skipped,
                    partial=partial)


def best_column(run: LoadedRun, lang: str = "en") -> str:
    """The best arm by the verdicts, unless the run is incomplete (analysis/completeness.py):
    aborted, interrupted or failed, or finished without an arm → `incomplete`; failed cells
    in an otherwise whole run → the best arm marked ` !` (which cells: the report's first
    line). A K sweep's best arm is its answer, as the decision view gives it: the schedule's K
    and whether it is decided (no arm "beats every other" in a sweep's cells, where
    neighbouring K tie). A `--verify` run's is what the verification found (no arm of it is a
    K of a sweep, and the schedule against its fixed K is the question it asks)."""
    from dspark_tui.analysis.completeness import completeness
    from dspark_tui.report.words import Texts

    found = completeness(run)
    if found.stopped or (found.status == "completed" and found.missing_arms):
        return Texts(lang, "screens")("history.best_incomplete")
    best = verification_answer(run, lang) or k_sweep_answer(run, lang) or best_arm_said(run, lang)
    return best + FAILED_MARK if found.failed else best


def best_arm_said(run: LoadedRun, lang: str = "en") -> str:
    """`st=5 3/5` (beats every other arm in 3 of 5 compared cells), `tie 4/5`, `unsure 5/5`
    (no cell has a winner and none is a tie: all 5 undecided), `—` (nothing compared)."""
    from dspark_tui.analysis.verdicts import best_arm
    from dspark_tui.report.outputs import run_verdicts
    from dspark_tui.report.words import Texts

    best = best_arm(run_verdicts(run))
    if best.kind == "none":
        return "—"
    if best.kind == "arm":
        return f"{best.arm} {best.n}/{best.total}"
    return Texts(lang, "screens")(f"history.best_{best.kind}", n=best.n, total=best.total)


# What a `--verify` run found (analysis/verification.py's outcome; a collapse at a boundary
# first, as the run's schedule.json lists it first among the reasons not to deploy).
VERIFY_OUTCOMES = ("confirmed", "no_gain", "refuted", "unsure", "single")


def verification_answer(run: LoadedRun, lang: str = "en") -> str | None:
    """`verified ✓`, `collapse ✗`, `no gain =`, `refuted ✗`, `unsure ?`, `single ≈`; None
    unless run.json says the run verifies a sweep and it has verdicts.

    An unsure run with A-vs-A cells (the schedule runs the fixed K there) says how many of its
    comparisons that are choices are unsure and how many are A-vs-A, as the report's how-sure
    line counts them (analysis/verification.choice_verdicts): `?1/3 ·3 AvA`. The outcome stays
    the report's (the realised gain keeps those cells); the counts tell an unsure check, which
    more rounds only narrow toward a tie, from a choice still open."""
    if run.manifest.verification is None:
        return None  # cheap: from run.json
    from dspark_tui.analysis.analysis import analyse
    from dspark_tui.analysis.verdicts import UNSURE
    from dspark_tui.analysis.verification import choice_verdicts, verification_of
    from dspark_tui.report.words import Texts

    analysis = analyse(run)
    result = verification_of(analysis)
    if result is None:
        return None
    t = Texts(lang, "screens")
    if result.collapses:
        return t("history.verify.collapse")
    if result.outcome == "unsure" and result.same_k:
        choices, apart = choice_verdicts(analysis)
        said = t("history.verify.unsure_same_k", n=choices.count(UNSURE), total=len(choices),
                 same=len(apart))
        # Two-digit counts: the same words without their spaces, else the outcome alone.
        for text in (said, said.replace(" ", "")):
            if cell_len(text) <= BEST_WIDTH:
                return text
    return t(f"history.verify.{result.outcome}")


def k_sweep_answer(run: LoadedRun, lang: str = "en") -> str | None:
    """`K=6 ✓` (decided), `K=2–6 ?2/9` (cells unsure of all), `K=6 ≈` (single
    measurements): from analysis/deploy.py's answer, the one the decision view and schedule.json
    give; None unless the run is a K sweep with a K to name."""
    from dspark_tui.analysis.layout import manifest_is_sweep

    if not manifest_is_sweep(run.manifest):
        return None  # cheap: from run.json, before the analysis a sweep needs
    from dspark_tui.analysis.analysis import analyse
    from dspark_tui.analysis.deploy import deploy_answer
    from dspark_tui.analysis.schedule import DECIDED, SINGLE_ANSWER
    from dspark_tui.report.words import Texts

    answer = deploy_answer(analyse(run))
    if answer is None:
        return None
    if answer.schedule is not None:
        ks = {k for _, _, k in answer.schedule.ranges}
    elif answer.single is not None:
        ks = {answer.single.k}
    else:
        return None
    t = Texts(lang, "screens")
    # One K, or the span a schedule keeps its K in (the column has 11 characters; the ranges
    # are the decision view's, one key away).
    k = f"K={min(ks)}" if len(ks) == 1 else f"K={min(ks)}–{max(ks)}"
    if answer.status == SINGLE_ANSWER:
        return t("history.best_k_point", k=k)
    if answer.status != DECIDED:
        unsure = sum(1 for choice in answer.decision.choices if choice.status != DECIDED)
        return t("history.best_k_unsure", k=k, n=unsure, total=len(answer.decision.choices))
    return t("history.best_k_decided", k=k)
