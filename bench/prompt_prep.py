"""What preparing a text dataset's prompts costs a run: the demo plan with `jsonl` (the shipped
prompts) and with `random` (a ShareGPT-shaped file), tokenized by a simulator's /tokenize.

Printed per dataset: prompt sets and prompts prepared, wall and client CPU seconds for the whole
plan (once per run, after the first server is ready), the prompts/ folder's size, and the time
to load the largest set before a cell (every measurement does it, outside its timed part).

    python bench/prompt_prep.py            # ShareGPT-shaped file of 20,000 conversations
    python bench/prompt_prep.py --quick    # 2,000 conversations, the demo's first scenario (a test)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table, simulator

from dspark_tui.engine.checks.setup import filter_plan
from dspark_tui.engine.datasets import load_prompt_set, prepare_prompt_sets
from dspark_tui.engine.datasets.prepare import needs_preparing, set_key
from dspark_tui.model import parse_plan
from dspark_tui.plans import shipped_plan_text

_SENTENCE = ("the draft model proposes tokens and the target model verifies them in one pass so "
             "accepted tokens cost little while rejected ones waste a step of work on the GPU")
WORDS = _SENTENCE.split(" ")


def sharegpt_file(folder: Path, conversations: int) -> Path:
    """Conversations of 5 to 400 words a turn, as ShareGPT's are mostly short with a long tail."""
    rng = random.Random(0)

    def turn() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(int(5 + rng.paretovariate(1.2) * 20) % 400))

    data = [{"id": str(i), "conversations": [{"from": "human", "value": turn()},
                                             {"from": "gpt", "value": turn()}]}
            for i in range(conversations)]
    path = folder / "sharegpt.json"
    path.write_text(json.dumps(data))
    return path


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def measure(url: str, dataset: str, path: Path | None, folder: Path,
                  scenarios: list[str] | None) -> list[object]:
    keys = f'driver = "native"\ndataset = "{dataset}"' + (f'\ndataset_path = "{path}"' if path else "")
    text = (shipped_plan_text("demo").replace('driver = "native"', keys)
            .replace('model = "demo/DeepSeek-V4-Flash-DSpark-sim"', 'model = "bench-model"'))
    plan = filter_plan(parse_plan(text, "demo"), None, scenarios)
    run_dir = folder / f"run-{dataset}"
    run_dir.mkdir()
    wall, cpu = time.perf_counter(), _cpu()
    records = await prepare_prompt_sets(plan, run_dir, url, {})
    wall, cpu = time.perf_counter() - wall, _cpu() - cpu
    size = sum(p.stat().st_size for p in (run_dir / "prompts").iterdir())
    largest = max((c for c in plan.cells() if c.dataset != "random-ids"),
                  key=lambda c: c.num_prompts * c.input_len)
    load = time.perf_counter()
    prompts = load_prompt_set(run_dir, largest)
    load = time.perf_counter() - load
    total = sum(r.count for r in records)
    assert len(records) == len(needs_preparing(plan)) and len(prompts) == set_key(largest).count
    return [dataset, len(records), total, f"{wall:.2f}", f"{cpu:.2f}", f"{size / 1024:.0f}",
            f"{load * 1000:.1f}"]


async def main_async(conversations: int, scenarios: list[str] | None) -> None:
    with tempfile.TemporaryDirectory(prefix="prompt-prep-") as tmp, simulator(speed=50) as (url, _):
        folder = Path(tmp)
        sharegpt = sharegpt_file(folder, conversations)
        rows = [await measure(url, "jsonl", None, folder, scenarios),
                await measure(url, "random", sharegpt, folder, scenarios),
                await measure(url, "sharegpt", sharegpt, folder, scenarios)]
    grid = f"demo plan ({', '.join(scenarios)})" if scenarios else "demo plan"
    print(f"{grid}, ShareGPT-shaped file of {conversations} conversations")
    print_table(["dataset", "sets", "prompts", "wall s", "cpu s", "prompts/ KiB", "load ms"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    # --quick: a smoke run of the script; 72 prompts to tokenize of the whole plan's 460
    asyncio.run(main_async(2000, ["chat_short"]) if args.quick else main_async(20000, None))


if __name__ == "__main__":
    main()
