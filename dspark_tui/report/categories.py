"""Per-category results: scenarios that send one category's prompts (category-pure cells),
grouped by category, with each category's best K per load.

Nothing here decides anything: the best K per cell is analysis/decision.py's choice (the verdict
analysis' ratios and tie band), the per-position acceptance positions.py's reading of /metrics.
This module only groups them by the plan's `[[scenarios]] category`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dspark_tui.analysis.analysis import RunAnalysis
from dspark_tui.analysis.decision import CellChoice, KDecision, decide_k
from dspark_tui.analysis.deploy import DeployAnswer
from dspark_tui.analysis.positions import SpecCounters, spec_counters
from dspark_tui.analysis.verdicts import UNSURE
from dspark_tui.report.tables import markdown_table
from dspark_tui.report.words import Texts
from dspark_tui.results.manifest import RunManifest


def scenario_categories(manifest: RunManifest) -> dict[str, str]:
    """Scenario name -> category, from the plan snapshot in run.json (plan order)."""
    scenarios: Any = manifest.plan.get("scenarios") if manifest.plan else None
    if not isinstance(scenarios, list):
        return {}
    return {s["name"]: s["category"] for s in scenarios
            if isinstance(s, dict) and isinstance(s.get("name"), str)
            and isinstance(s.get("category"), str)}


@dataclass(frozen=True)
class KRun:
    """Consecutive concurrencies of one scenario whose best K is the same."""

    k: int
    low: int
    high: int
    verified: bool
    unsure: tuple[int, ...] = ()  # concurrencies whose choice the verdicts left unsure


def k_runs(choices: list[CellChoice]) -> list[KRun]:
    runs: list[KRun] = []
    for choice in sorted(choices, key=lambda c: c.concurrency):
        unsure = (choice.concurrency,) if choice.verdict == UNSURE else ()
        last = runs[-1] if runs else None
        if last is not None and last.k == choice.k:
            runs[-1] = KRun(last.k, last.low, choice.concurrency, last.verified and choice.verified,
                            last.unsure + unsure)
        else:
            runs.append(KRun(choice.k, choice.concurrency, choice.concurrency, choice.verified,
                             unsure))
    return runs


def runs_text(runs: list[KRun], lang: str = "en") -> str:
    """`K=5 to c=16; K=3 from c=64`: the first run reaches up, the last starts somewhere."""
    say = Texts(lang, "categories")
    if len(runs) == 1:
        only = runs[0]
        text = (say("run_only", k=only.k, c=only.low) if only.low == only.high
                else say("run_all", k=only.k, lo=only.low, hi=only.high))
        return _with_unsure(text, runs, say)
    parts = []
    for i, run in enumerate(runs):
        if i == 0:
            parts.append(say("run_to", k=run.k, c=run.high))
        elif i == len(runs) - 1:
            parts.append(say("run_from", k=run.k, c=run.low))
        elif run.low == run.high:
            parts.append(say("run_only", k=run.k, c=run.low))
        else:
            parts.append(say("run_between", k=run.k, lo=run.low, hi=run.high))
    return _with_unsure(say("sep").join(parts), runs, say)


def _with_unsure(text: str, runs: list[KRun], say: Texts) -> str:
    unsure = [c for run in runs for c in run.unsure]
    if unsure:
        text += say("unsure", cs=", ".join(map(str, unsure)))
    return text + ("" if all(r.verified for r in runs) else say("unverified"))


def best_k_by_category(decision: KDecision, categories: dict[str, str]) -> dict[str, dict[str, list[KRun]]]:
    """category -> scenario -> runs of its best K over concurrency, in plan order."""
    out: dict[str, dict[str, list[KRun]]] = {}
    for scenario, category in categories.items():
        choices = [c for c in decision.choices if c.scenario == scenario]
        if choices:
            out.setdefault(category, {})[scenario] = k_runs(choices)
    return out


def category_section(analysis: RunAnalysis, answer: DeployAnswer | None, t: Texts) -> list[str]:
    """The per-category section; empty when no scenario of the run names a category."""
    categories = scenario_categories(analysis.run.manifest)
    if not categories:
        return []
    say = t.of("categories")
    decision = answer.decision if answer is not None else decide_k(analysis, require_sweep=False)
    lines = [say("heading"), "", say("lead"), ""]
    if decision is not None:
        for category, scenarios in best_k_by_category(decision, categories).items():
            if len(scenarios) == 1:
                (scenario, runs), = scenarios.items()
                lines.append(say("best_item", category=category, scenarios=f"`{scenario}`",
                                 runs=runs_text(runs, t.lang)))
            else:
                lines.append(say("best_item", category=category, scenarios=", ".join(
                    f"`{s}`" for s in scenarios), runs=""))
                lines += [f"  - `{s}`: {runs_text(runs, t.lang)}" for s, runs in scenarios.items()]
        lines.append("")
    counters = answer.counters if answer is not None else (
        spec_counters(decision) if decision is not None else {})
    k_of = decision.k_of if decision is not None else {}
    header = say("header", spec=analysis.layout.spec_header()).split(" | ")
    lines += markdown_table(header, _rows(analysis, categories, counters, k_of))
    return lines


def _rows(analysis: RunAnalysis, categories: dict[str, str],
          counters: dict[tuple[str, int, int], SpecCounters], k_of: dict[str, int]) -> list[list[str]]:
    cells = analysis.cells
    ok = cells[(cells["status"] == "ok") & cells["scenario"].isin(list(categories))]
    order = {name: i for i, name in enumerate(categories)}
    ok = ok.assign(category_pos=ok["scenario"].map(order)).sort_values(
        ["category_pos", "concurrency", "arm_pos"], kind="stable")
    label = analysis.layout.spec_label
    rows = []
    for row in ok.itertuples(index=False):
        counter = counters.get((row.scenario, row.concurrency, k_of[row.arm])) if row.arm in k_of else None
        accept = counter.accept_length if counter is not None else row.accept_length
        category = categories[row.scenario]
        named = category if row.scenario == category else f"{category} ({row.scenario})"
        rows.append([
            named, str(row.concurrency), label(row.arm),
            f"{row.total_throughput:,.0f}", _num(row.mean_tpot_ms, 2), _num(accept, 2),
            _positions(counter),
        ])
    return rows


def _num(value: float | None, digits: int) -> str:
    return "—" if value is None or value != value else f"{value:,.{digits}f}"


def _positions(counter: SpecCounters | None) -> str:
    if counter is None or not counter.cumulative:
        return "—"
    return "/".join(f"{rate * 100:.0f}" for rate in counter.cumulative) + " %"
