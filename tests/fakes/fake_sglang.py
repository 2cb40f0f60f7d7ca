"""A stand-in for `python -m sglang.bench_serving` (0.5.x) that needs no server and no GPU.

It accepts sglang's arguments, prints what sglang prints (the Namespace line, the result block
on stdout, a tqdm bar on stderr) and appends a result line shaped like the real fixture's to
`--output-file`. The FAKE_BENCH_* switches of fake_bench_common.py make it fail the ways the real
one does.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run by path (runpy), not as a package
import fake_bench_common as common


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="sglang.bench_serving")
    parser.add_argument("--backend", required=True)
    parser.add_argument("--port", type=int)
    parser.add_argument("--dataset-path", default="")
    parser.add_argument("--request-rate", type=float, default=float("inf"))
    parser.add_argument("--output-file")
    parser.add_argument("--warmup-requests", type=int, default=1)
    parser.add_argument("--header", action="append")  # `Name=value`, sent with each request
    common.add_workload_args(parser, dataset="sharegpt", output_len=1024, seed=1)
    return parser.parse_args(argv)


def result_line(args: argparse.Namespace, completed: int) -> dict[str, object]:
    lo = max(int(args.random_input_len * args.random_range_ratio), 1)
    mean_in = (lo + args.random_input_len) // 2
    lo_out = max(int(args.random_output_len * args.random_range_ratio), 1)
    mean_out = (lo_out + args.random_output_len) // 2
    total_in = mean_in * completed
    total_out = mean_out * completed
    duration = 0.5 + 0.01 * completed
    line: dict[str, object] = {
        "tag": None, "backend": args.backend, "dataset_name": args.dataset_name,
        "request_rate": args.request_rate, "max_concurrency": args.max_concurrency,
        "sharegpt_output_len": None, "random_input_len": args.random_input_len,
        "random_output_len": args.random_output_len,
        "random_range_ratio": args.random_range_ratio, "server_info": None,
        "duration": duration, "completed": completed, "total_input_tokens": total_in,
        "total_input_text_tokens": total_in, "total_input_vision_tokens": 0,
        "total_output_tokens": total_out, "total_output_tokens_retokenized": total_out,
        "request_throughput": completed / duration, "input_throughput": total_in / duration,
        "output_throughput": total_out / duration,
        "total_throughput": (total_in + total_out) / duration,
    }  # fmt: skip
    base = {"e2e_latency": 30.0, "ttft": 15.0, "tpot": 0.77, "itl": 2.4}
    for name, mean in base.items():
        for stat, factor in (("mean", 1.0), ("median", 0.98), ("std", 0.05), ("p90", 1.1),
                             ("p95", 1.15), ("p99", 1.2)):  # fmt: skip
            line[f"{stat}_{name}_ms"] = mean * factor
    line.update({"concurrency": min(args.max_concurrency or completed, completed) * 0.9,
                 "accept_length": None, "max_output_tokens_per_s": 56.0,
                 "max_concurrent_requests": args.max_concurrency})  # fmt: skip
    return line


def draw_bar(done: int, total: int) -> None:
    filled = int(10 * done / total) if total else 10
    bar = "█" * filled + " " * (10 - filled)
    pct = int(100 * done / total) if total else 100
    sys.stderr.write(f"\r{pct:3d}%|{bar}| {done}/{total} [00:00<00:00, 99.00it/s]")
    sys.stderr.flush()


def main() -> int:
    args = parse_args(sys.argv[1:])
    switches = common.begin(args, echo_args=True)
    print(f"\n#Input tokens: {args.num_prompts * args.random_input_len // 2}")
    print(f"#Output tokens: {args.num_prompts * args.random_output_len // 2}")
    print("Starting warmup with 1 sequences...")
    print("Warmup completed with 1 sequences. Starting main benchmark run...", flush=True)
    if switches.mode == "hang":
        return common.hang(lambda: draw_bar(0, args.num_prompts))

    completed = switches.completed(args.num_prompts)
    common.run_bar(args.num_prompts, switches.step_s, draw_bar)
    if switches.mode == "exit":
        sys.stderr.write(
            "Traceback (most recent call last):\n"
            '  File "bench_serving.py", line 1, in <module>\n'
            "aiohttp.client_exceptions.ClientConnectorError: Cannot connect to host "
            f"{args.host}:{args.port} ssl:default [Connect call failed]\n"
        )
        return 1

    line = result_line(args, completed)
    common.print_result_block([("Backend:", args.backend), ("Successful requests:", completed),
                        ("Benchmark duration (s):", line["duration"]),
                        ("Total token throughput (tok/s):", line["total_throughput"])],
                       leading_newline=True)  # fmt: skip
    if switches.mode == "nooutput" or not args.output_file:
        return 0
    common.write_result(args.output_file, line, switches.mode, append=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
