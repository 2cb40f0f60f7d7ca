"""The native client's raw output stays small, and re-reading it gives the numbers the cell saved.

Real cells against the simulator; the files on disk are read back through the importer.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dspark_tui.engine.drivers import DriverContext
from dspark_tui.engine.drivers.native import NativeDriver
from dspark_tui.model import BenchConfig, CellKey, CellResult, CellSpec
from dspark_tui.results.importers import cell_from_native_raw, import_result_file
from dspark_tui.results.native_raw import (
    NativeRaw,
    NativeRawError,
    from_measurement,
    native_metrics,
    read_native_raw,
)
from tests.simulator import running_sim

RUN = "run"


def _ctx(url: str, tmp_path: Path, keep_itl: bool) -> DriverContext:
    return DriverContext(
        base_url=url, host="127.0.0.1", port=int(url.rsplit(":", 1)[1]), served_model_name="test-model",
        model_path="test-model", bench=BenchConfig(driver="native", seed=5, keep_itl=keep_itl),
        raw_dir=tmp_path / RUN / "raw" / "st_3__r1p1",
    )  # fmt: skip


def _cell(scenario: str, output_len: int, prompts: int = 16) -> CellSpec:
    return CellSpec(key=CellKey(arm="st=3", scenario=scenario, concurrency=4), input_len=64,
                    output_len=output_len, range_ratio=1.0, num_prompts=prompts)  # fmt: skip


def _write_version_1(path: Path, raw: NativeRaw) -> None:
    """The raw file as dspark-tui wrote it before version 2: every gap on its request's line."""
    assert raw.itl_us is not None
    ends = np.cumsum([r.itl_count for r in raw.requests])
    lines = []
    for request, end in zip(raw.requests, ends, strict=True):
        line = request.as_json()
        del line["itl_n"]
        gaps = raw.itl_us[end - request.itl_count : end]
        line["itl_s"] = [round(int(us) / 1e6, 6) for us in gaps]
        lines.append(json.dumps(line, separators=(",", ":")) + "\n")
    path.write_text("".join(lines))


async def test_reanalysis_gives_the_saved_cell_from_reduced_full_and_old_raw_files(tmp_path: Path):
    cell = _cell("decode_heavy", output_len=96)
    with running_sim(speed=5) as sim:  # slow enough for a chunk a step
        result = await NativeDriver().run(cell, _ctx(sim.url, tmp_path, keep_itl=True), lambda p: None)
    run_dir = tmp_path / RUN
    raw_path = run_dir / result.provenance.raw_output
    assert sorted(p.name for p in raw_path.parent.iterdir()) == [
        "decode_heavy__c4.itl.npz", "decode_heavy__c4.jsonl"]
    saved = result.model_dump_json()

    # the reduced file alone: the header's ITL summary, taken from the full data when written
    reduced = read_native_raw(raw_path)
    assert reduced.itl_us is not None and reduced.itl_count > 16 * 5
    reduced.itl_us = None
    assert result.model_copy(update={"metrics": native_metrics(reduced)}).model_dump_json() == saved
    assert cell_from_native_raw(CellResult.model_validate_json(saved), run_dir).model_dump_json() == saved

    # the kept ITLs, summarised again
    full = read_native_raw(raw_path)
    assert full.itl_us is not None
    again = from_measurement(full.requests, result.metrics.duration, full.itl_us)
    assert result.model_copy(update={"metrics": native_metrics(again)}).model_dump_json() == saved

    # an old run's file (version 1: every gap inline, no duration) still reads, to the same numbers
    old = run_dir / "raw" / "old__c4.jsonl"
    _write_version_1(old, full)
    cell_v1 = result.model_copy(update={"provenance": result.provenance.model_copy(
        update={"raw_output": "raw/old__c4.jsonl"})})
    assert cell_from_native_raw(cell_v1, run_dir).metrics == result.metrics
    imported = import_result_file(old)  # no cell at hand: the duration is the requests' span
    assert imported.metrics.total_output_tokens == result.metrics.total_output_tokens
    assert imported.metrics.mean_itl_ms == result.metrics.mean_itl_ms
    assert imported.metrics.duration == pytest.approx(result.metrics.duration, rel=0.2)
    assert "duration taken as the requests' span" in imported.provenance.notes


async def test_raw_bytes_per_request_do_not_grow_with_the_output(tmp_path: Path):
    with running_sim(speed=5) as sim:
        ctx = _ctx(sim.url, tmp_path, keep_itl=False)
        short = await NativeDriver().run(_cell("short", output_len=16), ctx, lambda p: None)
        long = await NativeDriver().run(_cell("long", output_len=400), ctx, lambda p: None)
    run_dir = tmp_path / RUN
    assert [p.name for p in ctx.raw_dir.iterdir() if p.suffix == ".npz"] == []  # not asked to keep
    sizes = {r.scenario: (run_dir / r.provenance.raw_output).stat().st_size for r in (short, long)}
    assert long.metrics.total_output_tokens > 20 * short.metrics.total_output_tokens
    bound = 16 * 250 + 600  # a line a request, and the header
    assert sizes["long"] < bound, sizes
    gaps = read_native_raw(run_dir / long.provenance.raw_output).itl_count
    assert gaps * 8 > bound  # version 1 spent 8-9 bytes a gap: it would not have fitted
    assert sizes["long"] < 1.2 * sizes["short"], sizes
    for result in (short, long):
        assert cell_from_native_raw(result, run_dir).metrics == result.metrics


def _header(**changes: object) -> str:
    header = {"format": "dspark-tui native raw", "version": 2, "duration_s": 1.0, "requests": 0,
              "itl_count": 0, "itl_summary_s": None, "itl_file": None, **changes}
    return json.dumps(header) + "\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", r"x\.jsonl: empty raw file"),
        (_header(version=99), r"x\.jsonl:1: raw file version 99 was written by a newer dspark-tui"),
        (_header() + '{"i": 0, "input_tokens": 1}\n', r"x\.jsonl:2: request line without an 'itl_n'"),
        (_header() + '{"i": 0, "itl_n": 1', r"x\.jsonl:2: not a JSON line"),
        (_header(itl_file="x.itl.npz"), r"x\.itl\.npz: cannot read the kept ITLs"),
    ],
)
def test_an_unusable_raw_file_is_one_line_naming_it(tmp_path: Path, text: str, message: str):
    path = tmp_path / "x.jsonl"
    path.write_text(text)
    with pytest.raises(NativeRawError, match=message) as info:
        read_native_raw(path)
    assert "\n" not in str(info.value)
