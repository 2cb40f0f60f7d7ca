"""The header line of a run whose servers ran on cluster nodes (`bench.parallel`, a Slurm or
Kubernetes launcher): which node served which rounds, from the measurements' `node` field. A
run on one machine (every node None) has no such line."""

from __future__ import annotations

from dspark_tui.report.words import Texts
from dspark_tui.results.store import LoadedRun


def nodes_line(run: LoadedRun, t: Texts) -> str | None:
    rounds: dict[str, set[int]] = {}
    for m in run.measurements:
        if m.ok and m.node:
            rounds.setdefault(m.node, set()).add(m.round)
    if not rounds:
        return None
    ordered = sorted(rounds.items(), key=lambda item: (min(item[1]), item[0]))
    parts = [t("node_rounds", node=node, rounds=", ".join(map(str, sorted(served))))
             for node, served in ordered]
    return t("nodes_line", nodes=t.join(parts))
