"""The served model's vocabulary (engine/datasets/vocab.py) and the warmup that uses the cells'
datasets, against the simulator with `--vocab-size` (vLLM's out-of-vocabulary refusal)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from dspark_tui.engine.datasets.prompts import DEFAULT_VOCAB_SIZE, random_id_prompts
from dspark_tui.engine.datasets.vocab import (
    model_vocabulary,
    vocab_by_bisection,
    vocab_from_files,
    vocab_from_server,
)
from dspark_tui.engine.drivers import CellError, DriverContext
from dspark_tui.engine.drivers.native import NativeDriver, warmup
from dspark_tui.model import BenchConfig, CellKey, CellSpec
from tests.simulator import running_sim


def _ctx(url: str, tmp_path: Path, vocab_size: int | None = None) -> DriverContext:
    port = int(url.rsplit(":", 1)[1])
    return DriverContext(
        base_url=url, host="127.0.0.1", port=port, served_model_name="test-model",
        model_path="test-model", bench=BenchConfig(driver="native", seed=11, cell_timeout_s=30),
        raw_dir=tmp_path / "raw", vocab_size=vocab_size,
    )  # fmt: skip


def _cell(prompts: int = 8) -> CellSpec:
    return CellSpec(key=CellKey(arm="a", scenario="s", concurrency=2), input_len=48,
                    output_len=8, range_ratio=1.0, num_prompts=prompts)  # fmt: skip


def test_the_simulator_refuses_ids_beyond_its_vocabulary_as_vllm_does():
    """HTTP 400 when not streamed; in the stream (200, an error chunk, [DONE]) when streamed:
    the shape the native client met on real vLLM ("server error in stream: …")."""
    with running_sim("--vocab-size", "5000", speed=50) as sim:
        body = {"model": "test-model", "prompt": [4999, 5000, 7], "max_tokens": 2}
        refused = httpx.post(sim.url + "/v1/completions", json=body, timeout=10)
        assert refused.status_code == 400
        assert refused.json()["error"]["message"] == "Token id 5000 is out of vocabulary"
        streamed = httpx.post(sim.url + "/v1/completions", json={**body, "stream": True}, timeout=10)
        assert streamed.status_code == 200
        chunks = [line[6:] for line in streamed.text.splitlines() if line.startswith("data: ")]
        assert json.loads(chunks[0])["error"]["message"] == "Token id 5000 is out of vocabulary"
        assert chunks[-1] == "[DONE]"
        ok = httpx.post(sim.url + "/v1/completions", json={**body, "prompt": [4999]}, timeout=10)
        assert ok.status_code == 200
        assert httpx.post(sim.url + "/detokenize", json={"tokens": [5000]}, timeout=10).status_code == 400


async def test_the_old_fixed_vocabulary_breaks_and_the_served_one_holds(tmp_path: Path):
    """The break of issue 21, reproduced: ids up to 32,000 against a 4,096-token model fail in
    the stream; drawn below the size the server's bisection finds, every request is ok."""
    with running_sim("--vocab-size", "4096", speed=50) as sim:
        found = await vocab_from_server(sim.url, "test-model", {})
        assert found is not None and found.size == 4096 and found.source == "server"
        old = await NativeDriver().run(_cell(), _ctx(sim.url, tmp_path), lambda p: None)
        assert old.metrics.completed < 8  # the ids of 7 in 8 offsets lie beyond 4,096
        assert "first: server error in stream: Token id" in old.provenance.notes[0]
        assert "is out of vocabulary" in old.provenance.notes[0]
        result = await NativeDriver().run(_cell(), _ctx(sim.url, tmp_path, found.size), lambda p: None)
        assert result.metrics.completed == 8
        with pytest.raises(CellError, match=r"warmup: \d+ of 6 requests failed; first: server error"):
            await warmup(_ctx(sim.url, tmp_path), 6, [_cell()])
        await warmup(_ctx(sim.url, tmp_path, found.size), 6, [_cell()])


async def test_a_server_without_a_bound_leaves_the_default_after_one_probe(tmp_path: Path):
    with running_sim(speed=50) as sim:
        assert await vocab_from_server(sim.url, "test-model", {}) is None
        record = await model_vocabulary(str(tmp_path / "absent"), sim.url, "test-model", {})
        assert (record.size, record.source) == (DEFAULT_VOCAB_SIZE, "default")


async def test_bisection_finds_every_bound_and_counts_its_probes():
    for bound in (2, 1023, 1024, 1025, 32000, 151_936, 262_144):
        async def probe(token_id: int, bound: int = bound) -> bool:
            return token_id < bound
        size, probes = await vocab_by_bisection(probe)
        assert size == bound
        assert probes <= 2 + 2 * 19  # the no-bound probe, id 1, doubling, halving
    async def unsure(token_id: int) -> bool | None:
        return None if token_id > 5000 else True
    assert (await vocab_by_bisection(unsure))[0] is None


def test_the_model_files_say_the_size_sglang_draws_from(tmp_path: Path):
    """tokenizer.json's model vocabulary (transformers' `vocab_size`, without added tokens)
    before config.json's padded embedding size; config.json alone, under text_config too."""
    vocab = {f"t{i}": i for i in range(300)}
    (tmp_path / "tokenizer.json").write_text(json.dumps({
        "model": {"type": "BPE", "vocab": vocab, "merges": []},
        "added_tokens": [{"id": 300, "content": "<eos>"}]}))
    (tmp_path / "config.json").write_text(json.dumps({"vocab_size": 320}))
    found = vocab_from_files(str(tmp_path))
    assert found is not None and (found.size, found.source) == (300, "tokenizer.json")
    (tmp_path / "tokenizer.json").unlink()
    found = vocab_from_files(str(tmp_path))
    assert found is not None and (found.size, found.source) == (320, "config.json")
    (tmp_path / "config.json").write_text(json.dumps({"text_config": {"vocab_size": 262_144}}))
    found = vocab_from_files(str(tmp_path))
    assert found is not None and found.size == 262_144
    assert vocab_from_files(str(tmp_path / "missing")) is None


def test_random_ids_stay_below_the_vocabulary_and_keep_sglangs_draws():
    """The default size draws exactly what it drew before (sglang's draws for a 32,000 vocab)."""
    assert random_id_prompts(64, 8, 0.5, 6, 3) == random_id_prompts(64, 8, 0.5, 6, 3, DEFAULT_VOCAB_SIZE)
    small = random_id_prompts(512, 8, 1.0, 20, 3, vocab_size=300)
    assert max(max(p.token_ids) for p in small) < 300
