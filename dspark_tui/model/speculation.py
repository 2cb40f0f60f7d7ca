"""Which server settings are speculation settings: arms that differ only in those must answer a
greedy prompt identically (docs/greedy.md); arms that differ in anything else may not."""

from __future__ import annotations

import json
from collections.abc import Sequence

from dspark_tui.model.plan import Plan

# Flags whose value is the number of draft tokens (K).
K_FLAGS = ("--spec-tokens", "--num-speculative-tokens")
SPEC_CONFIG_FLAG = "--speculative-config"
# Keys of --speculative-config that set K (fixed, or per running batch size).
K_KEYS = ("num_speculative_tokens", "num_speculative_tokens_per_batch_size")


def without_speculation(argv: Sequence[str]) -> list[str]:
    """The command with its K settings taken out: K flags and their values dropped, and
    --speculative-config kept without its K keys (its drafter and method still count)."""
    kept: list[str] = []
    i = 0
    while i < len(argv):
        part = argv[i]
        name, has_value, value = part.partition("=")
        if name in K_FLAGS:
            i += 1 if has_value else 2
            continue
        if name == SPEC_CONFIG_FLAG:
            if not has_value:
                value = argv[i + 1] if i + 1 < len(argv) else ""
                i += 1
            kept.append(f"{SPEC_CONFIG_FLAG}={_config_without_k(value)}")
        else:
            kept.append(part)
        i += 1
    return kept


def _config_without_k(text: str) -> str:
    try:
        config = json.loads(text)
    except json.JSONDecodeError:
        return text
    if not isinstance(config, dict):
        return text
    rest = {key: value for key, value in config.items() if key not in K_KEYS}
    return json.dumps(rest, sort_keys=True) if rest else ""


def differs_beyond_speculation(plan: Plan, arm: str, other: str) -> bool:
    """True when the two arms' server commands differ in more than K."""
    first, second = plan.arm(arm), plan.arm(other)
    return without_speculation(plan.server_argv(first)) != without_speculation(
        plan.server_argv(second))
