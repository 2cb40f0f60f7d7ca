"""`run PLAN --verify SWEEP_DIR`: the plan of a rerun that checks a finished K sweep's
recommendation — its `num_speculative_tokens_per_batch_size` schedule as one arm against its
best fixed K as the other, on the plan's grid with the plan's rounds (docs/decision.md,
"Verifying")."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dspark_tui.engine.checks.setup import filter_plan
from dspark_tui.model import Plan, UserError, numbers, safe_files
from dspark_tui.model.naming import safe_name
from dspark_tui.model.plan import MAX_NAME_LEN, SPECULATIVE_ARG
from dspark_tui.results import RunStore
from dspark_tui.results.manifest import Verification
from dspark_tui.results.store import load_run

# The analysis (numpy, pandas: ~1 s of imports) is loaded only for a run with --verify: every
# runner process imports this module, and most never verify.
SCHEDULE_ARM = "schedule"


@dataclass(frozen=True)
class Recommendation:
    """What a finished sweep says to deploy: the schedule's --speculative-config and the best
    fixed K for the plan's traffic."""

    sweep: Path
    sweep_name: str
    compared_var: str
    config: dict[str, Any]
    fixed_k: int
    keyed_on: str

    @property
    def ranges(self) -> list[list[int]]:
        return [list(r) for r in self.config["num_speculative_tokens_per_batch_size"]]


def read_recommendation(sweep_dir: Path) -> Recommendation:
    """The sweep's schedule.json (computed from its measurements when absent); a run that is
    not a finished K sweep with a schedule and a best fixed K is one UserError line."""
    from dspark_tui.analysis.analysis import analyse
    from dspark_tui.analysis.deploy import SCHEDULE_FILE, deploy_answer, schedule_json

    sweep_dir = Path(sweep_dir).expanduser()
    manifest = RunStore(sweep_dir).read_manifest()  # a missing or bad run.json: one line
    refuse = f"--verify {sweep_dir}"
    if manifest.status != "completed":
        raise UserError(f"{refuse}: the run is {manifest.status}, not completed; finish it "
                        f"(`dspark-tui run --resume {sweep_dir}`) before verifying its schedule")
    if len(manifest.compared) != 1:
        raise UserError(f"{refuse}: not a K sweep (its arms do not differ in one variable)")
    saved = _read_schedule_json(sweep_dir / SCHEDULE_FILE)
    if saved is None:
        answer = deploy_answer(analyse(load_run(sweep_dir)))
        saved = schedule_json(answer) if answer is not None else None
    if saved is None:
        raise UserError(f"{refuse}: not a K sweep (no K = 0 baseline and fewer than three K "
                        f"values), so it has no schedule to verify")
    config = saved.get("speculative_config")
    single = (saved.get("single_best_k") or {}).get("k")
    if not config or not config.get("num_speculative_tokens_per_batch_size"):
        raise UserError(f"{refuse}: its schedule never speculates (K = 0 at every batch); "
                        f"there is nothing to verify")
    if not isinstance(single, int):
        raise UserError(f"{refuse}: the sweep names no best fixed K to verify against")
    return Recommendation(sweep_dir, manifest.name, manifest.compared[0].var, config, single,
                          str(saved.get("keyed_on", "running_batch")))


def _read_schedule_json(path: Path) -> dict[str, Any] | None:
    try:
        found = numbers.loads(safe_files.read_bytes(path, safe_files.MANIFEST_CAP))
    except (OSError, ValueError):
        return None  # absent or torn: recompute from the measurements
    return found if isinstance(found, dict) else None


def fixed_arm_name(k: int) -> str:
    return f"K={k}"


def boundary_probes(ranges: list[list[int]]) -> list[int]:
    """The concurrencies the boundary check adds (docs/decision.md, "At the schedule's
    boundaries"): for every boundary between two ranges its last batch `hi` and the next one's
    first, `hi + 1`, and for every range between two boundaries its geometric midpoint (the cuts
    are on a log2 scale), rounded, when it lies strictly inside. Two to three cells a boundary."""
    ordered = sorted(ranges)
    probes: set[int] = set()
    for index, (lo, hi, _) in enumerate(ordered):
        if index < len(ordered) - 1:
            probes.update((hi, hi + 1))
        if 0 < index < len(ordered) - 1:
            middle = round(math.sqrt(lo * hi))
            if lo < middle < hi:
                probes.add(middle)
    return sorted(probes)


def neighbour_ks(ranges: list[list[int]]) -> list[int]:
    """The K on each side of every boundary: the fixed arms the schedule is compared with there."""
    ordered = sorted(ranges)
    if len(ordered) < 2:
        return []
    return sorted({k for _, _, k in ordered})


def probes_of(ranges: list[list[int]], k: int) -> list[int]:
    """The probes whose nearest boundary (the boundary check's rule, analysis/verification.py
    `nearest_boundary`) has K = k on one side: the cells a neighbouring fixed K is compared in.
    All probes in the odd schedule where no probe's nearest boundary borders k."""
    return _bordering(ranges, boundary_probes(ranges), k)


def _bordering(ranges: list[list[int]], probes: list[int], k: int) -> list[int]:
    """The probes whose nearest boundary has K = k on one side; all of them when none has."""
    from dspark_tui.analysis.verification import nearest_boundary

    mine = [c for c in probes if k in (nearest_boundary(ranges, float(c)) or (0, None, None))[1:]]
    return mine or probes


def prefill_probes(ranges: list[list[int]]) -> list[int]:
    """The concurrencies of the prefill probe (docs/decision.md, "Where the batch includes
    prefills"): every boundary's last batch `hi` and the next one's first, `hi + 1`."""
    ordered = sorted(ranges)
    return sorted({c for lo, hi, _ in ordered[:-1] for c in (hi, hi + 1)})


def prefill_probes_of(ranges: list[list[int]], k: int) -> list[int]:
    """The prefill probes a neighbouring fixed K = k runs: those whose nearest boundary it
    borders (`probes_of`'s rule)."""
    return _bordering(ranges, prefill_probes(ranges), k)


# The prefill probe's lengths (docs/decision.md, "Where the batch includes prefills"): prompts
# PREFILL_PROMPT_FACTOR times the probe scenario's longest, at most PREFILL_PROMPT_CAP (the
# simulator's step budget; a prompt that long is still prefilled in chunks beside the decodes);
# outputs short enough that at c = hi on average at least one request is in prefill a step.
PREFILL_PROMPT_FACTOR = 16
PREFILL_PROMPT_CAP = 8192
MAX_LEN_FLAGS = ("--max-model-len", "--context-length")


def stated_max_len(plan: Plan) -> int | None:
    """The model's max length the server command states (`--max-model-len N` for vLLM,
    `--context-length N` for SGLang, either `=`-joined); None when it states none."""
    from dspark_tui.analysis.schedule import flag_value

    argv = [str(a) for a in plan.server.command]
    for flag in MAX_LEN_FLAGS:
        value = flag_value(argv, flag)
        if value is not None and value.isdigit():
            return int(value)
    return None


def prefill_lengths(input_len: int, output_len: int, ranges: list[list[int]],
                    max_len: int | None) -> tuple[int, int]:
    """(input_len, output_len) of the prefill probe from the probe scenario's.

    Output: `hi - 1` tokens for the smallest boundary `hi`, at most the probe scenario's, and at
    least 2 (so 2 for a scenario of 1-token outputs: more than its own). A request's prefill
    takes at least one step and its decode at most one step a token, so in a closed loop of hi
    requests hi / (1 + hi - 1) = 1 of them is in prefill per step *on average* — a bound on the
    mean over steps while nothing queues and no client idles, not on any one step. Input:
    PREFILL_PROMPT_FACTOR times the probe scenario's input_len (its longest prompt), at most
    PREFILL_PROMPT_CAP and at most the stated max length less the output (exact per prompt for
    a client that sends token ids)."""
    ordered = sorted(ranges)
    smallest_hi = min((hi for _, hi, _ in ordered[:-1]), default=2)
    output = max(2, min(output_len, smallest_hi - 1))
    prompt = min(input_len * PREFILL_PROMPT_FACTOR, PREFILL_PROMPT_CAP)
    if max_len is not None:
        prompt = min(prompt, max_len - output)
    return max(1, prompt), output


def prefill_scenario_name(target: str, taken: list[str]) -> str:
    """`<probe scenario>_prefill`, shortened to a scenario name's limit and numbered when the
    plan already has a scenario of that name — as the run directory spells it (`safe_name`:
    "chat prefill" and "chat_prefill" would share one folder, which the plan refuses)."""
    on_disk = {safe_name(name) for name in taken}
    for n in range(1, len(taken) + 2):
        suffix = "_prefill" if n == 1 else f"_prefill{n}"
        name = target[:MAX_NAME_LEN - len(suffix)] + suffix
        if safe_name(name) not in on_disk:
            return name
    raise AssertionError("unreachable: more names tried than scenarios")


def probe_scenario(plan: Plan) -> str:
    """The scenario the probes are added to: the one the plan's [traffic] weighs most (the
    plan's first on a tie or without [traffic]). One scenario keeps the rerun short."""
    names = [s.name for s in plan.scenarios]
    weights = plan.traffic.scenarios if plan.traffic is not None else {}
    if not weights:
        return names[0]
    return max(names, key=lambda name: (weights.get(name, 0.0), -names.index(name)))


def verification_plan(plan: Plan, recommendation: Recommendation) -> Plan:
    """The plan with the arms `schedule` and `K=<best fixed>`, on every cell, and the fixed K on
    each side of every boundary (`K=<k>`, when not the best fixed K) on its boundaries' probes only
    (`cells`, model/plan.Arm), each with its
    speculative table (`[arms.speculative]`) given where the command says `"{speculative}"`:
    the schedule's `--speculative-config`, the fixed K's, and for a fixed K = 0 none at all, so
    its server starts without any speculative flag (upstream vLLM refuses K = 0 in every form).
    A plan that sets K through a variable (`--spec-tokens {spec_tokens}`) has that flag and any
    `--speculative-config` of its own replaced by `"{speculative}"`: vLLM's own way to set K,
    and the only one that takes a schedule."""
    from dspark_tui.analysis.schedule import without_k_flags

    if not plan.uses_speculative_tables():
        var = recommendation.compared_var
        if f"{{{var}}}" not in " ".join(plan.server.command):
            raise UserError(f"plan {plan.name!r}: server.command has no {{{var}}}, the K the "
                            f"sweep {recommendation.sweep_name} compared; verify with the sweep's "
                            f"own plan")
    schedule_config = dict(recommendation.config)
    base_config = {key: value for key, value in schedule_config.items()
                   if key != plan.kind.schedule_key}

    def fixed_config(k: int) -> dict[str, Any] | None:
        return {**base_config, "num_speculative_tokens": k} if k > 0 else None
    data = plan.model_dump()
    data["name"] = f"{plan.name}_verify"
    data["description"] = (f"verifies the K schedule of {recommendation.sweep_name} "
                           f"against its best fixed K = {recommendation.fixed_k}")
    if not plan.uses_speculative_tables():
        data["server"]["command"] = [*without_k_flags(plan.server.command,
                                                      recommendation.compared_var, plan.kind),
                                     SPECULATIVE_ARG]
    data["arms"] = [
        {"name": SCHEDULE_ARM, "speculative": schedule_config,
         "description": "the sweep's num_speculative_tokens_per_batch_size schedule"},
        {"name": fixed_arm_name(recommendation.fixed_k),
         "speculative": fixed_config(recommendation.fixed_k),
         "description": "the sweep's best fixed K for the plan's traffic"},
    ]
    ranges = recommendation.ranges
    probes = boundary_probes(ranges)
    target = probe_scenario(plan)
    prefill = (prefill_scenario_name(target, [s.name for s in plan.scenarios])
               if prefill_probes(ranges) else None)
    for k in neighbour_ks(ranges):
        if k != recommendation.fixed_k:
            # Only the cells the boundary check compares it in (docs/decision.md).
            cells = {target: probes_of(ranges, k)}
            if prefill is not None:
                cells[prefill] = prefill_probes_of(ranges, k)
            data["arms"].append({"name": fixed_arm_name(k), "speculative": fixed_config(k),
                                 "description": "the K on one side of a schedule boundary",
                                 "cells": cells})
    if probes:
        for scenario in data["scenarios"]:
            if scenario["name"] == target:
                grid = sorted({*scenario["concurrencies"], *probes})
                counts = scenario["num_prompts"]
                if isinstance(counts, list):  # one count a concurrency: a probe gets the largest
                    given = dict(zip(scenario["concurrencies"], counts, strict=True))
                    scenario["num_prompts"] = [given.get(c, max(counts)) for c in grid]
                scenario["concurrencies"] = grid
    if prefill is not None:
        data["scenarios"].append(_prefill_scenario(plan, target, prefill, ranges))
    return Plan.model_validate(data)


def _prefill_scenario(plan: Plan, target: str, name: str,
                      ranges: list[list[int]]) -> dict[str, Any]:
    """The prefill probe: the probe scenario's prompt count, long prompts of random token ids and
    short outputs (`prefill_lengths`), exact (`range_ratio = 1`: lengths are drawn in [L * r, L])
    whatever the plan's dataset and range, at every boundary's hi and hi + 1."""
    source = next(s for s in plan.scenarios if s.name == target)
    input_len, output_len = prefill_lengths(source.input_len, source.output_len, ranges,
                                            stated_max_len(plan))
    scenario = source.model_dump()
    scenario.pop("category", None)
    scenario.update(name=name, input_len=input_len, output_len=output_len, range_ratio=1.0,
                    concurrencies=prefill_probes(ranges), dataset="random-ids",
                    dataset_path=None)
    if isinstance(source.num_prompts, list):  # one count a concurrency: the largest for each
        scenario["num_prompts"] = max(source.num_prompts)
    return scenario


def verification_record(recommendation: Recommendation, plan: Plan | None = None) -> Verification:
    """What run.json keeps about the verified sweep, so the report stands on its own: with the
    boundary probes that are not in the plan's own grid (`plan` is the plan before the probes;
    None: a record without the boundary check's fields, as before it)."""
    if plan is None:
        return Verification(sweep=str(recommendation.sweep.resolve()),
                            sweep_name=recommendation.sweep_name, schedule=recommendation.ranges,
                            keyed_on=recommendation.keyed_on, fixed_k=recommendation.fixed_k,
                            schedule_arm=SCHEDULE_ARM,
                            fixed_arm=fixed_arm_name(recommendation.fixed_k))
    ks = sorted({recommendation.fixed_k, *neighbour_ks(recommendation.ranges)})
    target = probe_scenario(plan)
    grid = next(s.concurrencies for s in plan.scenarios if s.name == target)
    probes = [c for c in boundary_probes(recommendation.ranges) if c not in grid]
    prefill = prefill_probes(recommendation.ranges)
    source = next(s for s in plan.scenarios if s.name == target)
    lengths = prefill_lengths(source.input_len, source.output_len, recommendation.ranges,
                              stated_max_len(plan)) if prefill else (None, None)
    return Verification(sweep=str(recommendation.sweep.resolve()),
                        sweep_name=recommendation.sweep_name, schedule=recommendation.ranges,
                        keyed_on=recommendation.keyed_on, fixed_k=recommendation.fixed_k,
                        schedule_arm=SCHEDULE_ARM, fixed_arm=fixed_arm_name(recommendation.fixed_k),
                        probe_scenario=target if boundary_probes(recommendation.ranges) else None,
                        probes=probes, fixed_arms={fixed_arm_name(k): k for k in ks},
                        prefill_scenario=prefill_scenario_name(
                            target, [s.name for s in plan.scenarios]) if prefill else None,
                        prefill_probes=prefill, prefill_input_len=lengths[0],
                        prefill_output_len=lengths[1])


def plan_to_run(plan: Plan, verify: Path | None, arms: list[str] | None,
                scenarios: list[str] | None) -> tuple[Plan, Verification | None]:
    """The plan a new run runs: narrowed by --arms/--scenarios, or with --verify the two
    verification arms (on the plan's grid, narrowed by --scenarios) and run.json's record."""
    if verify is None:
        return filter_plan(plan, arms, scenarios), None
    if arms:
        raise UserError("--arms cannot be combined with --verify: its arms are the schedule and "
                        "the best fixed K")
    recommendation = read_recommendation(verify)
    narrowed = filter_plan(plan, None, scenarios)
    return (verification_plan(narrowed, recommendation),
            verification_record(recommendation, narrowed))
