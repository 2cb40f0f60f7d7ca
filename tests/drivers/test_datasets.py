"""Text datasets end to end: the plan's keys, the files, prompts prepared once per run against
the simulator's /tokenize, what the native client sends, and a resume that reuses them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dspark_tui.engine.datasets import DatasetError, dataset_problems, shipped_prompts_path
from dspark_tui.engine.datasets.files import read_prompt_lines, read_sharegpt_pairs
from dspark_tui.engine.run.runner import Runner, plan_of_run, prepare_run
from dspark_tui.model import PlanError, load_plan, parse_plan
from dspark_tui.sim import tokenizer as toy
from dspark_tui.sim.text import count_text_tokens
from tests.engine.helpers import Recorder, sim_plan_text

DATA = Path(__file__).resolve().parent.parent / "data"
CATEGORIES = {"chat", "code", "math", "summarisation", "structured"}

JSONL_CELLS = """[[scenarios]]
name = "mixed"
input_len = 64
output_len = 12
concurrencies = [1, 4]
num_prompts = [6, 8]

[[scenarios]]
name = "conversations"
input_len = 40
output_len = 8
range_ratio = 0.5
concurrencies = [2]
num_prompts = 5
dataset = "random"
dataset_path = "{sharegpt}"
"""


def _plan_text(bench: str = "", scenario: str = "") -> str:
    return f"""name = "p"
model = "m"
[server]
command = ["serve"]
[[arms]]
name = "a"
[bench]
{bench}
[[scenarios]]
name = "s"
input_len = 16
output_len = 8
concurrencies = [1]
{scenario}
"""


@pytest.mark.parametrize(("bench", "scenario", "says"), [
    ('dataset = "random"', "", "bench.dataset: 'random' needs dataset_path"),
    ("", 'dataset = "sharegpt"', 'scenarios["s"].dataset: \'sharegpt\' needs dataset_path'),
    ('driver = "sglang"\ndataset = "jsonl"', "", "jsonl (prompts with categories) runs on the native"),
    ('driver = "vllm"', 'dataset = "random"\ndataset_path = "x.json"', "the vllm driver draws"),
    ("", 'dataset_path = "x.json"', "random-ids reads no file"),
    ('dataset = "text"', "", "bench.dataset: Input should be 'random-ids'"),
])
def test_a_dataset_the_plan_cannot_run_is_one_line(bench: str, scenario: str, says: str) -> None:
    with pytest.raises(PlanError) as caught:
        parse_plan(_plan_text(bench, scenario), "plan.toml")
    message = str(caught.value)
    assert says in message and "\n" not in message
    assert re.match(r"plan\.toml:\d+: ", message), message  # the line of the key


def test_scenarios_override_the_bench_dataset_and_random_ids_stays_the_default() -> None:
    plan = parse_plan(_plan_text('dataset = "jsonl"'), "plan.toml")
    assert [c.dataset for c in plan.cells()] == ["jsonl"]
    plain = parse_plan(_plan_text(), "plan.toml")
    assert (plain.cells()[0].dataset, plain.cells()[0].dataset_path) == ("random-ids", None)
    sglang = parse_plan(_plan_text('driver = "sglang"', 'dataset = "random"\ndataset_path = "s.json"'))
    assert (sglang.cells()[0].dataset, sglang.cells()[0].dataset_path) == ("random", "s.json")


def test_old_run_snapshots_keep_random_ids() -> None:
    """Before datasets, every scenario was saved with "dataset": "random" (and bench had no
    dataset key): those runs sent random-ids, and load so (tests/tui/data/demo_run is one)."""
    from dspark_tui.model import Plan

    for path in (Path(__file__).resolve().parents[1] / "tui" / "data" / "demo_run" / "run.json",
                 Path(__file__).resolve().parents[2] / "sample_results"
                 / "dspark_st_comparison_20260707-150649" / "run.json"):
        snapshot = json.loads(path.read_text())["plan"]
        snapshot["bench"] = {k: v for k, v in snapshot["bench"].items()
                             if k not in ("dataset", "dataset_path")}
        snapshot["scenarios"] = [{**{k: v for k, v in s.items() if k != "dataset_path"},
                                  "dataset": "random"} for s in snapshot["scenarios"]]
        assert {c.dataset for c in Plan.model_validate(snapshot).cells()} == {"random-ids"}
    # A plan file asking for random without a file is refused, never read as an old snapshot.
    with pytest.raises(PlanError, match="'random' needs dataset_path"):
        parse_plan(_plan_text("", 'dataset = "random"'))


def test_the_shipped_prompts_cover_five_categories() -> None:
    lines = read_prompt_lines(shipped_prompts_path())
    counts = {c: sum(1 for line in lines if line.category == c) for c in CATEGORIES}
    assert set(counts) == CATEGORIES and min(counts.values()) >= 15, counts
    assert len({line.prompt for line in lines}) == len(lines)


@pytest.mark.parametrize(("content", "says"), [
    ('{"prompt": "a"}\nnot json\n', ":2: not JSON"),
    ('{"prompt": ""}\n', ":1: prompt: required"),
    ('{"prompt": "a", "output_len": 0}\n', ":1: output_len: a positive integer"),
    ('{"prompt": "a", "catgory": "x"}\n', ":1: catgory: unknown key"),
    ("\n\n", "holds no prompt"),
])
def test_a_bad_prompt_file_names_file_line_and_key(tmp_path: Path, content: str, says: str) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(content)
    with pytest.raises(DatasetError) as caught:
        read_prompt_lines(path)
    assert str(caught.value).startswith(str(path)) and says in str(caught.value)


def test_sharegpt_keeps_two_turn_conversations_and_a_bad_file_is_one_line(tmp_path: Path) -> None:
    pairs = read_sharegpt_pairs(DATA / "sharegpt_small.json")
    assert len(pairs) == 63 and ("Say nothing.", "") in pairs  # the one-turn entry is dropped
    (tmp_path / "bad.json").write_text('{"conversations": []}')
    with pytest.raises(DatasetError, match="a JSON list of conversations"):
        read_sharegpt_pairs(tmp_path / "bad.json")
    with pytest.raises(DatasetError, match="no such dataset file"):
        read_sharegpt_pairs(tmp_path / "missing.json")


def test_preflight_names_a_missing_dataset_file(tmp_path: Path) -> None:
    plan = parse_plan(_plan_text('dataset = "sharegpt"', f'dataset_path = "{tmp_path}/none.json"'))
    assert dataset_problems(plan) == [f"{tmp_path}/none.json: no such dataset file (scenario s, "
                                      "sharegpt; README, Datasets, says how to get ShareGPT onto "
                                      "this box)"]


async def test_prompts_are_prepared_once_sent_as_text_and_reused_on_resume(tmp_path: Path,
                                                                            port: int) -> None:
    text = sim_plan_text(port, arms=(3, 5), warmup=1,
                         cells=JSONL_CELLS.format(sharegpt=DATA / "sharegpt_small.json"))
    text = text.replace('driver = "native"', 'driver = "native"\ndataset = "jsonl"\nseed = 5')
    (tmp_path / "plan.toml").write_text(text)
    plan = load_plan(tmp_path / "plan.toml")
    store = prepare_run(plan, tmp_path / "results")
    runner = Runner(plan, store, gpu=None, charts=False)
    events = Recorder()
    runner.subscribe(events)
    assert await runner.run() == "completed"

    files = sorted(p.name for p in (store.path / "prompts").iterdir())
    assert files == ["conversations__n5.jsonl", "mixed__n6.jsonl", "mixed__n8.jsonl"]
    lines = (store.path / "prompts" / "mixed__n8.jsonl").read_text().splitlines()
    header, rows = json.loads(lines[0]), [json.loads(line) for line in lines[1:]]
    assert header["dataset"] == "jsonl" and header["tokenizer"] == "server /tokenize"
    assert header["dataset_path"] == str(shipped_prompts_path())
    assert len(rows) == 8 and {r["category"] for r in rows} <= CATEGORIES
    for row in rows:  # the simulator's tokenizer cut them; its ids decode to the prompt
        assert toy.decode(row["token_ids"]) == "<s>" + row["text"]
        assert row["prompt_len"] == len(row["token_ids"])
        assert 1 <= row["output_len"] <= 12
    random_rows = [json.loads(line) for line in
                   (store.path / "prompts" / "conversations__n5.jsonl").read_text().splitlines()[1:]]
    assert all(r["prompt_len"] == len(r["token_ids"]) <= 39 for r in random_rows)

    manifest = json.loads(store.manifest_path.read_text())
    records = {r["file"]: r for r in manifest["prompt_sets"]}
    assert set(records) == {f"prompts/{name}" for name in files}
    assert records["prompts/mixed__n8.jsonl"]["seed"] == 5
    assert len(records["prompts/conversations__n5.jsonl"]["source_sha256"]) == 64
    assert [e.message for e in events.of("notice") if e.message.startswith("prompts:")]

    # Every arm sent the same prompts, as text: the raw files count each as the server did
    # (usage.prompt_tokens, as sglang 0.5.23 takes it; the simulator charges text without a BOS).
    for arm in ("st_3", "st_5"):
        raw = (store.path / "raw" / f"{arm}__r1p1" / "mixed__c4.jsonl").read_text().splitlines()
        sent = [json.loads(line)["input_tokens"] for line in raw[1:]]
        assert sent == [count_text_tokens(r["text"]) for r in rows]

    # A resume reuses them even when the source changed: nothing is drawn again.
    before = {p.name: p.read_bytes() for p in (store.path / "prompts").iterdir()}
    for cell in (store.path / "cells" / "st_5").glob("mixed__c4__*.json"):
        cell.unlink()
    resumed = Runner(plan_of_run(store), store, gpu=None, charts=False)
    assert await resumed.run() == "completed"
    assert {p.name: p.read_bytes() for p in (store.path / "prompts").iterdir()} == before
    assert json.loads(store.manifest_path.read_text())["prompt_sets"] == manifest["prompt_sets"]


async def test_a_dataset_too_small_for_the_cell_fails_the_run_in_one_line(tmp_path: Path,
                                                                          port: int) -> None:
    small = tmp_path / "tiny.json"
    small.write_text(json.dumps([{"conversations": [{"value": "hi there"}, {"value": "hello"}]}]))
    cells = JSONL_CELLS.format(sharegpt=small).split("[[scenarios]]")[2]
    text = sim_plan_text(port, arms=(3,), warmup=0, cells="[[scenarios]]" + cells)
    (tmp_path / "plan.toml").write_text(text)
    plan = load_plan(tmp_path / "plan.toml")
    runner = Runner(plan, prepare_run(plan, tmp_path / "results"), gpu=None, charts=False)
    events = Recorder()
    runner.subscribe(events)
    assert await runner.run() == "failed"
    errors = [e.message for e in events.of("notice") if e.level == "error"]
    assert errors == [f"{small}: the dataset has 1 conversations with a non-empty first turn, fewer "
                      "than the 5 prompts a cell asks for (lower num_prompts or use a larger file)"]
    # The end line counts what happened: the cell not run is failed, not "0/1 cells ok, 0 failed".
    assert [e.key.id for e in events.of("cell_failed")] == ["st=3/conversations/c2"]


def test_the_sglang_driver_passes_random_and_sharegpt_through(tmp_path: Path) -> None:
    from dspark_tui.engine.drivers.base import DriverContext
    from dspark_tui.engine.drivers.sglang import sglang_argv

    plan = parse_plan(_plan_text('driver = "sglang"\ndataset = "random"\ndataset_path = "/d/sg.json"',
                                 ""))
    ctx = DriverContext(base_url="http://127.0.0.1:1", host="127.0.0.1", port=1,
                        served_model_name="m", model_path="m", bench=plan.bench, raw_dir=tmp_path)
    argv = sglang_argv(plan.cells()[0], ctx, tmp_path / "out.jsonl")
    pairs = dict(zip(argv[3::2], argv[4::2], strict=False))
    assert pairs["--dataset-name"] == "random" and pairs["--dataset-path"] == "/d/sg.json"
    plain = parse_plan(_plan_text('driver = "sglang"'))
    assert "--dataset-path" not in sglang_argv(plain.cells()[0], ctx, tmp_path / "o.jsonl")


def test_plan_check_says_where_each_scenarios_prompts_come_from(tmp_path: Path) -> None:
    from dspark_tui.commands import _dataset_lines

    text = _plan_text('dataset = "jsonl"') + """
[[scenarios]]
name = "t"
input_len = 16
output_len = 8
concurrencies = [1]
dataset = "random"
dataset_path = "/d/sg.json"
"""
    assert _dataset_lines(parse_plan(text)) == ["dataset jsonl from the shipped prompts file (s)",
                                                "dataset random from /d/sg.json (t)"]
    assert _dataset_lines(parse_plan(_plan_text())) == ["dataset random-ids"]


def test_a_category_means_the_jsonl_dataset_filtered_to_it() -> None:
    from dspark_tui.commands import _dataset_lines

    pure = 'category = "code"'
    shipped = parse_plan(_plan_text("", pure))
    assert [(c.dataset, c.dataset_path, c.category) for c in shipped.cells()] == [("jsonl", None, "code")]
    own = parse_plan(_plan_text('dataset = "jsonl"\ndataset_path = "/d/mine.jsonl"', pure))
    assert own.cells()[0].dataset_path == "/d/mine.jsonl"
    over_random = parse_plan(_plan_text('dataset = "random"\ndataset_path = "/d/sg.json"', pure))
    assert over_random.dataset_of(over_random.scenarios[0]) == ("jsonl", None)
    assert _dataset_lines(shipped) == ["dataset jsonl from the shipped prompts file, category code only"]
    with pytest.raises(PlanError) as caught:
        parse_plan(_plan_text("", pure + '\ndataset = "random"\ndataset_path = "/d/sg.json"'), "p.toml")
    assert ('scenarios["s"].dataset: a scenario with a category reads a jsonl prompt file, '
            "not 'random'") in str(caught.value)


async def test_a_category_pure_set_is_prepared_saved_recorded_and_reused(tmp_path: Path,
                                                                       port: int) -> None:
    source = tmp_path / "mine.jsonl"
    lines = [{"prompt": f"write a function number {i} that sorts the list please", "category": "code"}
             for i in range(4)] + [{"prompt": "tell me about your day", "category": "chat"}]
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    cells = f"""[[scenarios]]
name = "code"
category = "code"
dataset_path = "{source}"
input_len = 64
output_len = 8
concurrencies = [2]
num_prompts = 6
"""
    (tmp_path / "plan.toml").write_text(sim_plan_text(port, arms=(3,), warmup=0, cells=cells))
    plan = load_plan(tmp_path / "plan.toml")
    store = prepare_run(plan, tmp_path / "results")
    assert await Runner(plan, store, gpu=None, charts=False).run() == "completed"

    saved = store.path / "prompts" / "code__n6.jsonl"
    header, *rows = [json.loads(line) for line in saved.read_text().splitlines()]
    assert header["dataset"] == "jsonl" and header["category"] == "code"
    code = {line["prompt"] for line in lines[:4]}
    assert {r["text"] for r in rows} == code and {r["category"] for r in rows} == {"code"}
    for row in rows:  # sent as written, counted by the server's tokenizer
        assert toy.decode(row["token_ids"]) == "<s>" + row["text"]
    [record] = json.loads(store.manifest_path.read_text())["prompt_sets"]
    assert record["file"] == "prompts/code__n6.jsonl" and record["category"] == "code"
    assert record["dataset_path"] == str(source)

    before = saved.read_bytes()
    source.write_text(json.dumps({"prompt": "something else entirely", "category": "code"}) + "\n")
    for cell in (store.path / "cells").rglob("code__c2__*.json"):
        cell.unlink()
    assert await Runner(plan_of_run(store), store, gpu=None, charts=False).run() == "completed"
    assert saved.read_bytes() == before


def test_preflight_parses_every_dataset_file_before_any_server_starts(tmp_path: Path) -> None:
    """A bad file was found only after the first server was ready (minutes on a GPU box)."""
    (tmp_path / "notjson.json").write_text("[{")
    (tmp_path / "bad.jsonl").write_text('{"prompt": "hi"}\n{"prompt": 5}\n')
    (tmp_path / "good.jsonl").write_text('{"prompt": "hi", "category": "chat"}\n')
    import os

    os.mkfifo(tmp_path / "fifo.json")
    cases = [('dataset = "sharegpt"', f'dataset_path = "{tmp_path}/notjson.json"'),
             ('dataset = "sharegpt"', f'dataset_path = "{tmp_path}/fifo.json"'),
             ('dataset = "jsonl"', f'dataset_path = "{tmp_path}/bad.jsonl"'),
             ('dataset = "jsonl"', f'dataset_path = "{tmp_path}/good.jsonl"\ncategory = "code"')]
    said = [dataset_problems(parse_plan(_plan_text(*case))) for case in cases]
    assert [len(lines) for lines in said] == [1, 1, 1, 1]
    assert said[0][0].startswith(f"{tmp_path}/notjson.json: not valid JSON (")
    assert said[0][0].endswith("(scenario s, sharegpt)")
    assert said[1] == [f"{tmp_path}/fifo.json: cannot read the dataset (not a regular file "
                       "(a FIFO)) (scenario s, sharegpt)"]
    assert said[2][0].startswith(f"{tmp_path}/bad.jsonl:2: ") and "prompt" in said[2][0]
    assert said[3] == [f"{tmp_path}/good.jsonl: no prompt of category 'code' (the file has: chat) "
                       "(scenario s, jsonl)"]
    assert dataset_problems(parse_plan(_plan_text('dataset = "jsonl"'))) == []  # the shipped file


@pytest.mark.slow
def test_a_run_with_a_bad_dataset_is_refused_before_any_server_starts(tmp_path: Path,
                                                                      port: int) -> None:
    from tests.cli import run_cli

    (tmp_path / "notjson.json").write_text("[{")
    cells = JSONL_CELLS.format(sharegpt=tmp_path / "notjson.json").split("[[scenarios]]")[2]
    plan = tmp_path / "plan.toml"
    plan.write_text(sim_plan_text(port, arms=(3,), warmup=0, cells="[[scenarios]]" + cells))
    done = run_cli("run", str(plan), "--headless", "--results", str(tmp_path / "results"))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"dspark-tui: error: {tmp_path}/notjson.json: not valid JSON (")
    assert done.stderr.count("\n") == 1
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())
