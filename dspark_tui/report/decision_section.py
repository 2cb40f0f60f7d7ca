"""The report's K-decision sections: "what to deploy" at the top, "K sweep" after the winner
table. Both are empty for runs that are not K sweeps (the seed's two-arm report is unchanged)."""

from __future__ import annotations

import json

from dspark_tui.analysis.decision import Crossing, Ratio, family_alpha
from dspark_tui.analysis.deploy import DeployAnswer
from dspark_tui.analysis.positions import PositionGain
from dspark_tui.analysis.schedule import (
    MERGE_CONCURRENCY_SPAN,
    MIN_RUNNING_SAMPLES,
    UNSURE_ANSWER,
    Gain,
    shell_line,
)
from dspark_tui.report.tables import markdown_table, signed
from dspark_tui.report.words import Texts


def _gain_text(d: Texts, gain: Gain | Ratio | None) -> str:
    if gain is None:
        return "—"
    low = gain.low if not isinstance(gain, Ratio) or gain.has_interval else None
    high = gain.high if not isinstance(gain, Ratio) or gain.has_interval else None
    if low is None or high is None:
        return signed(gain.value if isinstance(gain, Ratio) else gain.ratio)
    value = gain.value if isinstance(gain, Ratio) else gain.ratio
    return d("gain_fmt", value=signed(value), low=signed(low), high=signed(high))


def _spans_zero(low: float | None, high: float | None) -> bool:
    """A difference whose interval holds zero is said as not distinguishable from zero."""
    return low is not None and high is not None and low < 0.0 < high


def _c(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.0f}" if value >= 10 else f"{value:.1f}"


def deploy_section(answer: DeployAnswer | None, t: Texts, simulated: bool = False) -> list[str]:
    if answer is None or answer.schedule is None:
        return []
    d = t.of("decision")
    schedule = answer.schedule
    lines = [d("deploy_heading"), ""]
    if simulated:
        lines += [d("deploy_simulated"), ""]
    client = schedule.keyed_on == "client_concurrency"
    if schedule.thin:
        cells = ", ".join(f"{c.scenario} c={c.concurrency} K={c.k}: {c.samples}" for c in schedule.thin)
        lines += [d("deploy_schedule_lead_thin", min=MIN_RUNNING_SAMPLES, cells=cells), ""]
    else:
        lines += [d("deploy_schedule_lead_client" if client else "deploy_schedule_lead"), ""]
    rows = []
    for lo, hi, k in schedule.ranges:
        sources = schedule.sources(lo, hi)
        readings = [a.samples for a in schedule.anchors
                    if lo <= max(1, round(a.batch)) <= hi and a.samples is not None]
        said = ", ".join(sources) or "—"
        if readings:
            said += f" ({d('deploy_readings', n=sum(readings))})"
        rows.append([f"{lo}–{hi}", str(k), said])
    lines += markdown_table(d("deploy_table_header").strip("| ").split(" | "), rows)
    lines.append("")
    if any(len(a.cells) > 1 for a in schedule.anchors) or len(schedule.anchors) > 1:
        lines.append(d("deploy_overlap"))
    if schedule.largest_measured_batch < schedule.max_num_seqs:
        lines.append(d("deploy_beyond", largest=schedule.largest_measured_batch,
                       start=schedule.largest_measured_batch + 1, max_seqs=schedule.max_num_seqs,
                       source=d(f"source.{schedule.max_num_seqs_source}"),
                       k=schedule.k_at(schedule.max_num_seqs)))
    for anchor in schedule.wide_anchors:
        lines.append(d("deploy_wide_merge", batch=_num(anchor.batch, 1), span=f"{MERGE_CONCURRENCY_SPAN:g}",
                       k=anchor.k, cells=", ".join(f"{c.scenario} c={c.concurrency}" for c in anchor.cells)))
    for anchor in schedule.covered:
        lines.append(d("deploy_covered", batch=_num(anchor.batch, 1), k=anchor.k,
                       cells=", ".join(f"{c.scenario} c={c.concurrency}" for c in anchor.cells)))
    if not answer.decision.verified:
        lines.append(d("deploy_unverified"))
    elif unsure := answer.decision.unsure_choices:
        lines.append(d("deploy_unsure", n=len(unsure), total=len(answer.decision.choices),
                       cells=", ".join(f"{c.scenario} c={c.concurrency}" for c in unsure)))
    reasons = answer.why_not()
    lines.append(d("deploy_verdict", answer=d("yes") if answer.deploy else d("no"),
                   why=d("deploy_why", reasons=t.join(d(f"why.{r}") for r in reasons)) if reasons else ""))
    if answer.config is None:
        lines.append(d("deploy_no_spec"))
    else:
        if answer.method_source != "plan":
            lines.append(d("deploy_method_note", source=d(f"method.{answer.method_source}"),
                           method=answer.method))
        lines += ["", d("deploy_config_lead"), "", "```json",
                  json.dumps(answer.config, separators=(", ", ": ")), "```"]
    if answer.command is not None:
        lines += ["", d("deploy_command_lead"), "", "```bash", shell_line(answer.command), "```"]
    lines += ["", d("deploy_single_heading"), "",
              d("deploy_traffic_plan" if answer.traffic_source == "plan" else "deploy_traffic_equal"), ""]
    single = answer.single
    if single is not None:
        gains = "; ".join(d("deploy_single_gain", other=k, gain=_gain_text(d, g))
                          for k, g in sorted(single.gains.items()))
        if single.status == UNSURE_ANSWER:
            others = [k for k, g in sorted(single.gains.items())
                      if (g.low if g.low is not None else g.ratio) < answer.decision.band.floor]
            lines.append(d("deploy_single_unsure", k=single.k, others=", K = ".join(map(str, others)),
                           gains=gains))
        else:
            lines.append(d("deploy_single", k=single.k, gains=gains))
        if answer.schedule_gain is not None:
            gain = answer.schedule_gain
            spans = gain.low is not None and gain.high is not None and gain.low < 1.0 < gain.high
            zero = d("zero_note") if spans else ""
            lines.append(d("deploy_schedule_gain", k=single.k, gain=_gain_text(d, gain) + zero))
        routing = answer.routing
        if routing is not None:
            lines.append(d("deploy_routing", threshold=routing.threshold, low_k=routing.low_k,
                           high_k=routing.high_k, k=single.k, gain=_gain_text(d, routing.gain)))
    return lines


def sweep_section(answer: DeployAnswer | None, t: Texts) -> list[str]:
    if answer is None:
        return []
    d = t.of("decision")
    decision = answer.decision
    band = decision.band.percent
    arms = len(decision.k_of)
    settings = decision.analysis.verdicts.settings if decision.analysis.verdicts else None
    alpha = settings.alpha if settings else 0.05
    # each comparison is read at the family level of one look (KDecision.ratio), not of alpha
    each = 1.0 - family_alpha(settings.look_alpha if settings else alpha, arms)
    lines = [d("sweep_heading"), "", d("best_k_heading"), "",
             d("best_k_lead", band=band, arms=arms, others=max(arms - 1, 1),
               level=f"{100 * (1 - alpha):g}", each=f"{100 * each:.3g}"), ""]
    rows = []
    for c in decision.choices:
        rows.append([
            c.scenario, str(c.concurrency), _c(answer.points[c.key][0]), str(c.k), str(c.top_k),
            _gain_text(d, c.vs_top.get(c.k)) if c.k != c.top_k else "—",
            _gain_text(d, c.vs_baseline) if c.k != 0 else "—",
            _gain_text(d, c.top_vs_runner_up), d(f"status.{c.status}"),
        ])
    lines += markdown_table(d("best_k_header").strip("| ").split(" | "), rows)
    lines += _break_even_lines(answer, d)
    lines += _counter_lines(answer, d)
    lines += _position_lines(answer, d)
    lines += _warning_lines(answer, d)
    return lines


def _crossing_text(d: Texts, crossing: Crossing, low_k: int, high_k: int,
                   concurrencies: list[int]) -> str:
    if crossing.at is None:
        if crossing.sign_first >= 0:
            return d("break_never_high", k=high_k, c=max(concurrencies))
        return d("break_never_low", k=low_k, c=min(concurrencies))
    if crossing.has_interval:
        low = "<" + _c(min(concurrencies)) if crossing.low is None else _c(crossing.low)
        high = ">" + _c(max(concurrencies)) if crossing.high is None else _c(crossing.high)
        text = d("break_at", at=_c(crossing.at), low=low, high=high)
    else:
        text = d("break_at_single", at=_c(crossing.at))
    if crossing.crossings > 1:
        text += d("break_many", n=crossing.crossings)
    return text


def _break_even_lines(answer: DeployAnswer, d: Texts) -> list[str]:
    items = _break_even_items(answer, d)
    return ["", d("break_heading"), "", *items] if items else []


def break_even_items(answer: DeployAnswer, lang: str = "en") -> list[str]:
    """The break-even points and where speculation stops paying, one Markdown item each (the
    report's own sentences, for the TUI's decision view)."""
    return _break_even_items(answer, Texts(lang, "decision"))


def _break_even_items(answer: DeployAnswer, d: Texts) -> list[str]:
    decision = answer.decision
    lines: list[str] = []
    for b in decision.break_evens:
        cs = [c.concurrency for c in decision.choices if c.scenario == b.scenario]
        lines.append(d("break_item", scenario=b.scenario, low_k=b.low_k, high_k=b.high_k,
                       text=_crossing_text(d, b.crossing, b.low_k, b.high_k, cs)))
    for stop in decision.stops:
        cs = [c.concurrency for c in decision.choices if c.scenario == stop.scenario]
        if stop.crossing.at is None:
            key = "stop_never" if stop.crossing.sign_first > 0 else "stop_always"
            lines.append(d(key, scenario=stop.scenario, c=max(cs)))
        else:
            lines.append(d("stop_item", scenario=stop.scenario,
                           text=_crossing_text(d, stop.crossing, 0, 1, cs)))
    return lines


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.0f}%"


def _rate_list(values: list[float]) -> str:
    return "/".join(f"{v * 100:.0f}" for v in values) + " %" if values else "—"


def _num(value: float | None, digits: int = 0) -> str:
    return "—" if value is None or value != value else f"{value:,.{digits}f}"


def _counter_lines(answer: DeployAnswer, d: Texts) -> list[str]:
    if not answer.counters:
        return []
    rows = []
    for choice in answer.decision.choices:
        for k in choice.throughput:
            c = answer.counters.get((choice.scenario, choice.concurrency, k))
            if c is None:
                continue
            running = "—" if c.running_mean is None else f"{c.running_mean:.1f} ({_num(c.running_peak)})"
            rows.append([choice.scenario, str(choice.concurrency), str(k), _num(c.accept_length, 2),
                         _rate_list(c.cumulative), _rate_list(c.conditional), running,
                         _num(c.drafted_per_s), _num(c.accepted_per_s), _num(c.wasted_per_s)])
    if not rows:
        return []
    return ["", d("counters_heading"), "",
            *markdown_table(d("counters_header").strip("| ").split(" | "), rows)]


def _position_lines(answer: DeployAnswer, d: Texts) -> list[str]:
    values = [p for p in answer.positions if p.gains or p.cumulative is not None]
    if not values:
        return []
    lines = ["", d("positions_heading"), "", d("positions_lead"), ""]
    for p in values:
        gains = []
        by_scenario: dict[str, list[PositionGain]] = {}
        for gain in p.gains:
            by_scenario.setdefault(gain.scenario, []).append(gain)
        for scenario, items in by_scenario.items():  # the lowest and the highest concurrency
            for gain in (items[0], items[-1]) if len(items) > 1 else items[:1]:
                if _spans_zero(gain.low, gain.high):
                    gains.append(d("position_gain_zero", value=f"{gain.gain:+,.0f}", scenario=scenario,
                                   c=gain.concurrency))
                    continue
                word = d("position_adds") if gain.gain >= 0 else d("position_costs")
                gains.append(d("position_gain", sign=word, value=_num(abs(gain.gain)), scenario=scenario,
                               c=gain.concurrency))
        key = "position_item" if p.position > 1 else "position_item_first"
        lines.append(d(key, j=p.position, prev=p.position - 1, rate=_rate(p.cumulative),
                       cond=_rate(p.conditional), gains=", ".join(gains) or "—"))
    scenarios: dict[str, list[int]] = {}
    for choice in answer.decision.choices:
        scenarios.setdefault(choice.scenario, []).append(choice.concurrency)
    for scenario, concurrencies in scenarios.items():  # one table per scenario: c across
        rows = []
        for p in values:
            found = {g.concurrency: g for g in p.gains if g.scenario == scenario}
            row = [str(p.position), _rate(p.cumulative), _rate(p.conditional)]
            for concurrency in concurrencies:
                g = found.get(concurrency)
                if g is None:
                    row.append("—")
                elif g.low is not None and g.high is not None:
                    row.append(f"{g.gain:+,.0f} ({g.low:+,.0f}…{g.high:+,.0f})")
                else:
                    row.append(f"{g.gain:+,.0f}")
            rows.append(row)
        columns = " | ".join(f"{scenario} c={c}" for c in concurrencies)
        header = d("positions_header", columns=columns).strip("| ").split(" | ")
        lines += ["", *markdown_table(header, rows)]
    return lines


def _warning_lines(answer: DeployAnswer, d: Texts) -> list[str]:
    if not answer.warnings:
        return []
    grouped: dict[tuple[str, int, int], list[str]] = {}
    for w in answer.warnings:
        grouped.setdefault((w.scenario, w.low_k, w.high_k), []).append(
            d("warn_cell", c=w.concurrency, low_accept=f"{w.low_accept:.2f}",
              high_accept=f"{w.high_accept:.2f}", ratio=signed(w.ratio.value)))
    lines = ["", d("warn_heading"), "", d("warn_lead"), ""]
    for (scenario, low_k, high_k), cells in grouped.items():
        lines.append(d("warn_item", scenario=scenario, low_k=low_k, high_k=high_k, cells="; ".join(cells)))
    return lines


__all__ = ["break_even_items", "deploy_section", "sweep_section"]
