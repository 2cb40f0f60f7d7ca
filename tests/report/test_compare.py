"""Two runs compared cell by cell (History's "compare two runs")."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from dspark_tui.report.compare import render_comparison, run_comparison_frame
from dspark_tui.results import load_run
from tests.conftest import SAMPLE_RUN
from tests.report.markdown_tables import cells_of, table_after


def faster_copy(tmp_path: Path) -> Path:
    """The sample run with st=5 10% faster everywhere and one cell gone."""
    run_dir = tmp_path / "faster"
    shutil.copytree(SAMPLE_RUN, run_dir)
    for path in (run_dir / "cells" / "st_5").glob("*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        data["metrics"]["total_throughput"] = round(data["metrics"]["total_throughput"] * 1.1, 2)
        data["metrics"]["mean_tpot_ms"] = data["metrics"]["mean_tpot_ms"] / 2
        path.write_text(json.dumps(data), encoding="utf-8")
    (run_dir / "cells/st_3/chat_short__c1__r1p1.json").unlink()
    return run_dir


def test_frame_has_ratios_b_over_a(tmp_path: Path):
    a, b = load_run(SAMPLE_RUN), load_run(faster_copy(tmp_path))
    frame = run_comparison_frame(a, b)
    assert len(frame) == 35
    st5 = frame[frame["arm"] == "st=5"]
    assert st5["total_ratio"].between(1.0999, 1.1001).all()
    assert st5["mean_tpot_ratio"].round(6).eq(0.5).all()
    assert frame[frame["arm"] == "st=3"]["total_ratio"].eq(1.0).all()
    assert frame["p99_ttft_ratio"].eq(1.0).all()
    assert list(frame[["scenario", "concurrency", "arm"]].iloc[0]) == ["chat_short", 1, "st=5"]


def test_rendered_comparison_counts_and_lists_cells(tmp_path: Path):
    a, b = load_run(SAMPLE_RUN), load_run(faster_copy(tmp_path))
    text = render_comparison(a, b, lang="zh")
    assert "- 匹配的单元：35；只在 A 中：1；只在 B 中：0" in text
    assert "B 更快的单元：18/35" in text
    table = table_after(text, lambda line: line.startswith("比值 = B / A"))
    row = next(cells_of(r) for r in table if r.startswith("| stress_standard | 128 | st=5 |"))
    assert row[3:6] == ["22700.92", "24971.01", "1.100"]
    assert row[9:12] == ["25.74", "12.87", "0.500"]

    english = render_comparison(a, b, lang="en")
    assert "- Matched cells: 35; only in A: 1; only in B: 0" in english


def test_runs_without_common_cells_say_so(tmp_path: Path):
    empty = tmp_path / "empty"
    shutil.copytree(SAMPLE_RUN, empty)
    shutil.rmtree(empty / "cells")
    text = render_comparison(load_run(SAMPLE_RUN), load_run(empty), lang="en")
    assert "The two runs share no (arm, scenario, concurrency) cell." in text


def test_differences_that_make_ratios_mean_something_else_are_named(tmp_path: Path):
    from dspark_tui.report.compare import run_differences

    other = tmp_path / "other"
    shutil.copytree(SAMPLE_RUN, other)
    data = json.loads((other / "run.json").read_text())
    assert run_differences(load_run(SAMPLE_RUN), load_run(other)) == []
    data["model"] = "/m/other"
    data["warmup_requests"] = 5
    data["plan"]["bench"]["seed"] = 9
    data["plan"]["scenarios"][0]["input_len"] = 999
    command = data["plan"]["server"]["command"]
    index = command.index("--kv-cache-dtype")
    command[index + 1] = "auto"
    (other / "run.json").write_text(json.dumps(data))
    found = dict(run_differences(load_run(SAMPLE_RUN), load_run(other)))
    assert found["model"] == "/data/models/DeepSeek-V4-Flash-DSpark vs /m/other"
    assert found["command"] == "--kv-cache-dtype fp8 vs auto"
    assert found["prompts"] == "seed 1 vs 9; chat_short input_len 512 vs 999"
    assert found["warmup"] == "100 vs 5"
    english = render_comparison(load_run(SAMPLE_RUN), load_run(other), lang="en")
    assert "- ⚠ server commands differ: --kv-cache-dtype fp8 vs auto" in english
    assert "cpus" not in found  # neither pinned
    data["plan"]["server"]["cpus"] = [1, 2, 3]
    (other / "run.json").write_text(json.dumps(data))
    found = dict(run_differences(load_run(SAMPLE_RUN), load_run(other)))
    assert found["cpus"] == "- vs 1-3"
    english = render_comparison(load_run(SAMPLE_RUN), load_run(other), lang="en")
    assert "- ⚠ server CPUs (server.cpus) differ: - vs 1-3" in english


def test_a_cell_of_several_rounds_compares_as_its_mean(tmp_path: Path):
    """Round 2 of every st=5 cell in B at twice the speed: B/A is the mean's, 1.5."""
    b = tmp_path / "b"
    shutil.copytree(SAMPLE_RUN, b)
    for path in list((b / "cells" / "st_5").glob("*__r1p1.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        data["round"] = 2
        data["metrics"]["total_throughput"] *= 2
        path.with_name(path.name.replace("__r1p1", "__r2p1")).write_text(json.dumps(data))
    frame = run_comparison_frame(load_run(SAMPLE_RUN), load_run(b))
    assert frame[frame["arm"] == "st=5"]["total_ratio"].round(6).eq(1.5).all()


def test_a_plans_python_placeholder_and_the_more_count_read_in_the_runs_language(tmp_path: Path):
    """A demo plan's `{python}` reads `python` (no raw placeholder); the prompts' `+N more` is
    said in the comparison's language."""
    from dspark_tui.report.compare import run_differences

    other = tmp_path / "other"
    shutil.copytree(SAMPLE_RUN, other)
    data = json.loads((other / "run.json").read_text())
    data["plan"]["server"]["command"] = ["{python}", "-m", "dspark_tui.sim", "serve"]
    data["plan"]["bench"]["seed"] = 9
    for scenario in data["plan"]["scenarios"][:3]:
        scenario["input_len"] = 7
    (other / "run.json").write_text(json.dumps(data))
    en = dict(run_differences(load_run(SAMPLE_RUN), load_run(other), "en"))
    zh = dict(run_differences(load_run(SAMPLE_RUN), load_run(other), "zh"))
    assert "{python}" not in en["command"] and en["command"].endswith(" vs python")
    assert en["prompts"].endswith("; +2 more") and "more" not in zh["prompts"]
    assert zh["prompts"].endswith("；另有 2 项")
