"""Acceptance that depends on the prompt: the simulator recognises a category's prompts and
draws their drafts from the category's profile, so per-category cells measure it back."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import httpx
import pytest

from dspark_tui.engine.datasets import DatasetError, load_prompt_set
from dspark_tui.engine.datasets.files import category_lines, read_prompt_lines
from dspark_tui.engine.datasets.prepare import prepare_keys, set_key
from dspark_tui.engine.datasets.prompts import PromptSpec
from dspark_tui.model import CellKey, CellSpec
from dspark_tui.model.prompt_file import BUILTIN_PROMPT_FILE, PromptFileError, read_prompt_file
from dspark_tui.sim.config import DEFAULT_ACCEPTANCE, ModelConfig
from dspark_tui.sim.content import (
    ContentAcceptance,
    ProfileError,
    parse_accept_profile,
    scaled_acceptance,
)
from dspark_tui.sim.virtual import sample_lengths, simulate_closed_loop
from tests.sim._client import metric_values
from tests.simulator import running_sim

PROFILE = "code=0.95,chat=0.55"
K = 3


def _expected_per_position(first: float, k: int) -> list[float]:
    """Unconditional rate of draft position i: every earlier position accepted too."""
    rates, reach = [], 1.0
    for p in scaled_acceptance(first, DEFAULT_ACCEPTANCE)[:k]:
        reach *= p
        rates.append(reach)
    return rates


def test_a_rate_moves_the_base_curve_and_a_list_is_taken_as_written(tmp_path: Path):
    profiles = parse_accept_profile("code=0.99, chat=0.45", DEFAULT_ACCEPTANCE)
    assert profiles["code"][0] == 0.99 and profiles["chat"][0] == 0.45
    assert profiles["chat"][1] == pytest.approx(0.45 * 0.85 / 0.90)
    assert max(profiles["code"]) <= 1.0 and list(profiles["code"]) == sorted(profiles["code"], reverse=True)
    toml_file = tmp_path / "profile.toml"
    toml_file.write_text('code = [0.97, 0.9]\nchat = 0.6\n')
    from_file = parse_accept_profile(str(toml_file), DEFAULT_ACCEPTANCE)
    assert from_file["code"] == (0.97, 0.9) and from_file["chat"][0] == 0.6
    json_file = tmp_path / "profile.json"
    json_file.write_text(json.dumps({"structured": 0.8}))
    assert parse_accept_profile(str(json_file), DEFAULT_ACCEPTANCE)["structured"][0] == 0.8


@pytest.mark.parametrize("text, says", [
    ("code=1.2", "--accept-profile code: a rate in [0, 1]"),
    ("code", "'code' is not CATEGORY=RATE"),
    ("code=fast", "a rate in [0, 1] or a list of them, got 'fast'"),
    ("missing.toml", "cannot read missing.toml"),
])
def test_a_bad_profile_is_one_line_naming_it(text: str, says: str):
    with pytest.raises(ProfileError) as caught:
        parse_accept_profile(text, DEFAULT_ACCEPTANCE)
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_a_bad_prompt_file_line_is_named(tmp_path: Path):
    bad = tmp_path / "prompts.jsonl"
    bad.write_text('{"prompt": "fine words here", "category": "chat"}\n{"category": "code"}\n')
    with pytest.raises(PromptFileError, match=r"prompts.jsonl:2: prompt: required, a non-empty string"):
        read_prompt_file(bad)
    with pytest.raises(DatasetError,
                       match=r"no prompt of category 'poetry'.*chat, code, math, structured, summar"):
        category_lines(read_prompt_lines(BUILTIN_PROMPT_FILE), "poetry", BUILTIN_PROMPT_FILE)


def test_unknown_prompts_keep_the_base_acceptance_and_spacing_does_not_matter():
    entries = read_prompt_file(BUILTIN_PROMPT_FILE)
    content = ContentAcceptance.build(parse_accept_profile(PROFILE, DEFAULT_ACCEPTANCE), entries)
    structured = [e.text for e in entries if e.category == "structured"]
    assert content.acceptance_of("a prompt from somewhere else entirely, not in any file") is None
    assert content.acceptance_of(None) is None  # token ids: the base acceptance
    assert content.acceptance_of("  ".join(structured[0].split())) == content.profiles.get("structured")


def _category_cell(category: str, count: int, concurrency: int = 16) -> CellSpec:
    """A category-pure cell as the plan makes it: the shipped file's `jsonl` set of a category."""
    return CellSpec(key=CellKey(arm="K=3", scenario=category, concurrency=concurrency),
                    input_len=64, output_len=96, range_ratio=0.5, num_prompts=count,
                    category=category, dataset="jsonl")


async def _prepared(url: str, run_dir: Path, cell: CellSpec, seed: int) -> list[PromptSpec]:
    """The cell's prompts prepared as a run prepares them: the server's /tokenize, prompts/."""
    await prepare_keys([set_key(cell)], seed, run_dir, url, "test-model", {}, "test-model")
    return load_prompt_set(run_dir, cell)


def test_model_time_accept_length_follows_the_profile():
    lengths = sample_lengths(128, 128, 64, 0.0, seed=1)
    for first in (0.95, 0.55):
        profile = scaled_acceptance(first, DEFAULT_ACCEPTANCE)
        result = simulate_closed_loop(ModelConfig(spec_tokens=K), lengths, 8, acceptance=profile)
        expected = 1 + sum(_expected_per_position(first, K))
        assert result.mean_accept_length == pytest.approx(expected, abs=0.06)


def _counters(text: str) -> tuple[float, list[float]]:
    values = metric_values(text)
    drafts = sum(v for (name, _), v in values.items() if name == "vllm:spec_decode_num_drafts_total")
    per_pos = [0.0] * K
    for (name, labels), value in values.items():
        if name == "vllm:spec_decode_num_accepted_tokens_per_pos_total":
            per_pos[int(dict(labels)["position"])] += value
    return drafts, per_pos


async def _send(url: str, prompts: list[str | list[int]], concurrency: int) -> None:
    queue = iter(prompts)
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        async def worker() -> None:
            for prompt in queue:
                response = await client.post("/v1/completions", json={
                    "prompt": prompt, "max_tokens": 96, "ignore_eos": True})
                assert response.status_code == 200, response.text
        await asyncio.gather(*(worker() for _ in range(concurrency)))


def _measure(url: str, prompts: list[str | list[int]]) -> list[float]:
    """Per-position acceptance of one category-pure cell, from /metrics deltas as the scraper
    reads them (accepted at position i / drafts)."""
    before = _counters(httpx.get(url + "/metrics").text)
    asyncio.run(_send(url, prompts, concurrency=16))
    after = _counters(httpx.get(url + "/metrics").text)
    drafts = after[0] - before[0]
    assert drafts > 2000
    return [(a - b) / drafts for a, b in zip(after[1], before[1], strict=True)] + [drafts]


def test_category_pure_cells_measure_back_the_configured_profiles(tmp_path: Path):
    """Tolerance: each position's rate is a binomial proportion over the cell's drafts (one
    independent draw per draft), so 4 standard errors (sqrt(q(1-q)/drafts), about 0.005-0.011
    for ~3,000 drafts) bound it; six comparisons at 4 SE fail by chance about 1 in 2,500.
    Without the profiles every cell would show the base 0.90 at position 1: 7 SE off for
    code, 40 for chat."""
    with running_sim("--accept-profile", PROFILE, spec_tokens=K, speed=50) as sim:
        for category, first in (("code", 0.95), ("chat", 0.55)):
            prepared = asyncio.run(_prepared(sim.url, tmp_path / category,
                                             _category_cell(category, 96), seed=5))
            prompts: list[str | list[int]] = [str(p.prompt) for p in prepared]
            *measured, drafts = _measure(sim.url, prompts)
            for position, (got, want) in enumerate(
                    zip(measured, _expected_per_position(first, K), strict=True)):
                se = math.sqrt(want * (1 - want) / drafts)
                assert abs(got - want) <= 4 * se, (category, position, got, want, se)
        assert ("Acceptance by content (position 1): code=0.95, chat=0.55; 89 prompts "
                "recognised") in sim.log_text()
        # a prompt the simulator does not know (token ids) keeps the base acceptance
        *measured, drafts = _measure(sim.url, [list(range(10 + i, 74 + i)) for i in range(96)])
        want = DEFAULT_ACCEPTANCE[0]
        assert abs(measured[0] - want) <= 4 * math.sqrt(want * (1 - want) / drafts)


@pytest.mark.parametrize("args, says", [
    (["--accept-profile", "code=2"], "--accept-profile code: a rate in [0, 1]"),
    (["--prompts", "x.jsonl"], "--prompts needs --accept-profile"),
    (["--accept-profile", "code=0.9", "--prompts", "nowhere.jsonl"],
     "nowhere.jsonl: no such prompt file"),
])
def test_the_simulator_refuses_a_bad_profile_in_one_line(args: list[str], says: str, capsys):
    from dspark_tui.sim.cli import main

    assert main(["serve", "m", *args]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1


def test_the_demo_categories_plan_has_a_different_best_k_per_category_in_model_time():
    """The shipped plan's own commands and grid, in model time (noise-free): what the live
    demo measures with noise."""
    from dspark_tui.plans import resolve_plan
    from dspark_tui.sim.estimate import sim_config

    plan, _ = resolve_plan("demo-categories")
    throughput: dict[tuple[str, int], dict[int, float]] = {}
    for cell in plan.cells():
        config = sim_config(plan, cell.key.arm)
        assert config is not None and cell.category is not None
        profile = config.content.profiles[cell.category]
        lengths = sample_lengths(cell.input_len, cell.output_len, cell.num_prompts,
                                 cell.range_ratio, seed=0)
        result = simulate_closed_loop(config.engine, lengths, cell.key.concurrency,
                                      acceptance=profile)
        k = config.engine.spec_tokens
        throughput.setdefault((cell.key.scenario, cell.key.concurrency), {})[k] = result.total_throughput
    best = {cell: max(by_k, key=by_k.__getitem__) for cell, by_k in throughput.items()}
    assert best == {("code", 1): 5, ("code", 16): 5, ("code", 64): 3,
                    ("chat", 1): 3, ("chat", 16): 3, ("chat", 64): 1}


async def test_the_native_driver_sends_a_category_pure_cell_the_simulator_recognises(tmp_path: Path):
    """The real client path: the cell's prepared set holds its category's lines as written (so
    each starts with the words the simulator keys on), and the server's acceptance over the
    cell is that category's (position 1 within 4 SE)."""
    from dspark_tui.engine.drivers import DriverContext
    from dspark_tui.engine.drivers.native import NativeDriver
    from dspark_tui.model import BenchConfig

    cell = _category_cell("chat", 48, concurrency=8)
    chat = {line.prompt for line in category_lines(read_prompt_lines(BUILTIN_PROMPT_FILE), "chat",
                                                   BUILTIN_PROMPT_FILE)}
    content = ContentAcceptance.build(parse_accept_profile(PROFILE, DEFAULT_ACCEPTANCE),
                                      read_prompt_file(BUILTIN_PROMPT_FILE))
    with running_sim("--accept-profile", PROFILE, spec_tokens=K, speed=50) as sim:
        prompts = await _prepared(sim.url, tmp_path, cell, seed=2)
        assert {p.text for p in prompts} <= chat and len({p.text for p in prompts}) > 1
        assert {content.category_of(str(p.prompt)) for p in prompts} == {"chat"}
        ctx = DriverContext(base_url=sim.url, host="127.0.0.1", port=sim.port,
                            served_model_name="test-model", model_path="test-model",
                            bench=BenchConfig(driver="native", seed=2, cell_timeout_s=60),
                            raw_dir=tmp_path / "raw", run_dir=tmp_path)
        before = _counters(sim.metrics_text())
        result = await NativeDriver().run(cell, ctx, lambda _: None)
        after = _counters(sim.metrics_text())
        assert result.metrics.completed == 48
        drafts = after[0] - before[0]
        rate = (after[1][0] - before[1][0]) / drafts
        assert abs(rate - 0.55) <= 4 * math.sqrt(0.55 * 0.45 / drafts), (rate, drafts)
        with pytest.raises(DatasetError, match="no prompt of category 'poetry'"):
            await _prepared(sim.url, tmp_path, _category_cell("poetry", 8), seed=2)
