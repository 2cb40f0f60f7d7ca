"""The report's greedy equivalence section (zh, en), at the very top, before the summary: a
faster arm whose greedy output differs is wrong, whatever its throughput. Its sentences are
the catalogue's `greedy` section (report/words/)."""

from __future__ import annotations

from dspark_tui.analysis.greedy import GreedyResult
from dspark_tui.model.greedy import GreedyVerdict
from dspark_tui.report.words import Texts


def greedy_section(result: GreedyResult | None, t: Texts) -> list[str]:
    """The section's lines, or none when the run made no greedy check."""
    if result is None:
        return []
    say = t.of("greedy")
    bad = any(v.verdict == "diverges" for v in result.verdicts)
    lines = [say("heading_bad" if bad else "heading"), "",
             say("lead", n=result.prompts, tokens=result.max_tokens, ref=result.reference), ""]
    lines += [_verdict_line(v, say) for v in result.verdicts]
    items = [say("control_item", arm=arm, k=k, n=result.prompts, sessions=result.sessions[arm])
             for arm, k in result.control_differs.items() if result.sessions.get(arm)]
    if items:
        lines.append(say("control", items=t.join(items)))
    lines += [say("problem", problem=p) for p in result.problems]
    return lines


def _verdict_line(v: GreedyVerdict, say: Texts) -> str:
    common = {"arm": v.arm, "ref": v.reference, "n": v.compared}
    if v.verdict == "same":
        return say("same", **common)
    if v.verdict == "within_control":
        return say("within", k=v.within_control, **common)
    if v.verdict == "diverges":
        return say("diverges", k=v.diverging, prompt=v.first_prompt, position=v.first_position,
                   unit=say(f"unit.{v.unit}"), expected=v.expected, got=v.got, **common)
    if v.verdict == "not_compared":
        return say("not_compared", **common)
    return say("no_answers", reason=v.reason, **common)
