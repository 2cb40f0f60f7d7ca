"""The report's "Under the SLO" section and its summary lines (zh, en): per cell and arm the
attainment with its interval, the goodput and the limit closest to failing; then the choice per
cell among the arms shown to meet the SLO, and the best fixed arm subject to it (shown best,
within the tie band of the leader, or not shown best: the leader named as such). Nothing here
without a `[slo]` in the plan (analysis/slo.py); its sentences are the catalogue's `slo`
section (report/words/)."""

from __future__ import annotations

import json
import math

from dspark_tui.analysis.decision import Ratio
from dspark_tui.analysis.schedule import SINGLE_ANSWER, UNSURE_ANSWER, Gain
from dspark_tui.analysis.slo import LimitCheck, SingleUnderSlo, SloAnswer, SloCell, SloChoice
from dspark_tui.analysis.verdicts import Verdict
from dspark_tui.model.slo import METRIC_LABELS, Limit
from dspark_tui.report.words import Texts


def _pct(value: float, digits: int = 1) -> str:
    return f"{value * 100:.{digits}f}%"


def _ms(value: float | None) -> str:
    if value is None:
        return "—"
    if not math.isfinite(value):
        return "∞"
    return f"{value:.1f}" if value < 100 else f"{value:,.0f}"


def _signed(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.1f}%".replace("-", "−")


def ratio_text(ratio: Ratio | None) -> str:
    if ratio is None:
        return "—"
    if ratio.has_interval and ratio.low is not None and ratio.high is not None:
        return f"{_signed(ratio.value)} ({_signed(ratio.low)} … {_signed(ratio.high)})"
    return _signed(ratio.value)


def attainment_text(cell: SloCell, say: Texts) -> str:
    share = cell.attainment
    if share.total == 0:
        return "—"
    return say("interval", value=_pct(share.value), low=_pct(share.low), high=_pct(share.high))


def limit_text(limit: Limit, say: Texts) -> str:
    """`TPOT ≤ 25 ms for 95% of requests`, `p99 TTFT ≤ 800 ms`: one limit and the share of
    requests it asks for (`say`: the `slo` section; `plan check` prints it in English)."""
    if limit.percentile is None:
        return say("limit_plain", label=limit.label, share=f"{limit.share * 100:g}")
    return say("limit_pct", label=limit.label)


def limits_text(answer: SloAnswer, say: Texts) -> str:
    """The plan's limits; a scenario whose own limits differ is named with them."""
    scenarios = sorted({c.scenario for c in answer.cells})
    texts = {s: say.join(limit_text(lim, say) for lim in answer.slo.limits_for(s)) for s in scenarios}
    if len(set(texts.values())) <= 1:
        return next(iter(texts.values()), "")
    return say("sep").join(say("scenario_limits", scenario=s, limits=text) for s, text in texts.items())


def _closest_limit(cell: SloCell) -> LimitCheck | None:
    """The limit the cell comes closest to missing: its observed value nearest to (or most
    beyond) the limit, relative to it."""
    checks = [c for c in cell.checks if c.observed_ms is not None]
    if not checks:
        return None
    return max(checks, key=lambda c: (c.observed_ms or 0.0) / c.limit.ms)


def _worst_text(cell: SloCell, say: Texts) -> str:
    check = _closest_limit(cell)
    if check is None:
        return "—"
    return say("worst", metric=_metric_label(check.limit), observed=_ms(check.observed_ms),
               limit=f"{check.limit.ms:g}")


def _misses(cell: SloCell, say: Texts) -> str:
    """`p95 TPOT 7.6 ms against 7 ms`: each limit shown missed (else not shown met), by the
    requests' quantile at the limit's share."""
    items = [say("miss_item", metric=_metric_label(c.limit), observed=_ms(c.observed_ms),
                 limit=f"{c.limit.ms:g}") for c in cell.failing]
    return say.join(items)


def _metric_label(limit: Limit) -> str:
    return f"p{limit.share * 100:g} {METRIC_LABELS[limit.metric]}"


def slo_section(answer: SloAnswer | None, t: Texts) -> list[str]:
    if answer is None:
        return []
    say = t.of("slo")
    level = f"{(1 - answer.alpha) * 100:g}"
    lines = [say("heading"), "", say("lead", limits=limits_text(answer, say), level=level), "",
             say("header"), "|---|---:|---|---:|---:|---:|---|---|"]
    for cell in answer.cells:
        goodput = cell.goodput
        lines.append(say("row", scenario=cell.scenario, c=cell.concurrency, arm=cell.arm,
                         tput="—" if cell.throughput is None else f"{cell.throughput:,.0f}",
                         att=attainment_text(cell, say),
                         goodput="—" if goodput is None else f"{goodput:.2f}",
                         worst=_worst_text(cell, say), status=say(f"status.{cell.status}")))
    left_out = sum(c.left_out for c in answer.cells)
    if left_out:
        lines += ["", say("left_out", n=left_out)]
    single = sum(1 for c in answer.cells if c.attainment.clusters == 1)
    if single:
        lines += ["", say("one_session", n=single, total=len(answer.cells))]
    lines += ["", say("choices_heading"), ""]
    if answer.slo.objective == "goodput":
        lines += [say("objective_goodput"), ""]
    if answer.choice_alpha is not None:
        # The level the choice was made at (SloAnswer.choice_alpha), not the attainment's.
        # With no K to order the arms (an adaptive arm among them) no K is compared with the
        # top: the choice is the top by its point estimate; only its ratio is read at the level.
        key = "choices_level" if answer.k_of is not None else "choices_level_no_k"
        lines += [say(key, each=f"{100 * (1 - answer.choice_alpha):.3g}",
                      arms=answer.choice_arms, level=level), ""]
    for choice in answer.choices:
        lines += _choice_lines(choice, say)
    lines += _single_lines(answer, say)
    # The schedule under the SLO is said once, in the summary (slo_summary: the answer first,
    # and the TUI's headline), not again here.
    if answer.unreplicated and (answer.latency or answer.slo.objective == "goodput"):
        lines += ["", say("own_noise_unreplicated",
                          arms=say.join(f"`{a}`" for a in answer.unreplicated))]
    return lines + _latency_lines(answer, say)


def _latency_lines(answer: SloAnswer, say: Texts) -> list[str]:
    """The choice (else the closest arm) of each cell against every other arm, per metric."""
    rows = []
    for choice in answer.choices:
        arm = choice.choice or choice.closest
        for v in answer.latency:
            if (v.scenario, v.concurrency) != choice.key or arm not in (v.a, v.b):
                continue
            other = v.a if v.b == arm else v.b
            ratio, low, high = ((v.ratio, v.low, v.high) if v.b == arm else
                                (1 / v.ratio, None if v.high is None else 1 / v.high,
                                 None if v.low is None else 1 / v.low))
            shown = Ratio(ratio, low, high, Verdict(v.verdict))
            word = (("lower" if v.lower == arm else "higher") if v.verdict == "wins" else v.verdict)
            rows.append(say("latency_row", scenario=v.scenario, c=v.concurrency,
                            metric=v.metric.removesuffix("_ms").replace("_", " "), arm=arm,
                            other=other, ratio=ratio_text(shown), verdict=say(f"lat.{word}")))
    if not rows:
        return []
    metrics = ", ".join(sorted({f"`{v.metric}`" for v in answer.latency}))
    level = f"{answer.verdict_level * 100:.1f}"
    band = f"{answer.tie_band * 100:g}"
    return ["", say("latency_heading"), "", say("latency_lead", metrics=metrics, level=level, band=band),
            "", say("latency_header"), "|---|---:|---|---|---|---:|---|", *rows]


def _choice_lines(choice: SloChoice, say: Texts) -> list[str]:
    where = {"scenario": choice.scenario, "c": choice.concurrency}
    if choice.choice is None:
        closest = choice.cells[choice.closest] if choice.closest else None
        misses = _closest_misses(closest, say) if closest is not None else "—"
        lines = [say("choice_none", arm=choice.closest or "—", misses=misses, **where)]
    elif choice.choice == choice.fastest:
        lines = [say("choice_fastest", arm=choice.choice, **where)]
    else:
        fastest = choice.cells[choice.fastest]
        if fastest.status == "fails":
            why = say("fastest_fails", misses=_misses(fastest, say))
        elif fastest.status == "meets":  # not for the SLO: the band rule, or more goodput
            why = (say("fastest_meets_goodput") if choice.top == choice.choice
                   else say("fastest_meets_band", arm=choice.choice, top=choice.top or "—"))
        else:
            why = say("fastest_unsure", att=attainment_text(fastest, say))
        lines = [say("choice_other", arm=choice.choice, fastest=choice.fastest,
                     ratio=ratio_text(choice.choice_vs_fastest), why=why, **where)]
    unsure = [a for a in choice.unsure if choice.choice is not None and a != choice.fastest]
    if unsure:
        lines.append(say("choice_unsure", items=say.join(
            say("unsure_item", arm=a, att=attainment_text(choice.cells[a], say)) for a in unsure)))
    return lines


def _closest_misses(cell: SloCell, say: Texts) -> str:
    need = max((c.limit.share for c in cell.checks), default=0.0)
    misses = _misses(cell, say)
    return say("closest_fails" if cell.status == "fails" else "closest_unsure",
               att=attainment_text(cell, say), need=f"{need * 100:g}",
               limits=f"; {misses}" if misses else "")


def gain_text(gain: Gain) -> str:
    """`+0.4% (−8.6% … +10.3%)`: a traffic-weighted ratio with its interval, if it has one."""
    if gain.low is not None and gain.high is not None:
        return f"{_signed(gain.ratio)} ({_signed(gain.low)} … {_signed(gain.high)})"
    return _signed(gain.ratio)


def _gains_text(single: SingleUnderSlo, say: Texts) -> str:
    return say.join(say("single_gain", ratio=gain_text(g), arm=arm) for arm, g in single.gains.items())


def _single_lines(answer: SloAnswer, say: Texts) -> list[str]:
    """The best fixed arm under the SLO and how sure it is, by the best fixed K's rule
    (analysis/slo.SingleUnderSlo: decided, within the band of the leader, unsure, single)."""
    single = answer.single
    if single is None:
        return []
    if single.arm is not None:
        others = [a for a in single.candidates if a != single.arm]
        extra = say("single_others", arms=say.join(f"`{a}`" for a in others)) if others else ""
        if single.status == UNSURE_ANSWER:
            return ["", say("single_unsure", arm=single.arm, others=extra,
                            behind=say.join(f"`{a}`" for a in single.behind), gains=_gains_text(single, say))]
        if single.status == SINGLE_ANSWER:
            return ["", say("single_point", arm=single.arm, others=extra)]
        lines = ["", say("single", arm=single.arm, others=extra)]
        if single.gains and single.leader is not None and single.leader != single.arm:
            lines.append(say("single_band", arm=single.arm, leader=single.leader,
                             gains=_gains_text(single, say)))
        elif single.gains:
            lines.append(say("single_shown", gains=_gains_text(single, say)))
        return lines
    items = [say("single_item", arm=arm, cells=say.join(f"{s} c={c}" for s, c in cells))
             for arm, cells in single.missing_cells.items()]
    return ["", say("single_none", items=say.join(items))]


def schedule_lines(answer: SloAnswer, t: Texts) -> list[str]:
    """The K sweep's schedule under the SLO, with its `--speculative-config`."""
    found = answer.schedule
    if found is None:
        return []
    say = t.of("slo")
    schedule = found.schedule
    keyed = t("summary_k_keyed_batch" if schedule.keyed_on == "running_batch" else "summary_k_keyed_client")
    ranges = t.join(t("summary_k_range", lo=lo, hi=hi, k=k) for lo, hi, k in schedule.ranges)
    config = (say("schedule_config", config=json.dumps(found.config, separators=(",", ":")))
              if found.config is not None else say("schedule_no_spec"))
    lines = [say("schedule", keyed=keyed, ranges=ranges, config=config)]
    if found.without_k:
        lines.append(say("schedule_without", cells=t.join(f"{s} c={c}" for s, c in found.without_k)))
    return lines


def slo_summary(answer: SloAnswer | None, t: Texts) -> list[str]:
    """The summary's lines: per cell the choice under the SLO (where none meets it, the
    closest arm and what it misses by), the best fixed arm, and (K sweeps) the K schedule
    under the SLO, which only the summary says."""
    if answer is None or not answer.choices:
        return []
    say = t.of("slo")
    items = []
    for choice in answer.choices:
        where = f"{choice.scenario} c={choice.concurrency}"
        if choice.choice is not None:
            fastest = choice.cells.get(choice.fastest)
            note = ""
            if choice.fastest != choice.choice and fastest is not None:
                kind = {"fails": "fails", "meets": ("meets_goodput" if choice.top == choice.choice
                                                    else "meets_band")}.get(fastest.status, "unsure")
                note = say(f"summary_fastest_{kind}", arm=choice.fastest)
            items.append(say("summary_item", where=where, arm=choice.choice, fastest=note))
        else:
            closest = choice.cells.get(choice.closest or "")
            items.append(say("summary_item_none", where=where, arm=choice.closest or "—",
                             misses=_closest_misses(closest, say) if closest is not None else "—"))
    lines = [say("summary_choice", limits=limits_text(answer, say), items=say("sep").join(items))]
    single = answer.single
    if single is not None and single.arm is not None:
        differs = (say("summary_fixed_differs", arm=single.fastest)
                   if single.fastest is not None and single.fastest not in single.candidates else "")
        if single.status == UNSURE_ANSWER:
            lines.append(say("summary_fixed_unsure", arm=single.arm, fastest=differs,
                             behind=say.join(f"`{a}`" for a in single.behind)))
        elif single.status == SINGLE_ANSWER:
            lines.append(say("summary_fixed_point", arm=single.arm, fastest=differs))
        elif single.leader is not None and single.leader != single.arm:
            lines.append(say("summary_fixed_band", arm=single.arm, leader=single.leader, fastest=differs))
        else:
            lines.append(say("summary_fixed", arm=single.arm, fastest=differs))
    elif single is not None:
        lines.append(say("summary_fixed_none"))
    return lines + schedule_lines(answer, t)
