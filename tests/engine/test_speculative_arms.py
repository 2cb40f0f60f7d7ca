"""Upstream-vLLM arm forms end to end: a plan whose arms give `[arms.speculative]` tables (and a
K = 0 arm with none) run by the real runner against the real simulator. What each server was
started with is read back from the run directory, and the measurements, run.json and the K
schedule's export say the same form."""

from __future__ import annotations

import json
from pathlib import Path

from dspark_tui.engine.run.runner import Runner, prepare_run
from dspark_tui.model import load_plan
from dspark_tui.results import load_run
from tests.engine.helpers import CHAT_SCENARIO, sim_server_table

HEAD = """name = "tables"
model = "test-model"
backend_label = "simulator"

"""
ARMS = """
[[arms]]
name = "K=0"

[[arms]]
name = "ngram K=3"
[arms.speculative]
method = "ngram"
k = 3
prompt_lookup_max = 4
prompt_lookup_min = 2

[bench]
driver = "native"
warmup_requests = 2
cell_timeout_s = 30
scrape_interval_s = 0.2
rounds = 1
adaptive_rounds = 0

""" + CHAT_SCENARIO
TABLE = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4,
         "prompt_lookup_min": 2}


def started_argv(run_dir: Path, arm: str) -> list[str]:
    """The argv the session's server record keeps (servers/{arm}-s*.json), exactly one session."""
    records = sorted((run_dir / "servers").glob(f"{arm}-s*.json"))
    assert len(records) == 1, records
    return json.loads(records[0].read_text())["argv"]


async def test_a_table_arm_and_a_k0_arm_run_on_the_simulator(tmp_path: Path, port: int):
    plan_file = tmp_path / "plan.toml"
    plan_file.write_text(HEAD + sim_server_table(port, 50) + ARMS)
    plan = load_plan(plan_file)
    store = prepare_run(plan, tmp_path / "results")
    assert await Runner(plan, store, gpu=None, charts=False).run() == "completed"
    run_dir = store.path

    def planned(argv: list[str]) -> list[str]:  # without the session's own name (identity.py)
        return argv[:argv.index("--served-model-name")] if "--served-model-name" in argv else argv

    baseline = planned(started_argv(run_dir, "K_0"))
    ngram = planned(started_argv(run_dir, "ngram_K_3"))
    assert baseline[-2:] == ["--speed", "50"]  # no speculative flag of any kind for K = 0
    assert not [part for part in baseline if "spec" in part]
    assert ngram[:-2] == baseline and ngram[-2] == "--speculative-config"
    assert json.loads(ngram[-1]) == TABLE
    logs = {arm: "".join(p.read_text() for p in (run_dir / "logs").glob(f"server-{arm}-*.log"))
            for arm in ("K_0", "ngram_K_3")}
    assert "Speculative decoding" not in logs["K_0"]
    assert "method=ngram, num_speculative_tokens=3" in logs["ngram_K_3"]

    run = load_run(run_dir)
    assert not run.problems
    assert {key.id: cell.status.value for key, cell in run.cells.items()} == {
        f"{arm}/chat/c{c}": "ok" for arm in ("K=0", "ngram K=3") for c in (1, 4)}
    for key, cell in run.cells.items():
        assert cell.server is not None
        accept = cell.server.mean_acceptance_length
        if key.arm == "K=0":
            assert accept is None  # nothing drafted
        else:
            assert accept is not None and accept > 1

    manifest = json.loads((run_dir / "run.json").read_text())
    assert [a["vars"]["num_speculative_tokens"] for a in manifest["arms"]] == [0, 3]
    assert [c["var"] for c in manifest["compared"]] == ["num_speculative_tokens"]
    assert manifest["plan"]["arms"][1]["speculative"] == TABLE
    assert "speculative" not in manifest["plan"]["arms"][0]

    # A K = 0 baseline makes it a sweep: the schedule's serve command has the table's form.
    saved = json.loads((run_dir / "schedule.json").read_text())
    config = saved["speculative_config"]
    expected = ["python", *baseline[1:]]
    if config is not None:
        assert {k: config[k] for k in ("method", "prompt_lookup_max", "prompt_lookup_min")} == {
            "method": "ngram", "prompt_lookup_max": 4, "prompt_lookup_min": 2}
        expected += ["--speculative-config", json.dumps(config, separators=(",", ":"))]
    assert saved["serve_command"] == expected
