"""The report's "Adaptive verification against the K decision" section (zh, en): per cell the
adaptive arm against the K chosen there (the run's paired verdict), and the hybrid — adaptive
where it is shown faster, the schedule elsewhere — as one config or as routing by load, with its
expected gain over the schedule alone (analysis/adaptive.py). Nothing without adaptive arms."""

from __future__ import annotations

import json

from dspark_tui.analysis.adaptive import (
    LOSES,
    MISSING,
    ONE_CONFIG,
    ROUTING,
    SCHEDULE_ONLY,
    SINGLE,
    TIE,
    UNSURE,
    VLLM_SOURCE,
    WINS,
    AdaptiveArm,
)
from dspark_tui.analysis.deploy import DeployAnswer
from dspark_tui.report.decision_section import _gain_text
from dspark_tui.report.tables import markdown_table
from dspark_tui.report.words import Texts


def adaptive_section(answer: DeployAnswer | None, t: Texts) -> list[str]:
    if answer is None or not answer.adaptive:
        return []
    d = t.of("decision")
    lines = [d("adaptive_heading"), "", d("adaptive_lead", band=answer.decision.band.percent), ""]
    for arm in answer.adaptive:
        own = arm.own_arm
        rows = [[c.scenario, str(c.concurrency), str(c.k), _gain_text(d, c.vs_chosen),
                 d(f"adaptive_outcome.{c.outcome}"),
                 *([_gain_text(d, c.vs_own), d(f"adaptive_own_outcome.{c.own_outcome}")]
                   if own is not None else [])] for c in arm.cells]
        header = d("adaptive_table_header") if own is None else \
            d("adaptive_table_header_own", own=own)
        lines += [d("adaptive_arm", arm=arm.arm), ""]
        lines += markdown_table(header.strip("| ").split(" | "), rows)
        lines.append("")
        if own is not None:
            lines.append(_own_line(arm, own, t))
        if arm.form == SCHEDULE_ONLY:
            lines.append(d("adaptive_none", arm=arm.arm))
        else:
            cells = t.join(f"{c.scenario} c={c.concurrency}" for c in arm.wins)
            zero = ""
            gain = arm.gain
            if gain is not None and gain.low is not None and gain.high is not None \
                    and gain.low < 1.0 < gain.high:
                zero = d("zero_note")
            lines.append(d("adaptive_hybrid", arm=arm.arm, cells=cells,
                           gain=_gain_text(d, gain) + zero))
            if arm.form == ONE_CONFIG and arm.config is not None:
                lines += ["", d("adaptive_one_config"), "", "```json",
                          json.dumps(arm.config, separators=(", ", ": ")), "```"]
            elif arm.form == ROUTING:
                rules = t.join(
                    d("adaptive_route_from", scenario=r.scenario, c=r.from_concurrency)
                    if r.from_concurrency is not None else
                    d("adaptive_route_at", scenario=r.scenario,
                      cs=", ".join(map(str, r.adaptive_at)))
                    for r in arm.routing)
                lines.append(d("adaptive_routing", arm=arm.arm, rules=rules, source=VLLM_SOURCE))
        if not arm.method_ok:
            lines.append(d("adaptive_method", source=VLLM_SOURCE))
        lines.append("")
    return lines[:-1] if lines[-1] == "" else lines


def _own_line(arm: AdaptiveArm, own: str, t: Texts) -> str:
    """Where adaptive verification pays against verifying every draft of the same K, where it
    costs, where the run cannot tell (a tie or an unsure interval), and apart from those the
    cells with nothing to tell from: one measurement a side (no interval), or a side not
    measured — a cell never compared is no "not shown either way" (review)."""
    d = t.of("decision")
    groups = {"faster": [c for c in arm.cells if c.own_outcome == WINS],
              "slower": [c for c in arm.cells if c.own_outcome == LOSES],
              "unclear": [c for c in arm.cells if c.own_outcome in (TIE, UNSURE)],
              "single": [c for c in arm.cells if c.own_outcome == SINGLE],
              "missing": [c for c in arm.cells if c.own_outcome == MISSING]}
    parts = [d(f"adaptive_own_{name}", cells=t.join(f"{c.scenario} c={c.concurrency}" for c in cells))
             for name, cells in groups.items() if cells]
    return d("adaptive_own", arm=arm.arm, own=own, parts=t.join(parts))
