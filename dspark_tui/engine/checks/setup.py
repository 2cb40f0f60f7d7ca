"""Before a runner runs: the run directory, the preflight checks (engine/checks/preflight.py), the plan
narrowed to some arms."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TypeVar

from dspark_tui.engine.checks.preflight import check_disk, preflight
from dspark_tui.engine.rundir.liveness import touch_heartbeat
from dspark_tui.model import Arm, Plan, Scenario, UserError
from dspark_tui.results import RunStore, manifest_for_plan
from dspark_tui.results.manifest import Verification

__all__ = ["check_disk", "filter_plan", "preflight", "prepare_run"]

_Named = TypeVar("_Named", Arm, Scenario)


def prepare_run(plan: Plan, results_root: Path, plan_source: str | None = None,
                verification: Verification | None = None) -> RunStore:
    """Create the run directory (owner-only) before any runner exists, so callers know it at once.
    It is locked from its creation on (`store.lock`): the caller's runner adopts the lock, in
    this process or, handed down, in the one it starts (launch.py)."""
    manifest = manifest_for_plan(plan, plan_source, verification)
    store = RunStore.create(results_root, manifest, locked=True)
    os.chmod(store.path, 0o700)
    touch_heartbeat(store.path)  # alive for the history view until the runner takes over
    return store


def filter_plan(plan: Plan, arms: Iterable[str] | None, scenarios: Iterable[str] | None) -> Plan:
    """The plan restricted to the named arms and scenarios; an unknown name is a user error."""
    data = plan.model_dump()
    if arms:
        data["arms"] = [a.model_dump() for a in _pick("arms", plan.name, plan.arms, arms)]
    if scenarios:
        data["scenarios"] = [s.model_dump()
                             for s in _pick("scenarios", plan.name, plan.scenarios, scenarios)]
        kept = [s["name"] for s in data["scenarios"]]  # in the plan's order, for the message
        for arm in data["arms"]:  # an arm's `cells` keep the scenarios still run
            if arm.get("cells") is not None:
                arm["cells"] = {name: cs for name, cs in arm["cells"].items() if name in kept}
                if not arm["cells"]:
                    raise UserError(f"--scenarios: arm {arm['name']!r} of plan {plan.name!r} "
                                    f"measures only cells of scenarios left out ({', '.join(kept)} "
                                    f"kept); add them or leave the arm out with --arms")
    return Plan.model_validate(data) if (arms or scenarios) else plan


def _pick(option: str, plan_name: str, items: list[_Named], names: Iterable[str]) -> list[_Named]:
    wanted = [n.strip() for n in names if n.strip()]
    known = [item.name for item in items]
    for name in wanted:
        if name not in known:
            raise UserError(f"--{option}: no {option[:-1]} named {name!r} in plan {plan_name!r} "
                            f"({option}: {', '.join(known)})")
    return [item for item in items if item.name in wanted]
