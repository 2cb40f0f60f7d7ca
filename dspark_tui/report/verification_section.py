"""The report's "verification" section (zh, en): a verification run's schedule against the best
fixed K, per cell and on the plan's traffic. Empty for every other run."""

from __future__ import annotations

from dspark_tui.analysis.decision import Ratio
from dspark_tui.analysis.schedule import Gain
from dspark_tui.analysis.verdicts import Verdict
from dspark_tui.analysis.verification import VerificationResult, VerifiedCell
from dspark_tui.report.tables import markdown_table, signed
from dspark_tui.report.words import Texts


def _verdict(x: Texts, verdict: Verdict, ratio: float) -> str:
    if verdict == Verdict.WINS:
        return x("verdict.wins" if ratio > 1.0 else "verdict.loses")
    return x.get(f"verdict.{verdict}", verdict)


def _interval(low: float | None, high: float | None) -> str:
    return "—" if low is None or high is None else f"{signed(low)} … {signed(high)}"


def verification_section(result: VerificationResult | None, t: Texts) -> list[str]:
    if result is None:
        return []
    x = t.of("verification")
    record = result.record
    fixed = record.fixed_arm
    lines = [x("heading"), "", x(
        "lead", sweep=record.sweep_name, path=record.sweep, schedule=record.schedule,
        keyed=x.get(f"keyed.{record.keyed_on}", record.keyed_on), k=record.fixed_k,
        schedule_arm=record.schedule_arm, fixed_arm=fixed), ""]
    rows = []
    for cell in result.cells:
        ratio: Ratio | None = cell.ratio
        rows.append([
            cell.scenario, str(cell.concurrency),
            "—" if cell.batch is None else f"{cell.batch:.1f}",
            "—" if cell.schedule_k is None else str(cell.schedule_k),
            f"{cell.weight:.2f}",
            "—" if ratio is None else signed(ratio.value),
            "—" if ratio is None or not ratio.has_interval else _interval(ratio.low, ratio.high),
            "—" if ratio is None else _verdict(x, ratio.verdict, ratio.value) if not cell.same_k
            else x("same_k_verdict", verdict=_verdict(x, ratio.verdict, ratio.value)),
        ])
    lines += markdown_table(x("header", fixed_arm=fixed).strip("| ").split(" | "), rows)
    lines.append("")
    gain: Gain | None = result.gain
    if gain is not None:
        text = signed(gain.ratio)
        if gain.low is not None:
            text += f" ({_interval(gain.low, gain.high)})"
        lines.append(x("gain", fixed_arm=fixed, traffic=x(f"traffic.{result.traffic_source}"),
                       gain=text, verdict=_verdict(x, result.gain_verdict, gain.ratio),
                       band=result.band.percent))
        lines.append(x("gain_single") if gain.low is None else
                     x("gain_interval", level=f"{result.level * 100:.4g}"))
    names = [f"{c.scenario} c={c.concurrency}" for c in result.fixed_wins]
    lines.append(x("fixed_wins", fixed_arm=fixed, cells=", ".join(names)) if names
                 else x("no_fixed_wins", fixed_arm=fixed))
    won = [f"{c.scenario} c={c.concurrency}" for c in result.cells if c.schedule_wins]
    if won:
        lines.append(x("schedule_wins", cells=", ".join(won)))
    if result.same_k:
        lines.append(x("same_k", k=record.fixed_k, fixed_arm=fixed, cells=", ".join(
            f"{c.scenario} c={c.concurrency}" for c in result.same_k)))
    return lines + boundary_lines(result, t)


def same_k_results(cells: list[VerifiedCell], t: Texts) -> str:
    """`chat c=1 -7.9% (unsure)`: the A-vs-A cells (VerifiedCell.same_k), schedule / fixed K."""
    x = t.of("verification")
    return t.join(x("same_k_item", cell=f"{c.scenario} c={c.concurrency}",
                    ratio="—" if c.ratio is None else signed(c.ratio.value),
                    verdict="—" if c.ratio is None else _verdict(x, c.ratio.verdict, c.ratio.value))
                  for c in cells)


def _cell_ratio(ratio: Ratio | None) -> str:
    if ratio is None:
        return "—"
    text = signed(ratio.value)
    return text + (f" ({_interval(ratio.low, ratio.high)})" if ratio.has_interval else "")


def boundary_lines(result: VerificationResult, t: Texts) -> list[str]:
    """The boundary check: the schedule against the fixed K on each side of the nearest
    boundary per cell, the collapses, and which boundary to move which way."""
    cells = result.boundary_cells
    if not cells:
        return []
    x = t.of("verification")
    record = result.record
    lines = ["", x("boundary_heading"), "", x(
        "boundary_lead", probes=", ".join(f"c={c}" for c in record.probes) or "—",
        scenario=record.probe_scenario or "—",
        arms=", ".join(f"`{name}`" for name in record.fixed_arms), band=result.band.percent), ""]
    if record.prefill_scenario is not None:
        lines += [x("boundary_prefill", scenario=record.prefill_scenario,
                    probes=", ".join(f"c={c}" for c in record.prefill_probes),
                    input_len=record.prefill_input_len, output_len=record.prefill_output_len,
                    source=record.probe_scenario or "—"), ""]
    rows = []
    for cell in cells:
        share = cell.high_share
        rows.append([
            cell.scenario, f"{cell.concurrency}{' *' if cell.probe else ''}",
            "—" if cell.batch is None else f"{cell.batch:.1f}",
            "—" if cell.schedule_k is None else str(cell.schedule_k),
            f"{cell.boundary}–{cell.boundary + 1} (K={cell.k_low}→K={cell.k_high})",
            _cell_ratio(cell.vs_low), _cell_ratio(cell.vs_high), _cell_ratio(cell.high_vs_low),
            "—" if cell.drafted_k is None else f"{cell.drafted_k:.2f} ({share * 100:.0f}%)"
            if share is not None else f"{cell.drafted_k:.2f}",
            x("collapse_yes") if cell.collapse else "",
        ])
    lines += markdown_table(x("boundary_header").strip("| ").split(" | "), rows)
    lines += ["", x("boundary_probe_note"), ""]
    for advice in result.boundaries:
        names = dict(b=advice.boundary, b1=advice.boundary + 1, lo=advice.k_low, hi=advice.k_high)
        if advice.collapses:
            lines.append(x("collapse", cells=", ".join(
                f"{c.scenario} c={c.concurrency}" for c in advice.collapses), **names))
        if advice.move in ("down", "up"):
            lines.append(x(f"move_{advice.move}", target=advice.target, **names))
        elif advice.move == "conflict":
            lines.append(x("move_conflict", **names))
        elif advice.collapses:  # a collapse no plain probe gives a direction to
            lines.append(x("move_unknown", **names))
        elif advice.cells:
            lines.append(x("move_none", **names))
    if any(c.single for c in cells):
        lines.append(x("boundary_single"))
    lines.append(x("flip_note"))
    return lines
