"""The findings state facts that hold in the report's own tables (re-counted here)."""

from __future__ import annotations

import re

import pytest

from dspark_tui.report.markdown import render_report
from dspark_tui.results import load_run
from tests.conftest import SAMPLE_RUN
from tests.report.markdown_tables import cells_of, section, table_after

CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(scope="module")
def zh() -> str:
    return render_report(load_run(SAMPLE_RUN), lang="zh")


@pytest.fixture(scope="module")
def en() -> str:
    return render_report(load_run(SAMPLE_RUN), lang="en")


def winner_rows(text: str, heading: str) -> list[tuple[str, int, str, float]]:
    """(scenario, concurrency, winner, margin) read back from the rendered winner table."""
    rows = table_after(text, lambda line: line == heading)[2:]
    out = []
    for row in rows:
        cells = cells_of(row)
        out.append((cells[0], int(cells[1]), cells[2], float(cells[-1].rstrip("%")) / 100))
    return out


def in_label(label: str, c: int) -> bool:
    if label.startswith("c≥"):
        return c >= int(label[2:])
    bounds = [int(v) for v in label[2:].split("~")]
    return bounds[0] <= c <= bounds[-1]


def test_band_statements_match_the_winner_table(zh: str):
    rows = winner_rows(zh, "## 吞吐 winner 统计")
    findings = section(zh, "### 1.")
    arm_lines = re.findall(r"\*\*[^（]+（(c[^）]+)）\*\*：`([^`]+)` 赢 (\d+)/(\d+) 个单元", findings)
    even_lines = re.findall(r"\*\*[^（]+（(c[^）]+)）\*\*：两者基本持平，(\d+)/(\d+) 个单元差异在 2% 以内",
                            findings)
    assert len(arm_lines) + len(even_lines) == 4
    for label, arm, wins, cells in arm_lines:
        band = [r for r in rows if in_label(label, r[1])]
        assert len(band) == int(cells)
        assert sum(1 for r in band if r[2] == arm and r[3] >= 0.02) == int(wins)
    for label, ties, cells in even_lines:
        band = [r for r in rows if in_label(label, r[1])]
        assert len(band) == int(cells)
        assert sum(1 for r in band if r[3] < 0.02) == int(ties)
    # The seed's conclusions, recomputed: st=5 at low concurrency, st=3 at c>=96, even at 64.
    assert "**低并发（c=1）**：`st=5` 赢 4/4" in findings
    assert "**高并发（c≥96）**：`st=3` 赢 2/2" in findings
    assert "**中并发（c=64）**：两者基本持平" in findings


def test_largest_margin_named_in_a_band_is_the_largest(zh: str):
    rows = winner_rows(zh, "## 吞吐 winner 统计")
    findings = section(zh, "### 1.")
    named = re.findall(
        r"（(c[^）]+)）\*\*：`[^`]+` 赢 \d+/\d+ 个单元（提升 [\d.]+%–([\d.]+)%，最大在 (\S+) c=(\d+)）",
        findings,
    )
    assert named, findings  # a finding that no longer matches must fail, not pass empty
    for label, top, where_s, where_c in named:
        band = [r for r in rows if in_label(label, r[1])]
        best = max(band, key=lambda r: r[3])
        assert (best[0], best[1]) == (where_s, int(where_c))
        assert f"{best[3] * 100:.2f}" == top


def test_best_arm_per_scenario_counts_hold(zh: str):
    rows = winner_rows(zh, "## 吞吐 winner 统计")
    table = table_after(section(zh, "### 2."), lambda line: line.startswith("`st=5`"))[2:]
    seen = set()
    for row in table:
        label, best, reason = cells_of(row)
        scenario = label.split(" ")[0]
        seen.add(scenario)
        match = re.match(r"赢 (\d+)/(\d+) 个并发", reason)
        if match:
            own = [r for r in rows if r[0] == scenario]
            assert len(own) == int(match.group(2))
            assert sum(1 for r in own if r[2] == best and r[3] >= 0.02) == int(match.group(1))
    assert seen == {r[0] for r in rows}
    assert "| long_context_probe (16K in / 512 out) | st=5 |" in zh
    assert "| stress_standard (1K in / 256 out) | st=3 |" in zh


def test_outlier_is_chat_short_c16_and_no_cause_is_invented(zh: str):
    outliers = section(zh, "### 4.")
    assert re.findall(r"^- `([^`]+)`", outliers, flags=re.M) == ["chat_short c=16"]
    assert "st=5 高 32.90%" in outliers
    assert "c=8 是 st=3 高 6.3%" in outliers
    assert "可能原因" not in zh
    assert "本次运行没有服务端指标" in zh
    assert "原因未测量" in outliers


def test_recommendations_follow_the_bands(zh: str):
    advice = section(zh, "## 优化建议")
    assert "| 高并发（c≥96） | **3** |" in advice
    assert "| 中并发（c=64） | 3 或 5 均可 |" in advice
    assert "（c ≤ 32） | **5** |" in advice
    assert "将默认服务改为 `--spec-tokens 3`" in advice
    assert "重复测量 `chat_short c=16`" in advice


def test_english_report_has_the_same_tables_and_no_chinese(zh: str, en: str):
    assert CJK.search(en) is None, CJK.search(en)
    assert table_after(en, lambda line: line == "## Core metrics") == table_after(
        zh, lambda line: line == "## 核心指标对比"
    )
    zh_winners = table_after(zh, lambda line: line == "## 吞吐 winner 统计")
    en_winners = table_after(en, lambda line: line == "## Throughput winners")
    assert en_winners[0].endswith("| Margin |")
    assert en_winners[2:] == zh_winners[2:]
    assert "**High concurrency (c≥96)**: `st=3` wins 2/2 cells" in en
    assert "make `--spec-tokens 3` the default" in en
    assert en.startswith("# vllm-dspark `--spec-tokens` comparison report\n")


def test_header_keeps_the_seed_facts(zh: str):
    # The title, then the answer (## 结论), then the run's facts.
    title_and_summary, header = zh.split("\n---\n")[:2]
    assert title_and_summary.startswith("# vllm-dspark `--spec-tokens` 对比报告\n\n## 结论\n")
    for line in [
        "- 结果目录：`/data/user1/yy/bench_results/dspark_st_comparison_20260707-150649`",
        "- 模型：`/data/models/DeepSeek-V4-Flash-DSpark`",
        "- 后端：vllm-dspark (TP=8, FP8 KV cache)",
        "- 对比参数：`--spec-tokens 3` vs `--spec-tokens 5`",
        "- Warmup：100 条",
        "- 压测客户端：`sglang.bench_serving --backend vllm`",
    ]:
        assert line in header.splitlines()
