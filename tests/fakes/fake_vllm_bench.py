"""A stand-in for `vllm bench serve` (0.33) that needs no server and no GPU.

It accepts the arguments our vllm driver passes, prints what vllm prints (the fixture's
shape: Namespace, the result block), draws a tqdm bar on stderr and, with `--save-result`,
writes `{result_dir}/{result_filename}` shaped like the real fixture (plus `spec_decode_*`
keys, as vllm adds when the server drafts). Switches, as in fake_sglang.py:

  FAKE_BENCH_MODE       ok | exit | hang | truncated | nooutput | partial
  FAKE_BENCH_COMPLETED  completed requests for `partial`
  FAKE_BENCH_STEP_S     seconds per request while drawing the bar
  FAKE_BENCH_ARGV_FILE  write argv (JSON) here
  FAKE_BENCH_PIDFILE    write the pids of this process and its hanging child here
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="vllm")
    parser.add_argument("command", choices=["bench"])
    parser.add_argument("subcommand", choices=["serve"])
    parser.add_argument("--backend", default="openai")
    parser.add_argument("--base-url")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--endpoint", default="/v1/completions")
    parser.add_argument("--model")
    parser.add_argument("--tokenizer")
    parser.add_argument("--dataset-name", default="random")
    parser.add_argument("--random-input-len", type=int, default=1024)
    parser.add_argument("--random-output-len", type=int, default=128)
    parser.add_argument("--random-range-ratio", type=float, default=0.0)
    parser.add_argument("--num-prompts", type=int, default=1000)
    parser.add_argument("--max-concurrency", type=int)
    parser.add_argument("--request-rate", default="inf")
    parser.add_argument("--ignore-eos", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--percentile-metrics")
    parser.add_argument("--metric-percentiles", default="99")
    parser.add_argument("--save-result", action="store_true")
    parser.add_argument("--result-dir")
    parser.add_argument("--result-filename")
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


def main() -> int:
    args = parse_args(sys.argv[1:])
    mode = os.environ.get("FAKE_BENCH_MODE", "ok")
    step = float(os.environ.get("FAKE_BENCH_STEP_S", "0.002"))
    if path := os.environ.get("FAKE_BENCH_ARGV_FILE"):
        with open(path, "w", encoding="utf-8") as out:
            json.dump(sys.argv[1:], out)
    print(f"Namespace({', '.join(f'{k}={v!r}' for k, v in vars(args).items())})")
    print("Starting initial single prompt test run...")
    print("Starting main benchmark run...")
    print(f"Traffic request rate: {args.request_rate}")
    print(f"Maximum request concurrency: {args.max_concurrency}", flush=True)
    total = args.num_prompts
    if mode == "hang":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        if path := os.environ.get("FAKE_BENCH_PIDFILE"):
            with open(path, "w", encoding="utf-8") as out:
                out.write(f"{os.getpid()} {child.pid}\n")
        time.sleep(600)
        return 0
    for done in range(total + 1):
        sys.stderr.write(f"\r{100 * done // total:3d}%|          | {done}/{total} [00:00<00:00]")
        sys.stderr.flush()
        if done < total:
            time.sleep(step)
    sys.stderr.write("\n")
    if mode == "exit":
        sys.stderr.write("RuntimeError: Server is not reachable: connection refused\n")
        return 2
    completed = total
    if mode == "partial":
        completed = int(os.environ.get("FAKE_BENCH_COMPLETED", str(total // 2)))
    obj = result(args, completed)
    print("{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="="))
    print("{:<40} {:<10}".format("Successful requests:", completed))
    print("{:<40} {:<10}".format("Failed requests:", total - completed))
    print("{:<40} {:<10.2f}".format("Benchmark duration (s):", obj["duration"]))
    print("{:<40} {:<10.2f}".format("Total token throughput (tok/s):", obj["total_token_throughput"]))
    print("=" * 50, flush=True)
    if mode == "nooutput" or not args.save_result:
        return 0
    text = json.dumps(obj)
    if mode == "truncated":
        text = text[: len(text) // 2]
    target = os.path.join(args.result_dir or ".", args.result_filename or "result.json")
    with open(target, "w", encoding="utf-8") as out:
        out.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
