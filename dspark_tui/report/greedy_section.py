"""The report's greedy equivalence section (zh, en), at the very top, before the summary: a
faster arm whose greedy output differs is wrong, whatever its throughput. Its sentences are
kept here, apart from texts.py, as verification_section.py keeps its own."""

from __future__ import annotations

from collections.abc import Callable

from dspark_tui.analysis.greedy import GreedyResult
from dspark_tui.model.greedy import GreedyVerdict
from dspark_tui.report.texts import Texts

_ZH: dict[str, str] = {
    "heading": "## 贪心输出一致性检查",
    "heading_bad": "## ⚠ 贪心输出一致性检查：有 arm 的输出不同",
    "lead": "每个 arm 在每次服务端会话预热后，以 temperature 0 回答同样的 {n} 个提示（最多 {tokens} "
    "个 token），每个会话答两遍；与 `{ref}` 的回答逐 token 比较（服务端不返回 token id 时逐字符）。"
    "真实服务端没有 bug 也会有差异（FP8 KV cache、张量并行数值、batch 形状），所以只有比对照"
    "（同一 arm 自己的重复回答）更早出现的差异才算。",
    "same": "- `{arm}`：与 `{ref}` 在全部 {n} 个提示上输出相同。",
    "within": "- `{arm}`：与 `{ref}` 在对照范围内相同（{k}/{n} 个提示有差异，但不早于同一 arm "
    "自身重复回答的差异）。",
    "diverges": "- `{arm}`：**输出不同** —— {k}/{n} 个提示的差异早于对照；第一个在提示 {prompt} 的"
    "第 {position} 个{unit}：`{ref}` 为「{expected}」，`{arm}` 为「{got}」。",
    "not_compared": "- `{arm}`：与 `{ref}` 的差别不止投机解码设置：不比较。",
    "no_answers": "- `{arm}`：没有可比较的回答（{reason}）。",
    "unit.token": " token",
    "unit.char": "字符",
    "control": "- 对照：{items}。",
    "control_item": "`{arm}` {k}/{n} 个提示两次回答不同（{sessions} 个会话）",
    "problem": "- 未读取：{problem}",
}

_EN: dict[str, str] = {
    "heading": "## Greedy equivalence check",
    "heading_bad": "## ⚠ Greedy equivalence check: an arm's output differs",
    "lead": "After warmup in each server session, every arm answered the same {n} prompts at "
    "temperature 0 ({tokens} tokens at most), twice; the answers are compared with `{ref}`'s "
    "token by token (character by character when the server returned no token ids). Real servers "
    "differ without a bug (FP8 KV cache, tensor-parallel numerics, batch shape), so a difference "
    "counts only when it comes earlier than the control's: a repeat of the same arm.",
    "same": "- `{arm}`: the same output as `{ref}` on all {n} prompts.",
    "within": "- `{arm}`: the same as `{ref}` within the control ({k} of {n} prompts differ, none "
    "earlier than a repeat of the same arm does).",
    "diverges": "- `{arm}`: **output differs** — on {k} of {n} prompts earlier than the control; "
    "the first at prompt {prompt}, {unit} {position}: `{ref}` “{expected}”, `{arm}` “{got}”.",
    "not_compared": "- `{arm}`: differs from `{ref}` in more than speculation: not compared.",
    "no_answers": "- `{arm}`: nothing to compare ({reason}).",
    "unit.token": "token",
    "unit.char": "character",
    "control": "- Control: {items}.",
    "control_item": "`{arm}` answered {k} of {n} prompts differently the second time "
    "({sessions} sessions)",
    "problem": "- Not read: {problem}",
}

_TABLES = {"zh": _ZH, "en": _EN}


def greedy_section(result: GreedyResult | None, t: Texts) -> list[str]:
    """The section's lines, or none when the run made no greedy check."""
    if result is None:
        return []
    table = _TABLES[t.lang]

    def say(key: str, **values: object) -> str:
        return table[key].format(**values)

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


def _verdict_line(v: GreedyVerdict, say: Callable[..., str]) -> str:
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
