"""What do rounds in parallel (`[bench] parallel = 2`) save in wall time, and do they move what
is measured? Peer: the same plan with its rounds one at a time (`parallel = 1`), in the same run,
the order of the two alternated from repetition to repetition.

Both run through the fake Slurm of tests/fakes with two "nodes" (127.0.0.2 and 127.0.0.3), each
a simulator on this machine. On a real cluster the nodes share nothing; here they share this
machine's cores, so the Total tok/s ratio (parallel / serial) is also a check that the two lanes'
simulators did not slow each other down (target ≥ 0.97 per arm), and the wall-time ratio is
what this box gives, a cluster's being better. The K=5 / K=3 margin, the thing a run decides,
must come out the same either way (within 2 points).

    python bench/parallel_rounds.py [--quick] [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run by path, beside _common.py
from _common import REPO, free_port, print_table

FAKE_SLURM = REPO / "tests" / "fakes" / "fake_slurm.py"
NODES = "127.0.0.2,127.0.0.3"


def plan_text(port: int, parallel: int, concurrencies: list[int], output_len: int) -> str:
    return f"""name = "par{parallel}"
model = "bench-model"
backend_label = "simulator"

[server]
command = ["{{python}}", "-m", "dspark_tui.sim", "serve", "{{model}}", "--host", "{{host}}",
           "--port", "{{port}}", "--spec-tokens", "{{spec_tokens}}", "--speed", "4"]
launcher = "slurm"
port = {port}
startup_timeout_s = 30
stop_timeout_s = 5

[server.slurm]
gres = "gpu:8"

[[arms]]
name = "st=3"
vars = {{ spec_tokens = 3 }}

[[arms]]
name = "st=5"
vars = {{ spec_tokens = 5 }}

[bench]
driver = "native"
warmup_requests = 0
cell_timeout_s = 60
scrape_interval_s = 0.5
rounds = 2
adaptive_rounds = 0
parallel = {parallel}

[[scenarios]]
name = "chat"
input_len = 128
output_len = {output_len}
range_ratio = 1.0
concurrencies = {concurrencies}
num_prompts = {{ per_concurrency = 2, min = 4 }}
"""


def fake_cluster(folder: Path) -> dict[str, str]:
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    for tool in ("srun", "squeue", "scancel", "scontrol"):
        wrapper = bin_dir / tool
        wrapper.write_text(f'#!/bin/sh\nFAKE_SLURM_TOOL={tool} exec "{sys.executable}" '
                           f'"{FAKE_SLURM}" "$@"\n')
        wrapper.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "FAKE_SLURM_DIR": str(folder / "slurm"), "FAKE_SLURM_NODES": NODES,
            "DSPARK_CONFIG_DIR": "/nonexistent-dspark-config"}


def one_run(folder: Path, env: dict[str, str], parallel: int, concurrencies: list[int],
            output_len: int) -> tuple[float, dict[str, float], float]:
    """(wall seconds, mean Total tok/s per arm, st=5/st=3 ratio of the geometric means)."""
    plan = folder / f"plan{parallel}.toml"
    plan.write_text(plan_text(free_port(), parallel, concurrencies, output_len))
    results = folder / f"results{parallel}"
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "dspark_tui", "run", str(plan), "--headless",
                           "--results", str(results), "--lang", "en"], env=env,
                          capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"parallel={parallel} run failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    (run_dir,) = results.iterdir()
    analysis = json.loads((run_dir / "analysis.json").read_text())
    per_arm = {c["arm"]: [] for c in analysis["cells"]}
    for cell in analysis["cells"]:
        per_arm[cell["arm"]].append(cell["mean"])
    ratios = [p["ratio"] for p in analysis["pairs"]]
    ratio = statistics.geometric_mean(ratios)
    subprocess.run(["rm", "-rf", str(results)], check=True)
    return wall, {arm: statistics.mean(v) for arm, v in per_arm.items()}, ratio


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one small repetition (smoke run)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    repeats = 1 if args.quick else args.repeats
    concurrencies, output_len = ([1, 4], 128) if args.quick else ([1, 4, 16], 512)
    walls: dict[int, list[float]] = {1: [], 2: []}
    tok_s: dict[int, list[dict[str, float]]] = {1: [], 2: []}
    margin: dict[int, list[float]] = {1: [], 2: []}
    with tempfile.TemporaryDirectory(prefix="bench-parallel-") as tmp:
        env = fake_cluster(Path(tmp))
        for rep in range(repeats):
            for parallel in ((1, 2) if rep % 2 == 0 else (2, 1)):
                wall, per_arm, ratio = one_run(Path(tmp), env, parallel, concurrencies, output_len)
                walls[parallel].append(wall)
                tok_s[parallel].append(per_arm)
                margin[parallel].append(ratio)
    rows = []
    for parallel in (1, 2):
        arms = tok_s[parallel][0]
        rows.append([f"parallel={parallel}", statistics.median(walls[parallel]),
                     *(statistics.median(r[arm] for r in tok_s[parallel]) for arm in arms),
                     statistics.median(margin[parallel])])
    print(f"{repeats} repetition(s), 2 rounds x 2 arms x {len(concurrencies)} cells, "
          f"fake Slurm nodes {NODES}; medians")
    print_table(["run", "wall s", *(f"{arm} tok/s" for arm in tok_s[1][0]), "st=5/st=3"], rows)
    wall_ratio = rows[1][1] / rows[0][1]
    tok_ratios = [rows[1][2 + i] / rows[0][2 + i] for i in range(len(tok_s[1][0]))]
    margin_shift = (rows[1][-1] - rows[0][-1]) * 100
    print(f"wall parallel/serial {wall_ratio:.2f}; Total tok/s parallel/serial "
          + ", ".join(f"{r:.3f}" for r in tok_ratios)
          + f"; margin shift {margin_shift:+.1f} points")
    return 0


if __name__ == "__main__":
    sys.exit(main())
