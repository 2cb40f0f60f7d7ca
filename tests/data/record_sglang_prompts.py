"""Record sglang.bench_serving 0.5.23's own prompts for tests/drivers/test_datasets_parity.py.

Not a test: run by hand, once, in a venv that has the sglang wheel (installed with --no-deps)
plus numpy, transformers<5, requests and tqdm:

    python tests/data/record_sglang_prompts.py /path/to/that/venv/bin/python

It calls sglang's `sample_random_requests` and `sample_sharegpt_requests` themselves (loaded
without `sglang/__init__.py`, which wants torch) after seeding `random` and numpy as
sglang's `run_benchmark` does, on tests/data/sharegpt_small.json, with the simulator's toy
tokenizer (dspark_tui/sim/tokenizer.py) dressed as a Hugging Face tokenizer: the same tokenizer
the simulator serves on /tokenize, which the test's native preparation asks. The token ids sglang
decodes are captured, and written with the lengths to sglang_0.5.23_prompts.json.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
OUT = HERE / "sglang_0.5.23_prompts.json"
SHAREGPT = HERE / "sharegpt_small.json"
# (dataset, input_len, output_len, range_ratio, num_prompts, seed)
CASES = [
    ("random", 64, 32, 0.5, 20, 1),
    ("random", 300, 48, 0.0, 40, 7),
    ("sharegpt", 0, 0, 0.0, 30, 3),
]

_PEER = r'''
import importlib.util, json, os, random, sys, types
import numpy as np
site = os.path.dirname(importlib.util.find_spec("sglang").origin)
for name, sub in [("sglang", ""), ("sglang.benchmark", "benchmark"),
                  ("sglang.benchmark.datasets", "benchmark/datasets")]:
    module = types.ModuleType(name)
    module.__path__ = [os.path.join(site, sub)]
    sys.modules[name] = module
from importlib.metadata import version
from sglang.benchmark.datasets.random import sample_random_requests
from sglang.benchmark.datasets.sharegpt import sample_sharegpt_requests
sys.path.insert(0, sys.argv[1])
from dspark_tui.sim import tokenizer as toy

class Toy:
    """What sglang calls of a Hugging Face tokenizer, answered by the simulator's tokenizer."""
    def __init__(self):
        self.decoded = []
    def encode(self, text):
        return toy.encode(text, add_special_tokens=True)
    def decode(self, ids):
        self.decoded.append(list(ids))
        return toy.decode(list(ids))
    def num_special_tokens_to_add(self):
        return toy.num_special_tokens_to_add()

cases, sharegpt = json.loads(sys.argv[2]), sys.argv[3]
out = {"sglang": version("sglang"), "sharegpt_file": "sharegpt_small.json", "cases": []}
for dataset, input_len, output_len, ratio, count, seed in cases:
    random.seed(seed)       # as run_benchmark seeds, before the dataset is read
    np.random.seed(seed)
    tok = Toy()
    if dataset == "random":
        rows = sample_random_requests(input_len, output_len, count, ratio, tok, sharegpt,
                                      random_sample=True, return_text=True)
        ids = tok.decoded
    else:
        rows = sample_sharegpt_requests(sharegpt, count, tok)
        ids = [toy.encode(r.prompt, add_special_tokens=True) for r in rows]
    out["cases"].append({
        "dataset": dataset, "input_len": input_len, "output_len": output_len,
        "range_ratio": ratio, "num_prompts": count, "seed": seed,
        "prompts": [{"token_ids": i, "text": r.prompt, "prompt_len": int(r.prompt_len),
                     "output_len": int(r.output_len)} for i, r in zip(ids, rows)],
    })
print(json.dumps(out, ensure_ascii=False))
'''


def main() -> None:
    python = sys.argv[1]
    done = subprocess.run([python, "-c", _PEER, str(ROOT), json.dumps(CASES), str(SHAREGPT)],
                          check=True, capture_output=True, text=True)
    last = done.stdout.strip().splitlines()[-1]
    OUT.write_text(json.dumps(json.loads(last), ensure_ascii=False, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
