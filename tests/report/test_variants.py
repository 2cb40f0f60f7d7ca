"""Runs unlike the seed: three arms, server metrics, failed, missing and unreadable cells."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from dspark_tui.model import UserError
from dspark_tui.report.markdown import render_report
from dspark_tui.results import RunStore, load_run
from dspark_tui.results.manifest import ComparedParameter
from tests.conftest import SAMPLE_RUN
from tests.report.builders import failed_cell, write_run
from tests.report.markdown_tables import cells_of, section, table_after

SCENARIOS = {"chat": (512, 256, [1, 8, 32, 64, 128]), "rag": (4096, 512, [1, 16])}


@pytest.fixture
def three_arm_run(tmp_path: Path) -> RunStore:
    store = write_run(tmp_path / "three", {"st=3": 3, "st=5": 5, "st=7": 7}, SCENARIOS,
                      skip={("st=7", "rag", 16)})
    store.save_cell(failed_cell("st=5", "chat", 128, "server crashed (exit code -9) after 41 of 1024"))
    return store


def test_three_arms_name_the_pairs_and_rank_all_arms(three_arm_run: RunStore):
    text = render_report(load_run(three_arm_run.path))
    assert "- 对比方式：共 3 个 arm" in text
    assert "st=5 vs st=3, st=7 vs st=3" in text
    table = table_after(text, lambda line: line == "## 吞吐 winner 统计")
    assert cells_of(table[0]) == ["Scenario", "Concurrency", "Winner (Total tok/s)", "st=3 Total tok/s",
                                  "st=5 Total tok/s", "st=7 Total tok/s", "第二", "提升"]
    assert len(table) == 2 + 7
    for row in table[2:]:
        cells = cells_of(row)
        values = {arm: float(v) for arm, v in zip(["st=3", "st=5", "st=7"], cells[3:6], strict=True)
                  if v != "—"}
        ranked = sorted(values, key=lambda a: -values[a])
        assert cells[2] == ranked[0]
        assert cells[6] == ranked[1]
        assert cells[7] == f"{(values[ranked[0]] / values[ranked[1]] - 1) * 100:.2f}%"
    # st=7 (more speculative tokens) leads at c=1, st=3 at c=128, in the synthetic model.
    assert "| chat | 1 | st=7 |" in text
    assert "| chat | 128 | st=3 | 48502.93 | — | 45592.75 | st=7 | 6.38% |" in text


def test_failed_and_missing_cells_are_listed_and_the_rest_rendered(three_arm_run: RunStore):
    text = render_report(load_run(three_arm_run.path))
    assert "- 单元：未完成 — 19 个完成，1 个失败，1 个未测（共 21 个）" in text
    problems = section(text, "## 失败与缺失的单元")
    assert "- `st=5` / `chat` / c=128：失败 — server crashed (exit code -9) after 41 of 1024" in problems
    assert "- `st=7` / `rag` / c=16：缺失（没有结果文件）" in problems
    core = table_after(text, lambda line: line == "## 核心指标对比")
    assert len(core) == 2 + 19
    assert not any(row.startswith("| chat | 128 | 5 |") for row in core)
    assert "补跑 2 个失败或缺失的单元" in text


def test_unreadable_files_are_reported_and_skipped(tmp_path: Path):
    run_dir = tmp_path / "sample"
    shutil.copytree(SAMPLE_RUN, run_dir)
    truncated = run_dir / "cells/st_5/rag_medium__c8__r1p1.json"
    truncated.write_text(truncated.read_text(encoding="utf-8")[:200], encoding="utf-8")
    old = run_dir / "cells/st_3/chat_short__c1__r1p1.json"
    data = json.loads(old.read_text(encoding="utf-8"))
    data["schema_version"] = 0
    old.write_text(json.dumps(data), encoding="utf-8")

    text = render_report(load_run(run_dir))
    problems = section(text, "## 失败与缺失的单元")
    assert "- `cells/st_5/rag_medium__c8__r1p1.json`：truncated or not JSON; skipped" in problems
    assert re.search(r"`cells/st_3/chat_short__c1__r1p1.json`：cell schema version 0.*skipped", problems)
    assert "- `st=5` / `rag_medium` / c=8：缺失" in problems
    core = table_after(text, lambda line: line == "## 核心指标对比")
    assert len(core) == 2 + 34
    assert "| rag_medium | 8 | st=3 |" not in text  # no winner without both arms
    assert "| stress_standard | 128 | st=3 | 29828.36 | 22700.92 | 31.40% |" in text


def test_missing_run_json_still_renders_from_the_cells(tmp_path: Path):
    run_dir = tmp_path / "no_manifest"
    shutil.copytree(SAMPLE_RUN, run_dir)
    (run_dir / "run.json").unlink()
    run = load_run(run_dir)
    text = render_report(run)
    assert f"- 结果目录：`{run_dir}`" in text.splitlines()
    assert "- `run.json`：" in text
    core = table_after(text, lambda line: line == "## 核心指标对比")
    assert cells_of(core[0])[2] == "Arm"  # without run.json the compared variable is unknown
    assert len(core) == 2 + 36
    assert "| chat_short | 1 | st=3 | 12.80 |" in text
    assert "| stress_standard | 128 | st=3 | 29828.36 | 22700.92 | 31.40% |" in text


def test_arms_differing_in_two_variables_show_arm_names(tmp_path: Path):
    run_dir = tmp_path / "two_vars"
    shutil.copytree(SAMPLE_RUN, run_dir)
    store = RunStore(run_dir)
    manifest = store.read_manifest()
    manifest.compared.append(ComparedParameter(var="max_num_seqs", values=["128", "256"]))
    store.write_manifest(manifest)
    text = render_report(load_run(run_dir))
    assert "| chat_short | 1 | st=3 | 12.80 |" in text
    assert text.startswith("# vllm-dspark `st=3` vs `st=5` 对比报告")


def test_server_metrics_are_cited_as_evidence(tmp_path: Path):
    store = write_run(tmp_path / "server", {"st=3": 3, "st=5": 5}, SCENARIOS, server=True)
    text = render_report(load_run(store.path))
    assert "- 服务端指标：14 个单元带有 `/metrics` 摘要" in text
    server_table = table_after(text, lambda line: line == "## 服务端指标")
    assert server_table[2] == "| chat | 1 | 3 | 2.65 | 55.0% | 1.0% | 0 | 1 | 0 |"
    findings = section(text, "## 关键发现")
    # Every band claim carries the acceptance lengths measured in that band.
    assert findings.count("服务端证据：接受长度 st=3 2.65 / st=5 3.75") >= 4
    assert "抢占 st=3 64 / st=5 192" in findings  # c=128: (128-64) x (spec_tokens-2)
    assert "没有服务端指标" not in text
    assert "采集 `/metrics`" not in text

    english = render_report(load_run(store.path), lang="en")
    assert "Server evidence: acceptance length st=3 2.65 / st=5 3.75" in english


def test_unknown_language_is_a_user_error():
    with pytest.raises(UserError, match="unknown report language 'fr'"):
        render_report(load_run(SAMPLE_RUN), lang="fr")
