"""The report opens with its answer: title, summary (what to deploy, how sure, the caveat), and
only then the run's facts and the tables. A simulated run never tells the user to deploy."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from dspark_tui.report.headline import headline_markdown, is_simulated
from dspark_tui.report.markdown import render_report
from dspark_tui.results import load_run
from tests.conftest import SAMPLE_RUN
from tests.report.k_sweep_builders import k_sweep_run

KS = [0, 1, 2, 3, 4, 5, 6, 7]
SWEEP = {"chat": [1, 4, 16, 64], "rag": [1, 8, 32, 96]}
# What only a run on the real server may say.
DEPLOY_ADVICE = re.compile(r"make `[^`]+` the default|make it the default|改为|\*\*Deploy|部署 `|部署 K 调度")


def _top(text: str) -> list[str]:
    """The lines before the first table row or header fact."""
    lines = text.splitlines()
    end = next(i for i, line in enumerate(lines)
               if line.startswith("|") or line.startswith(("- Result directory", "- 结果目录")))
    return lines[:end]


def _simulated_copy(tmp_path: Path, how: str) -> Path:
    """The seed's run as if it had been measured on the simulator: named in the backend label,
    or only in the server command."""
    run_dir = tmp_path / "sim"
    shutil.copytree(SAMPLE_RUN, run_dir)
    data = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    if how == "label":
        data["backend_label"] = "dspark_tui.sim (simulated vllm-dspark, TP=8, FP8 KV cache)"
    else:
        data["plan"]["server"]["command"] = ["python", "-m", "dspark_tui.sim", "serve", "{model}",
                                             "--spec-tokens", "{spec_tokens}"]
    (run_dir / "run.json").write_text(json.dumps(data), encoding="utf-8")
    return run_dir


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_summary_comes_right_after_the_title_before_any_table(lang: str):
    text = render_report(load_run(SAMPLE_RUN), lang=lang)
    top = _top(text)
    heading = "## 结论" if lang == "zh" else "## Summary"
    assert top[0].startswith("# vllm-dspark `--spec-tokens`")
    assert top[1:3] == ["", heading]
    deploy = "部署 `--spec-tokens 3`" if lang == "zh" else "deploy `--spec-tokens 3`"
    assert any(deploy in line for line in top)  # the answer
    assert any(line.startswith(("- 把握", "- How sure")) for line in top)  # how sure
    # The header facts follow the summary, the tables follow both.
    assert text.index(heading) < text.index("- 结果目录" if lang == "zh" else "- Result directory") \
        < text.index("| Scenario |")


def test_a_k_sweep_opens_with_its_schedule_in_one_line(tmp_path: Path):
    run = k_sweep_run(tmp_path / "run", KS, SWEEP)
    en = render_report(run, lang="en")
    top = _top(en)
    schedule = next(line for line in top if line.startswith("- **Deploy the K schedule**"))
    assert re.search(r"1–\d+ → K=\d", schedule)
    assert any(line.startswith("- With one fixed K for all traffic: K=") for line in top)
    assert any(re.match(r"- How sure: of \d+ comparisons, \d+ are wins and \d+ ties", line) for line in top)
    assert en.index("## Summary") < en.index("## What to deploy") < en.index("## K sweep")


@pytest.mark.parametrize("how", ["label", "command"])
def test_a_simulated_run_shows_what_the_simulator_favours_and_never_says_deploy(tmp_path: Path, how: str):
    real = render_report(load_run(SAMPLE_RUN), lang="en")
    assert "make `--spec-tokens 3` the default" in real  # what the GPU run may say ...
    run = load_run(_simulated_copy(tmp_path, how))
    assert is_simulated(run.manifest)
    for lang in ("zh", "en"):
        text = render_report(run, lang=lang)
        assert not DEPLOY_ADVICE.search(text), DEPLOY_ADVICE.search(text)  # ... a simulated one not
        top = "\n".join(_top(text))
        caveat = "部署哪个配置，要由 GPU 服务器上的一次运行来决定" if lang == "zh" else \
            "a run of this plan on the GPU server decides what to deploy"
        assert caveat in top
    en = render_report(run, lang="en")
    assert "- **c≥96**: the simulator favours `--spec-tokens 3`" in en
    assert "### What the simulator favours per load" in en and "Recommended" not in en
    assert "On the simulator `--spec-tokens 3` leads at high concurrency (c≥96); run this plan on " \
        "the GPU server and let that run decide the default." in en


def test_a_simulated_k_sweep_gives_the_simulators_schedule_not_a_deployment(tmp_path: Path):
    run = k_sweep_run(tmp_path / "run", KS, SWEEP,
                      command_extra='"--speed", "2", "-m", "dspark_tui.sim",')
    assert is_simulated(run.manifest)
    for lang in ("zh", "en"):
        text = render_report(run, lang=lang)
        assert not DEPLOY_ADVICE.search(text), DEPLOY_ADVICE.search(text)
    en = render_report(run, lang="en")
    assert any(line.startswith("- **The simulator's K schedule**") for line in _top(en))
    assert "**Measured on the simulator**: this is the schedule the simulator" in en


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_headline_markdown_is_the_reports_summary_without_tables_or_links(tmp_path: Path, lang: str):
    run = k_sweep_run(tmp_path / "run", KS, SWEEP)
    headline = headline_markdown(run, lang)
    lines = headline.strip().splitlines()
    assert 3 <= len(lines) <= 10
    assert not any(line.startswith(("|", "#")) for line in lines)
    assert "](" not in headline
    report_top = _top(render_report(run, lang=lang))
    assert all(line in report_top for line in lines)  # the same sentences as the report's
