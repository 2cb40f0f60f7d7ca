"""Can the simulator serve 128 concurrent streams at --speed 1 without becoming the bottleneck?

Runs the seed's stress_standard scenario (1024/256, range ratio 0) at concurrency 128 against a
live simulator with a lean raw-socket streaming client, and compares:

- the served total token rate with what the model prescribes for the same requests
  (`dspark_tui.sim.virtual`, modelled time, no HTTP): it must stay within 5 %;
- the simulator's own CPU use (psutil, user+system over the run): it must stay below one core.

    python bench/sim_capacity.py            # full: 1024 prompts at c=128, --speed 1 (~15 s)
    python bench/sim_capacity.py --quick    # 256 prompts, a few seconds (a test runs this)

Exit status 0 when both limits hold, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table, simulator

from dspark_tui.sim.config import ModelConfig
from dspark_tui.sim.loadgen import run_closed_loop
from dspark_tui.sim.virtual import sample_lengths, simulate_closed_loop

RATE_TOLERANCE = 0.05
CPU_LIMIT_CORES = 1.0


def measure(spec_tokens: int, num_prompts: int, concurrency: int, speed: float,
            seed: int) -> dict[str, float]:
    lengths = sample_lengths(1024, 256, num_prompts, 0.0, seed)
    model = simulate_closed_loop(ModelConfig(spec_tokens=spec_tokens), lengths, concurrency, seed)
    prescribed = (model.input_tokens + model.output_tokens) / (model.duration_s / speed)
    with simulator("--seed", str(seed), spec_tokens=spec_tokens, speed=speed) as (url, proc):
        sim_process = psutil.Process(proc.pid)
        cpu_before = sim_process.cpu_times()
        client_before = psutil.Process().cpu_times()
        served = asyncio.run(run_closed_loop(url, lengths, concurrency))
        wall = served.duration_s
        cpu_after = sim_process.cpu_times()
        client_after = psutil.Process().cpu_times()
    sim_cpu = (cpu_after.user - cpu_before.user) + (cpu_after.system - cpu_before.system)
    client_cpu = ((client_after.user - client_before.user)
                  + (client_after.system - client_before.system))
    measured = (served.prompt_tokens + served.output_tokens) / wall
    return {
        "spec_tokens": spec_tokens,
        "requests": served.requests,
        "wall_s": wall,
        "chunks_per_s": served.chunks / wall,
        "served_tok_s": measured,
        "model_tok_s": prescribed,
        "rate_ratio": measured / prescribed,
        "sim_cpu_cores": sim_cpu / wall,
        "client_cpu_cores": client_cpu / wall,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="256 prompts (CI-sized)")
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--num-prompts", type=int)
    parser.add_argument("--speed", type=float, default=1.0)
    parser.add_argument("--spec-tokens", type=int, nargs="+", default=[3, 5])
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    num_prompts = args.num_prompts or (256 if args.quick else 1024)
    rows = [measure(k, num_prompts, args.concurrency, args.speed, args.seed)
            for k in args.spec_tokens]
    headers = list(rows[0])
    print(f"stress_standard 1024/256, c={args.concurrency}, {num_prompts} prompts, "
          f"--speed {args.speed}")
    print_table(headers, [[row[h] for h in headers] for row in rows])
    ok = all(abs(row["rate_ratio"] - 1) <= RATE_TOLERANCE and row["sim_cpu_cores"] < CPU_LIMIT_CORES
             for row in rows)
    print("PASS" if ok else "FAIL",
          f"(rate within {RATE_TOLERANCE:.0%} of the model, simulator below {CPU_LIMIT_CORES} core)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
