"""Does our native client measure what sglang.bench_serving measures, at no more CPU?

Against one simulator, the same cells (same seed, lengths, range ratio, prompt count) are run
by our native driver (A) and by the peer, sglang.bench_serving (B), interleaved A B A B, at
concurrency 1, 32 and 128. Printed per concurrency, as ratios measured in this one run:

- Total tok/s native/peer          target >= 0.98
- mean TTFT and mean TPOT ratios   target within 5 % (1.00 +/- 0.05)
- client CPU seconds per 1,000 output tokens, each side   target: ours <= the peer's

CPU is counted over the benchmark phase only: ours is getrusage around the driver's run (prompt
generation included); the peer's is psutil's cpu_times of its process between the line it
prints when warmup ends and the line that opens its result block (its startup, imports and
dataset preparation excluded, its metric computation included).

The peer is sglang 0.5.3 from PyPI (pure Python, runs without torch), installed into a
separate venv and run by file path, with a small word-level tokenizer built here so that
`--dataset-name random-ids` decodes to words the simulator counts as one token each:

    python bench/client_vs_sglang.py --setup-peer /tmp/dspark-peer   # once (pip, a few minutes)
    python bench/client_vs_sglang.py --peer /tmp/dspark-peer         # the comparison
    python bench/client_vs_sglang.py --quick                         # our side only (a test)

`--dataset-name random --dataset-path SHAREGPT.json` compares the seed's dataset on both sides:
ours prepares its prompts through the simulator's /tokenize (engine/datasets) before the timed
phase and sends text, as the peer does; the peer's word-level tokenizer knows no ShareGPT word, so
its prompts are runs of `[UNK]`, one simulator token each, at the same drawn lengths.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table, simulator

from dspark_tui.engine.datasets.prepare import prepare_keys, set_key
from dspark_tui.engine.datasets.prompts import DEFAULT_VOCAB_SIZE
from dspark_tui.engine.drivers import DriverContext
from dspark_tui.engine.drivers.native import NativeDriver, warmup
from dspark_tui.model import BenchConfig, CellKey, CellSpec
from dspark_tui.results.importers import import_sglang_jsonl

PEER_VERSION = "0.5.3"
PEER_DEPS = ["aiohttp", "numpy", "requests", "tqdm", "transformers<5", "tokenizers", "pillow"]
MODEL = "bench-model"
WARMUP_DONE = "Warmup completed"
RESULT_OPENS = "Serving Benchmark Result"


@dataclass
class Sample:
    side: str
    concurrency: int
    total_tok_s: float
    mean_ttft_ms: float
    mean_tpot_ms: float
    output_tokens: int
    cpu_s: float

    @property
    def cpu_per_1k(self) -> float:
        return self.cpu_s / self.output_tokens * 1000 if self.output_tokens else float("nan")


# -- the peer ------------------------------------------------------------------------------


def setup_peer(folder: Path) -> None:
    """A venv with sglang's bench_serving.py, its pure-Python deps and a local tokenizer."""
    folder.mkdir(parents=True, exist_ok=True)
    venv = folder / "venv"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, *PEER_DEPS], check=True)
    wheels = folder / "wheels"
    subprocess.run([*pip[:-2], "download", "-q", "--no-deps", "-d", str(wheels),
                    f"sglang=={PEER_VERSION}"], check=True)  # fmt: skip
    wheel = next(wheels.glob(f"sglang-{PEER_VERSION}-*.whl"))
    # Run by file path from a folder of its own, so no sibling module shadows anything.
    script = (
        "import sys, zipfile; "
        "zipfile.ZipFile(sys.argv[1]).extract('sglang/bench_serving.py', sys.argv[2])"
    )
    subprocess.run([str(python), "-c", script, str(wheel), str(folder / "src")], check=True)
    shutil.copy(folder / "src" / "sglang" / "bench_serving.py", folder / "bench_serving.py")
    build_tokenizer(python, folder / "tokenizer")
    print(f"peer ready in {folder}")


_TOKENIZER_SCRIPT = """
import sys
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
size = int(sys.argv[2])
vocab = {"[UNK]": 0, **{f"t{i}": i for i in range(1, size)}}
tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", model_max_length=10**7)
fast.save_pretrained(sys.argv[1])
assert fast.vocab_size == size, fast.vocab_size
assert fast.decode([5, 6, 7]) == "t5 t6 t7", fast.decode([5, 6, 7])
"""


def build_tokenizer(python: Path, folder: Path) -> None:
    """Word-level ids 0..V-1 ('[UNK]', 't1', ...): every word is one simulator token too."""
    subprocess.run([str(python), "-c", _TOKENIZER_SCRIPT, str(folder), str(DEFAULT_VOCAB_SIZE)],
                   check=True)  # fmt: skip


async def run_peer(peer: Path, url: str, cell: CellSpec, seed: int, out_dir: Path) -> Sample:
    host, port = url.removeprefix("http://").split(":")
    output = out_dir / f"peer_c{cell.key.concurrency}_{time.monotonic_ns()}.jsonl"
    argv = [
        str(peer / "venv" / "bin" / "python"), str(peer / "bench_serving.py"),
        "--backend", "vllm", "--host", host, "--port", port, "--model", MODEL,
        "--tokenizer", str(peer / "tokenizer"), "--dataset-name", cell.dataset,
        *(["--dataset-path", cell.dataset_path] if cell.dataset_path else []),
        "--random-input-len", str(cell.input_len), "--random-output-len", str(cell.output_len),
        "--random-range-ratio", str(cell.range_ratio), "--num-prompts", str(cell.num_prompts),
        "--max-concurrency", str(cell.key.concurrency), "--request-rate", "inf",
        "--seed", str(seed), "--warmup-requests", "1", "--output-file", str(output),
    ]  # fmt: skip
    # Unbuffered: the CPU window opens and closes on lines it prints, as it prints them.
    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "PYTHONUNBUFFERED": "1"}
    proc = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        stdin=asyncio.subprocess.DEVNULL, env={**os.environ, **env}, start_new_session=True,
    )  # fmt: skip
    watched = psutil.Process(proc.pid)
    cpu_start = cpu_end = None
    tail: list[str] = []
    assert proc.stdout is not None
    try:
        while line := (await proc.stdout.readline()).decode(errors="replace"):
            tail = [*tail[-30:], line.rstrip()]
            if cpu_start is None and WARMUP_DONE in line:
                cpu_start = _cpu(watched)
            elif cpu_end is None and RESULT_OPENS in line:
                cpu_end = _cpu(watched)
        code = await proc.wait()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    if code != 0 or cpu_start is None or cpu_end is None:
        raise RuntimeError(f"peer failed (exit {code}):\n" + "\n".join(tail))
    m = import_sglang_jsonl(output).metrics
    return Sample("peer", cell.key.concurrency, m.total_throughput or 0.0, m.mean_ttft_ms or 0.0,
                  m.mean_tpot_ms or 0.0, m.total_output_tokens or 0, cpu_end - cpu_start)  # fmt: skip


def _cpu(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return float(times.user + times.system)


# -- our side ------------------------------------------------------------------------------


def _self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def run_native(url: str, cell: CellSpec, seed: int, raw_dir: Path) -> Sample:
    port = int(url.rsplit(":", 1)[1])
    run_dir = raw_dir.parent
    ctx = DriverContext(
        base_url=url, host="127.0.0.1", port=port, served_model_name=MODEL, model_path=MODEL,
        bench=BenchConfig(driver="native", seed=seed, cell_timeout_s=600), raw_dir=raw_dir,
        run_dir=run_dir,
    )  # fmt: skip
    if cell.dataset != "random-ids":  # once per cell shape, as a run prepares them
        await prepare_keys([set_key(cell)], seed, run_dir, url, MODEL, {}, MODEL)
    await warmup(ctx, 1)  # as the peer does before its timed phase
    before = _self_cpu()
    result = await NativeDriver().run(cell, ctx, lambda progress: None)
    cpu = _self_cpu() - before
    m = result.metrics
    return Sample("native", cell.key.concurrency, m.total_throughput or 0.0, m.mean_ttft_ms or 0.0,
                  m.mean_tpot_ms or 0.0, m.total_output_tokens or 0, cpu)  # fmt: skip


# -- the comparison ------------------------------------------------------------------------


def make_cell(concurrency: int, args: argparse.Namespace) -> CellSpec:
    prompts = min(max(args.min_prompts, args.per_concurrency * concurrency), args.max_prompts)
    return CellSpec(
        key=CellKey(arm="bench", scenario="client_vs_sglang", concurrency=concurrency),
        input_len=args.input_len, output_len=args.output_len, range_ratio=args.range_ratio,
        num_prompts=prompts, dataset=args.dataset_name, dataset_path=args.dataset_path,
    )  # fmt: skip


async def compare(args: argparse.Namespace) -> list[Sample]:
    samples: list[Sample] = []
    work = Path(tempfile.mkdtemp(prefix="dspark-client-vs-sglang-"))
    if args.dataset_name == "random" and args.dataset_path is None:
        from prompt_prep import sharegpt_file

        args.dataset_path = str(sharegpt_file(work, 2000))
    try:
        with simulator(spec_tokens=3, speed=args.speed) as (url, _proc):
            for concurrency in args.concurrencies:
                cell = make_cell(concurrency, args)
                for pair in range(args.pairs):
                    a = await run_native(url, cell, args.seed, work / "raw")
                    samples.append(a)
                    line = f"c={concurrency} pair {pair + 1}: native {a.total_tok_s:,.0f} tok/s"
                    if args.peer is not None:
                        b = await run_peer(args.peer, url, cell, args.seed, work)
                        samples.append(b)
                        line += f", peer {b.total_tok_s:,.0f} tok/s"
                    print(line, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return samples


def report(samples: list[Sample], with_peer: bool) -> bool:
    """Print the table; True when every target holds (always True without the peer)."""
    rows: list[list[object]] = []
    ok = True
    for concurrency in sorted({s.concurrency for s in samples}):
        mine = [s for s in samples if s.side == "native" and s.concurrency == concurrency]
        theirs = [s for s in samples if s.side == "peer" and s.concurrency == concurrency]

        def mean(values: list[float]) -> float:
            return statistics.fmean(values) if values else float("nan")

        row: list[object] = [concurrency, len(mine), mean([s.total_tok_s for s in mine]),
                             mean([s.cpu_per_1k for s in mine])]  # fmt: skip
        if with_peer and theirs:
            # Ratios per pair (A and B ran back to back), then their mean.
            pairs = list(zip(mine, theirs, strict=False))
            tput = mean([a.total_tok_s / b.total_tok_s for a, b in pairs])
            ttft = mean([a.mean_ttft_ms / b.mean_ttft_ms for a, b in pairs])
            tpot = mean([a.mean_tpot_ms / b.mean_tpot_ms for a, b in pairs])
            cpu_peer = mean([s.cpu_per_1k for s in theirs])
            row += [mean([s.total_tok_s for s in theirs]), cpu_peer, tput,
                    mean([s.mean_ttft_ms for s in mine]), mean([s.mean_ttft_ms for s in theirs]),
                    ttft, tpot]  # fmt: skip
            ok &= tput >= 0.98 and abs(ttft - 1) <= 0.05 and abs(tpot - 1) <= 0.05
            ok &= mean([s.cpu_per_1k for s in mine]) <= cpu_peer
        rows.append(row)
    headers = ["conc", "pairs", "native tok/s", "native CPU s/1k out"]
    if with_peer:
        headers += ["peer tok/s", "peer CPU s/1k out", "tok/s ratio", "native TTFT ms",
                    "peer TTFT ms", "TTFT ratio", "TPOT ratio"]  # fmt: skip
    print_table(headers, rows)
    return ok


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="our side only, small cells")
    parser.add_argument("--setup-peer", type=Path, metavar="DIR", help="install the peer and exit")
    parser.add_argument("--peer", type=Path, metavar="DIR", help="a folder made by --setup-peer")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--concurrencies", type=lambda s: [int(x) for x in s.split(",")],
                        default=[1, 32, 128])  # fmt: skip
    parser.add_argument("--input-len", type=int, default=512)
    parser.add_argument("--output-len", type=int, default=256)
    # sglang 0.5.3 draws output lengths from [int(L*r), L] (0 possible when r*L < 1); a ratio
    # with int(L*r) >= 1 keeps both clients' draws identical.
    parser.add_argument("--range-ratio", type=float, default=0.5)
    parser.add_argument("--per-concurrency", type=int, default=4)
    parser.add_argument("--min-prompts", type=int, default=32)
    parser.add_argument("--max-prompts", type=int, default=512)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dataset-name", choices=["random-ids", "random"], default="random-ids")
    parser.add_argument("--dataset-path", default=None,
                        help="a ShareGPT JSON file (random; default: a generated one)")
    # 1: real-time modelled GPU timings, where the simulator is not the bottleneck at c=128
    # (bench/sim_capacity.py); faster speeds make client overheads a larger share of TTFT.
    parser.add_argument("--speed", type=float, default=1.0, help="simulator speed-up")
    args = parser.parse_args(argv)
    if args.quick:
        args.peer = None
        args.pairs = 1
        args.concurrencies = [1, 8]
        args.min_prompts = 8
        args.max_prompts = 16
        args.output_len = 64
        args.speed = 50.0
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.setup_peer is not None:
        setup_peer(args.setup_peer)
        return 0
    if args.peer is None and not args.quick:
        print("no --peer given: measuring our side only (see --setup-peer)", file=sys.stderr)
    samples = asyncio.run(compare(args))
    ok = report(samples, with_peer=args.peer is not None)
    print(json.dumps({"targets_met": ok}) if args.peer is not None else "peer not run")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
