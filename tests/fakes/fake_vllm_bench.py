"""A stand-in for `vllm bench serve` (0.33) that needs no server and no GPU.

It accepts the arguments our vllm driver passes, prints what vllm prints (the fixture's
shape: Namespace, the result block), draws a tqdm bar on stderr and, with `--save-result`,
writes `{result_dir}/{result_filename}` shaped like the real fixture (plus `spec_decode_*`
keys, as vllm adds when the server drafts). The FAKE_BENCH_* switches of fake_bench_common.py
make it fail the ways the real one does.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run by path (runpy), not as a package
import fake_bench_common as common


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="vllm")
    parser.add_argument("command", choices=["bench"])
    parser.add_argument("subcommand", choices=["serve"])
    parser.add_argument("--backend", default="openai")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--endpoint", default="/v1/completions")
    parser.add_argument("--request-rate", default="inf")
    parser.add_argument("--ignore-eos", action="store_true")
    parser.add_argument("--temperature", type=float)
    parser.add_argument("--percentile-metrics")
    parser.add_argument("--metric-percentiles", default="99")
    parser.add_argument("--save-result", action="store_true")
    parser.add_argument("--result-dir")
    parser.add_argument("--result-filename")
    common.add_workload_args(parser, dataset="random", output_len=128, seed=0)
    return parser.parse_args(argv)


def result(args: argparse.Namespace, completed: int) -> dict[str, object]:
    total_in = args.random_input_len * completed
    total_out = args.random_output_len * completed
    duration = 0.5 + 0.01 * completed
    latencies = [0.028 + 0.0001 * i for i in range(completed)]
    obj: dict[str, object] = {
        "date": "20261129-164727", "endpoint_type": "openai", "backend": args.backend,
        "label": None, "model_id": args.model, "tokenizer_id": args.tokenizer,
        "num_prompts": args.num_prompts, "request_rate": args.request_rate, "burstiness": 1.0,
        "max_concurrency": args.max_concurrency, "duration": duration, "completed": completed,
        "failed": args.num_prompts - completed, "total_input_tokens": total_in,
        "total_output_tokens": total_out, "request_throughput": completed / duration,
        "request_goodput": None, "output_throughput": total_out / duration,
        "total_token_throughput": (total_in + total_out) / duration, "latencies": latencies,
        "max_output_tokens_per_s": 32.0, "max_concurrent_requests": args.max_concurrency,
    }  # fmt: skip
    percentiles = [p for p in args.metric_percentiles.split(",") if p]
    for name, mean in (("ttft", 12.75), ("tpot", 2.23), ("itl", 2.23), ("e2el", 28.3)):
        obj[f"mean_{name}_ms"] = mean
        obj[f"median_{name}_ms"] = mean * 0.99
        obj[f"std_{name}_ms"] = mean * 0.03
        for p in percentiles:
            obj[f"p{p}_{name}_ms"] = mean * (1 + float(p) / 500)
    obj.update({
        "spec_decode_acceptance_rate": 62.0, "spec_decode_acceptance_length": 2.86,
        "spec_decode_num_drafts": 5704, "spec_decode_draft_tokens": 17112,
        "spec_decode_accepted_tokens": 10616,
        "spec_decode_per_position_acceptance_rates": [0.79, 0.61, 0.46],
    })  # fmt: skip
    return obj


def draw_bar(done: int, total: int) -> None:
    sys.stderr.write(f"\r{100 * done // total:3d}%|          | {done}/{total} [00:00<00:00]")
    sys.stderr.flush()


def main() -> int:
    args = parse_args(sys.argv[1:])
    switches = common.begin(args)
    if args.temperature is None:  # what 0.33 prints then (the fixture's stdout)
        print("WARNING: vllm bench serve no longer sets temperature==0 (greedy) in requests by "
              "default. The default will be determined on the server side and can be model/API "
              "specific. For the old behavior, include --temperature=0.")
    print("Starting initial single prompt test run...")
    print("Starting main benchmark run...")
    print(f"Traffic request rate: {args.request_rate}")
    print(f"Maximum request concurrency: {args.max_concurrency}", flush=True)
    if switches.mode == "hang":
        return common.hang()
    total = args.num_prompts
    common.run_bar(total, switches.step_s, draw_bar)
    if switches.mode == "exit":
        sys.stderr.write("RuntimeError: Server is not reachable: connection refused\n")
        return 2
    completed = switches.completed(total)
    obj = result(args, completed)
    common.print_result_block([("Successful requests:", completed), ("Failed requests:", total - completed),
                        ("Benchmark duration (s):", obj["duration"]),
                        ("Total token throughput (tok/s):", obj["total_token_throughput"])])  # fmt: skip
    if switches.mode == "nooutput" or not args.save_result:
        return 0
    target = os.path.join(args.result_dir or ".", args.result_filename or "result.json")
    common.write_result(target, obj, switches.mode, append=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
