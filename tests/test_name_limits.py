"""Names at the plan's limits give file names every filesystem takes (255 bytes a name).

A real run with 100-character arm and scenario names and an 80-character plan name (one cell of
concurrency 100000, 20 repeats) left 121 characters as its longest file name; this checks the
worst case the plan allows (126, 140 as a temporary name), by writing them."""

from __future__ import annotations

from pathlib import Path

from dspark_tui.model import CellKey, CellResult, ClientMetrics, parse_plan
from dspark_tui.model.plan import MAX_NAME_LEN, MAX_PLAN_NAME_LEN
from dspark_tui.results import RunStore, manifest_for_plan
from dspark_tui.results.atomic import atomic_write_text

NAME_MAX = 255
# `.{name}.XXXXXXXX.tmp`: what tempfile.mkstemp adds around a name the atomic writer replaces.
TEMP_EXTRA = len("..12345678.tmp")
WORST = {"round": 40, "repeat": 20, "concurrency": 10**9, "session": "s999"}  # rounds+adaptive ≤ 40

PLAN = f"""
name = "{"n" * MAX_PLAN_NAME_LEN}"
model = "m"
[server]
command = ["serve", "{{spec_tokens}}"]
[[arms]]
name = "{"a" * MAX_NAME_LEN}"
vars = {{ spec_tokens = 3 }}
[[arms]]
name = "{"é" * MAX_NAME_LEN}"
vars = {{ spec_tokens = 5 }}
[[scenarios]]
name = "{"s" * MAX_NAME_LEN}"
input_len = 8
output_len = 8
concurrencies = [{WORST["concurrency"]}]
num_prompts = 1
"""


def test_the_longest_names_a_plan_allows_fit_in_every_derived_file_name(tmp_path: Path):
    plan = parse_plan(PLAN)
    store = RunStore.create(tmp_path, manifest_for_plan(plan))
    round_, repeat, session = WORST["round"], WORST["repeat"], WORST["session"]
    derived = [store.path.name + "-999"]  # a second run in the same second gets -1 … -999
    for arm in plan.arms:
        key = CellKey(arm=arm.name, scenario=plan.scenarios[0].name, concurrency=WORST["concurrency"])
        raw = store.raw_dir(arm.name, round_, repeat)
        paths = [store.cell_path(key, round_, repeat), store.series_path(key, round_, repeat),
                 raw, raw / f"{key.file_stem}.jsonl.gz", store.server_log_path(arm.name, session),
                 store.path / "servers" / f"{arm.dirname}-{session}.json"]
        derived += [part for path in paths for part in path.relative_to(store.path).parts]
        for path in paths[:2]:
            atomic_write_text(path, "x")  # the filesystem takes it, temporary name included
        store.save_cell(CellResult(arm=arm.name, scenario=key.scenario, concurrency=key.concurrency,
                                   round=round_, repeat=repeat, metrics=ClientMetrics(completed=1)))
    longest = max(len(name.encode()) for name in derived)
    assert longest + TEMP_EXTRA <= NAME_MAX, max(derived, key=len)
    assert longest == 126  # the scenario's measurement file: 140 with its temporary name
