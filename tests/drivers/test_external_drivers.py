"""The sglang and vllm drivers running the fake CLIs in tests/fakes/, with the real command lines.

`python -m sglang.bench_serving` resolves to the fake through a shim package on PYTHONPATH; the
`vllm` executable is a wrapper script. Each failure mode of the real tools is exercised.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import psutil
import pytest

from dspark_tui.engine.drivers import CellError, DriverContext, make_driver
from dspark_tui.engine.drivers.external import TqdmReader
from dspark_tui.model import BenchConfig, CellKey, CellSpec
from dspark_tui.model.events import CellProgress

FAKES = Path(__file__).resolve().parent.parent / "fakes"

CELL = CellSpec(
    key=CellKey(arm="st=3", scenario="chat_short", concurrency=4),
    input_len=512, output_len=256, range_ratio=0.0, num_prompts=40,
)  # fmt: skip


def _shim(tmp_path: Path) -> Path:
    shim = tmp_path / "shim"
    (shim / "sglang").mkdir(parents=True)
    (shim / "sglang" / "__init__.py").write_text("")
    (shim / "sglang" / "bench_serving.py").write_text(
        f"import runpy\nrunpy.run_path({str(FAKES / 'fake_sglang.py')!r}, run_name='__main__')\n"
    )
    vllm = shim / "vllm"
    vllm.write_text(
        f"#!{sys.executable}\nimport runpy\n"
        f"runpy.run_path({str(FAKES / 'fake_vllm_bench.py')!r}, run_name='__main__')\n"
    )
    vllm.chmod(0o755)
    return shim


def _ctx(tmp_path: Path, driver: str, mode: str = "ok", timeout: float = 30, **env: str) -> DriverContext:
    shim = _shim(tmp_path)
    bench = BenchConfig(
        driver=driver, python=sys.executable, vllm_executable=str(shim / "vllm"),
        cell_timeout_s=timeout, seed=7, api_key="sk-secret-123",
    )  # fmt: skip
    return DriverContext(
        base_url="http://127.0.0.1:18555", host="127.0.0.1", port=18555,
        served_model_name="served-model", model_path="/models/tok", bench=bench,
        raw_dir=tmp_path / "run" / "raw" / "st_3",
        extra_env={"PYTHONPATH": str(shim), "FAKE_BENCH_MODE": mode,
                   "FAKE_BENCH_ARGV_FILE": str(tmp_path / "argv.json"), **env},
    )  # fmt: skip


async def _run(driver: str, ctx: DriverContext) -> tuple[object, list[CellProgress]]:
    progress: list[CellProgress] = []
    result = await make_driver(ctx.bench).run(CELL, ctx, progress.append)
    return result, progress


@pytest.mark.parametrize("driver", ["sglang", "vllm"])
async def test_success_gives_a_cell_result_progress_and_raw_files(tmp_path: Path, driver: str):
    ctx = _ctx(tmp_path, driver, FAKE_BENCH_STEP_S="0.01")
    result, progress = await _run(driver, ctx)
    assert result.ok and result.arm == "st=3" and result.concurrency == 4
    m = result.metrics
    assert m.completed == 40 and m.failed == 0 and m.total_throughput > 0
    assert m.mean_ttft_ms is not None and m.p99_e2e_latency_ms is not None
    # progress came from the tqdm bar on stderr, throttled, and ends complete
    counts = [p.completed for p in progress]
    assert 2 <= len(progress) < 40 and counts == sorted(counts) and counts[-1] == 40
    assert all(p.total == 40 for p in progress)
    stem = "chat_short__c4"
    log = (ctx.raw_dir / f"{stem}.log").read_text()
    assert "Serving Benchmark Result" in log and "40/40" in log
    assert result.provenance.driver == driver
    assert result.provenance.raw_output.startswith("raw/st_3/" + stem)
    assert "sk-secret-123" not in json.dumps(result.provenance.command) and "sk-secret" not in log


async def test_sglang_command_line_is_the_real_one(tmp_path: Path):
    ctx = _ctx(tmp_path, "sglang")
    ctx.bench.extra_args.extend(["--warmup-requests", "3"])
    result, _ = await _run("sglang", ctx)
    argv = json.loads((tmp_path / "argv.json").read_text())
    pairs = dict(zip(argv[::2], argv[1::2], strict=False))
    assert result.provenance.command[:3] == [sys.executable, "-m", "sglang.bench_serving"]
    assert pairs["--backend"] == "vllm" and pairs["--dataset-name"] == "random-ids"
    assert pairs["--random-input-len"] == "512" and pairs["--random-range-ratio"] == "0.0"
    assert pairs["--max-concurrency"] == "4" and pairs["--num-prompts"] == "40"
    assert pairs["--model"] == "served-model" and pairs["--tokenizer"] == "/models/tok"
    assert pairs["--seed"] == "7" and pairs["--request-rate"] == "inf"
    assert pairs["--output-file"].endswith("raw/st_3/chat_short__c4.jsonl")
    assert argv[-2:] == ["--warmup-requests", "3"]


async def test_vllm_command_line_and_spec_decode(tmp_path: Path):
    ctx = _ctx(tmp_path, "vllm")
    result, _ = await _run("vllm", ctx)
    argv = json.loads((tmp_path / "argv.json").read_text())
    assert argv[:2] == ["bench", "serve"] and "--ignore-eos" in argv and "--save-result" in argv
    pairs = dict(zip(argv[2::2], argv[3::2], strict=False))
    # sglang's [1, 512] becomes vllm's 256 +/- 0.99
    assert pairs["--random-input-len"] == "256" and pairs["--random-range-ratio"] == "0.99"
    assert pairs["--result-filename"] == "chat_short__c4.json"
    assert argv[argv.index("--temperature") + 1] == "0"  # greedy, as the native client and sglang ask
    assert result.metrics.accept_length == pytest.approx(2.86)
    assert result.metrics.p90_ttft_ms is not None  # asked for 90,95,99
    assert any("256 +/- 0.99" in n for n in result.provenance.notes)


@pytest.mark.parametrize("driver", ["sglang", "vllm"])
@pytest.mark.parametrize(
    ("mode", "expected"),
    [("exit", "exited with code"), ("nooutput", "wrote no result file"),
     ("truncated", "truncated")],
)
async def test_failures_are_one_line_cell_errors(tmp_path: Path, driver: str, mode: str, expected: str):
    ctx = _ctx(tmp_path, driver, mode)
    with pytest.raises(CellError) as info:
        await _run(driver, ctx)
    message = str(info.value)
    assert expected in message and "\n" not in message
    if mode == "exit":  # the reason carries the tool's last words
        assert "onnect" in message


@pytest.mark.parametrize("driver", ["sglang", "vllm"])
async def test_fewer_completed_is_a_result_with_failed_count(tmp_path: Path, driver: str):
    ctx = _ctx(tmp_path, driver, "partial", FAKE_BENCH_COMPLETED="30")
    result, _ = await _run(driver, ctx)
    assert result.metrics.completed == 30 and result.metrics.failed == 10
    assert any("10 of 40 requests failed" in n for n in result.provenance.notes)


@pytest.mark.parametrize("driver", ["sglang", "vllm"])
async def test_none_completed_is_a_cell_error(tmp_path: Path, driver: str):
    ctx = _ctx(tmp_path, driver, "partial", FAKE_BENCH_COMPLETED="0")
    with pytest.raises(CellError, match="no request completed"):
        await _run(driver, ctx)


def _pids(pidfile: Path) -> list[int]:
    return [int(p) for p in pidfile.read_text().split()]


def _dead(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


async def _all_gone(pids: list[int]) -> bool:
    """SIGKILL is delivered asynchronously: give the kernel a moment, then decide."""
    for _ in range(40):
        if all(_dead(pid) for pid in pids):
            return True
        await asyncio.sleep(0.05)
    return False


@pytest.mark.parametrize("driver", ["sglang", "vllm"])
async def test_hang_past_cell_timeout_kills_the_group(tmp_path: Path, driver: str):
    pidfile = tmp_path / "pids"
    ctx = _ctx(tmp_path, driver, "hang", timeout=1.5, FAKE_BENCH_PIDFILE=str(pidfile))
    started = time.monotonic()
    with pytest.raises(CellError, match=r"timed out after 1.5s"):
        await _run(driver, ctx)
    assert time.monotonic() - started < 8
    assert await _all_gone(_pids(pidfile))


@pytest.mark.parametrize("driver", ["sglang", "vllm"])
async def test_cancellation_kills_the_child_group(tmp_path: Path, driver: str):
    pidfile = tmp_path / "pids"
    ctx = _ctx(tmp_path, driver, "hang", FAKE_BENCH_PIDFILE=str(pidfile))
    task = asyncio.create_task(_run(driver, ctx))
    for _ in range(200):
        if pidfile.exists() and len(pidfile.read_text().split()) == 2:
            break
        await asyncio.sleep(0.05)
    pids = _pids(pidfile)
    assert len(pids) == 2 and not any(_dead(pid) for pid in pids)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _all_gone(pids)


async def test_missing_executable_is_a_cell_error(tmp_path: Path):
    ctx = _ctx(tmp_path, "vllm")
    ctx.bench.vllm_executable = str(tmp_path / "no-such-vllm")
    with pytest.raises(CellError, match="command not found"):
        await _run("vllm", ctx)


def test_tqdm_reader_splits_on_cr_and_bounds_its_buffer():
    seen: list[tuple[int, int]] = []
    reader = TqdmReader(lambda n, t: seen.append((n, t)))
    reader.feed(b"  0%|     | 0/20 [00:00<?, ?it/s]\r 10%|5    | 2/2")
    reader.feed(b"0 [00:01<00:02, 9it/s]\rWarning: something\n")
    reader.feed(b"x" * 100_000)
    assert seen == [(0, 20), (2, 20)]
    assert reader.tail[-1] == "Warning: something"
    assert len(reader._partial) <= 4096
    reader.close()


def test_make_driver_picks_by_name():
    assert make_driver(BenchConfig(driver="native")).name == "native"
    assert make_driver(BenchConfig(driver="sglang")).name == "sglang"
    assert make_driver(BenchConfig(driver="vllm")).name == "vllm"


