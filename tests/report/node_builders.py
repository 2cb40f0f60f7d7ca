"""Measurement lists for the node tests: rounds of two or three arms over a small grid, with the
node each arm's session of a round ran on. Pure numbers, no processes.

`python -m tests.report.node_builders` rewrites tests/data/verdicts_without_nodes.json, the
verdicts of the golden cases as the code computed them before measurements carried nodes."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence

import numpy as np

from dspark_tui.analysis.verdicts import RunVerdicts, Settings, analyse_measurements
from dspark_tui.model import CellResult, CellStatus, ClientMetrics
from tests.conftest import FIXTURES

GOLDEN = FIXTURES / "verdicts_without_nodes.json"
CELLS = (("chat", 1), ("chat", 8), ("chat", 64), ("long", 1), ("long", 32))
# True log ratio of arm index 1 over arm 0 per cell (arm 2, when there is one, is arm 0 + 3 %).
TRUE = {("chat", 1): 0.18, ("chat", 8): 0.09, ("chat", 64): 0.0, ("long", 1): 0.14,
        ("long", 32): -0.03}

# node_of(arm, round, cell) -> the node that measured it (None: this machine).
NodeOf = Callable[[str, int, tuple[str, int]], "str | None"]


def no_node(arm: str, rnd: int, cell: tuple[str, int]) -> str | None:
    return None


def grid_run(rounds: int, *, arms: Sequence[str] = ("a", "b"), seed: int = 0, repeats: int = 1,
             session_sd: float = 0.01, noise_sd: float = 0.005, node_of: NodeOf = no_node,
             node_speed: dict[str, float] | None = None,
             interaction: dict[str, float] | None = None,
             cells: Sequence[tuple[str, int]] = CELLS,
             true: dict[tuple[str, int], float] | None = None) -> list[CellResult]:
    """Each arm's session of round r has its own offset (sd `session_sd`); a node multiplies
    both arms' throughput by `node_speed[node]` (a main effect) and arm index 1's by
    exp(`interaction[node]`) (a node x arm interaction)."""
    rng = np.random.default_rng(seed)
    true = TRUE if true is None else true
    node_speed, interaction = node_speed or {}, interaction or {}
    out = []
    for rnd in range(1, rounds + 1):
        offsets = {arm: rng.normal(0.0, session_sd) for arm in arms}
        for index, arm in enumerate(arms):
            for rep in range(1, repeats + 1):
                for cell in cells:
                    node = node_of(arm, rnd, cell)
                    log_level = {0: 0.0, 1: true.get(cell, 0.0), 2: 0.03}[index]
                    if index == 1:
                        log_level += interaction.get(node or "", 0.0)
                    value = (1000.0 * cell[1] ** 0.8 * node_speed.get(node or "", 1.0)
                             * math.exp(log_level + offsets[arm] + rng.normal(0.0, noise_sd)))
                    out.append(CellResult(
                        arm=arm, scenario=cell[0], concurrency=cell[1], round=rnd, repeat=rep,
                        session=f"{arm}-r{rnd}", node=node,
                        metrics=ClientMetrics(total_throughput=value, duration=10.0, completed=64)))
    return out


def golden_cases() -> dict[str, tuple[list[CellResult], list[str], Settings]]:
    """Runs without nodes that exercise every path of the analysis: a plain grid, repeats and a
    prior, three arms with adaptive rounds and a failed cell, an external arm, one round."""
    plain = grid_run(3, seed=1)
    prior = grid_run(2, seed=2, repeats=2)
    three = grid_run(4, arms=("a", "b", "c"), seed=3, session_sd=0.02)
    # Adaptive rounds 5 and 6 re-measure two cells only; one measurement of round 2 failed.
    extra = [m for m in grid_run(6, arms=("a", "b", "c"), seed=4, session_sd=0.02)
             if m.round >= 5 and (m.scenario, m.concurrency) in (("chat", 8), ("long", 32))]
    three = three + extra
    three[7] = three[7].model_copy(update={"status": CellStatus.FAILED})
    external = grid_run(3, seed=5)
    single = grid_run(1, seed=6)
    return {
        "plain": (plain, ["a", "b"], Settings(rounds=3)),
        "prior": (prior, ["a", "b"], Settings(rounds=2, prior=_prior(), prior_source="aa")),
        "adaptive": (three, ["a", "b", "c"], Settings(rounds=4, adaptive_rounds=2, tie_band=0.05)),
        "external": (external, ["a", "b"], Settings(rounds=3, prior=_prior(),
                                                     external_arms=("b",))),
        "single": (single, ["a", "b"], Settings()),
    }


def _prior():
    from dspark_tui.stats.paired import SessionPrior

    return SessionPrior(0.012, 4)


def verdict_json(verdicts: RunVerdicts) -> dict[str, object]:
    data = verdicts.to_json()
    return {"pairs": data["pairs"], "noise": data["noise"], "cells": data["cells"]}


def golden() -> dict[str, object]:
    return {name: verdict_json(analyse_measurements(ms, arms, settings))
            for name, (ms, arms, settings) in golden_cases().items()}


if __name__ == "__main__":
    GOLDEN.write_text(json.dumps(golden(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN}")
