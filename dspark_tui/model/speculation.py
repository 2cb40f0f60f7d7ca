"""Which server settings are speculation settings: arms that differ only in those must answer a
greedy prompt identically (docs/greedy.md); arms that differ in anything else may not. The
flags and keys are the plan's server kind's (model/kinds/)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from dspark_tui.model.kinds import ServerKind, VllmKind
from dspark_tui.model.plan import Arm, Plan

_VLLM = VllmKind()


def without_speculation(argv: Sequence[str], kind: ServerKind = _VLLM) -> list[str]:
    """The command with its K settings taken out: K flags and their values dropped, and
    the speculative-config flag kept without its K keys (its drafter and method still count)."""
    kept: list[str] = []
    i = 0
    while i < len(argv):
        part = argv[i]
        name, has_value, value = part.partition("=")
        if name in kind.k_flags:
            i += 1 if has_value else 2
            continue
        if name == kind.spec_config_flag:
            if not has_value:
                value = argv[i + 1] if i + 1 < len(argv) else ""
                i += 1
            kept.append(f"{kind.spec_config_flag}={_config_without_k(value, kind)}")
        else:
            kept.append(part)
        i += 1
    return kept


def _config_without_k(text: str, kind: ServerKind) -> str:
    try:
        config = json.loads(text)
    except json.JSONDecodeError:
        return text
    if not isinstance(config, dict):
        return text
    rest = {key: value for key, value in config.items() if key not in kind.k_keys}
    return json.dumps(rest, sort_keys=True) if rest else ""


def differs_beyond_speculation(plan: Plan, arm: str, other: str) -> bool:
    """True when the two arms' server commands differ in more than K. An arm's
    `[arms.speculative]` table counts by its method and keys, and only when both arms
    speculate: K = 0 (no table) is the same server without a drafter."""
    first, second = plan.arm(arm), plan.arm(other)
    kind = plan.kind
    if without_speculation(_argv_without_table(plan, first), kind) != without_speculation(
            _argv_without_table(plan, second), kind):
        return True
    rests = [_table_rest(a, kind) for a in (first, second)]
    return None not in rests and rests[0] != rests[1]


def _argv_without_table(plan: Plan, arm: Arm) -> list[str]:
    return plan.server_argv(arm.model_copy(update={"speculative": None}))


def _table_rest(arm: Arm, kind: ServerKind) -> dict[str, Any] | None:
    """The arm's table without its K keys; None when it does not speculate."""
    spec = arm.speculative
    if spec is None or spec.k == 0:
        return None
    return {key: value for key, value in spec.config().items() if key not in kind.k_keys}
