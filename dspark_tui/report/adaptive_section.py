"""The report's "Adaptive verification against the K decision" section (zh, en): per cell the
adaptive arm against the K chosen there (the run's paired verdict), and the hybrid — adaptive
where it is shown faster, the schedule elsewhere — as one config or as routing by load, with its
expected gain over the schedule alone (analysis/adaptive.py). Nothing without adaptive arms."""

from __future__ import annotations

import json

from dspark_tui.analysis.adaptive import ONE_CONFIG, ROUTING, SCHEDULE_ONLY, VLLM_SOURCE
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
        rows = [[c.scenario, str(c.concurrency), str(c.k), _gain_text(d, c.vs_chosen),
                 d(f"adaptive_outcome.{c.outcome}")] for c in arm.cells]
        lines += [d("adaptive_arm", arm=arm.arm), ""]
        lines += markdown_table(d("adaptive_table_header").strip("| ").split(" | "), rows)
        lines.append("")
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
