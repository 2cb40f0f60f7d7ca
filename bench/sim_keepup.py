"""Did the simulator keep up with its own model during a run? served/model per arm.

For every ok measurement of a finished run against the simulator: the measured Total tok/s,
divided by the simulator's --speed, over what `dspark_tui.sim.virtual` prescribes for the same
prompts (same lengths, same seed) at that arm's K. A CPU-bound simulator serves fewer tokens than
its model, and more so for small K (more chunks per token): issue 12 asks >= 0.97 for every arm.
What the model leaves out (HTTP, the client, a cell's ramp-up) also lowers the ratio, most for
short cells, and alike for every arm; so read the spread across arms as well as the level.

    python bench/sim_keepup.py RUN_DIR             # a finished run of a simulator plan
    python bench/sim_keepup.py --quick             # runs one pass of the demo first (a test)

Exit 0 when every arm's geometric mean is within 10 % of the best arm's (no K bias), else 1.
"""

from __future__ import annotations

import argparse
import math
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, print_table

from dspark_tui.model import Plan
from dspark_tui.plans import shipped_plan_text
from dspark_tui.results import load_run
from dspark_tui.sim.estimate import sim_config
from dspark_tui.sim.virtual import sample_lengths, simulate_closed_loop

TARGET = 0.97
ARM_SPREAD = 0.10



def served_over_model(run_dir: Path) -> dict[str, list[float]]:
    run = load_run(run_dir)
    plan = Plan.model_validate(run.manifest.plan)
    specs = {cell.key: cell for cell in plan.cells()}
    configs = {arm.name: sim_config(plan, arm.name) for arm in plan.arms}  # what each arm ran
    model: dict[tuple[str, str, int], float] = {}
    ratios: dict[str, list[float]] = {}
    for m in run.measurements:
        config = configs.get(m.arm)
        if config is None or not m.ok or not m.metrics.total_throughput:
            continue
        spec = specs[m.key]
        key = (m.arm, m.scenario, m.concurrency)
        if key not in model:
            lengths = sample_lengths(spec.input_len, spec.output_len, spec.num_prompts,
                                     spec.range_ratio, plan.bench.seed)
            model[key] = simulate_closed_loop(config.engine, lengths, m.concurrency,
                                              plan.bench.seed).total_throughput
        ratios.setdefault(m.arm, []).append(m.metrics.total_throughput / config.speed / model[key])
    return ratios


def quick_run(folder: Path) -> Path:
    """The demo plan, one pass over chat_short (two cells per arm)."""
    text = shipped_plan_text("demo")
    for key, value in (("rounds", 1), ("repeats", 1), ("adaptive_rounds", 0)):
        text = re.sub(rf"^{key} = .*$", f"{key} = {value}", text, flags=re.M)
    plan = folder / "keepup.toml"
    plan.write_text(text)
    subprocess.run([sys.executable, "-m", "dspark_tui", "run", str(plan), "--headless",
                    "--scenarios", "chat_short", "--results", str(folder / "results")],
                   check=True, cwd=REPO, stdout=subprocess.DEVNULL, timeout=180)
    return next((folder / "results").glob("demo_*"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", nargs="?", type=Path)
    parser.add_argument("--quick", action="store_true", help="run one pass of the demo first, then judge it")
    args = parser.parse_args()
    if args.run_dir is None and not args.quick:
        parser.error("give a RUN_DIR, or --quick")
    with tempfile.TemporaryDirectory(prefix="dspark-keepup-") as tmp:
        run_dir = quick_run(Path(tmp)) if args.quick else args.run_dir
        ratios = served_over_model(run_dir)
    means = {arm: math.exp(sum(map(math.log, r)) / len(r)) for arm, r in ratios.items()}
    rows = [[arm, len(r), means[arm], min(r), "yes" if means[arm] >= TARGET else "no"]
            for arm, r in ratios.items()]
    print_table(["arm", "measurements", "served/model", "worst cell", f">= {TARGET}"], rows)
    spread = max(means.values()) / min(means.values()) - 1.0
    print(f"spread across arms: {spread:.1%} (no K bias when <= {ARM_SPREAD:.0%})")
    return 0 if spread <= ARM_SPREAD else 1


if __name__ == "__main__":
    raise SystemExit(main())
