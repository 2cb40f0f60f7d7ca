"""Every screen in Chinese when the app's language is zh: no English label on it.

The app is opened in zh over real run directories (the recorded demo run and a finished K
sweep) and each screen is read as a terminal shows it. An English word is a run of three or more
Latin letters that is not a unit, a metric's name, a key, or a name the run itself carries (an
arm, a scenario, a run, a model, a path): those stay as they are in either language.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from textual.pilot import Pilot

from dspark_tui.plans import shipped_plan_names
from dspark_tui.tui.screens.charts import ChartScreen
from dspark_tui.tui.screens.compare import CompareScreen
from dspark_tui.tui.screens.decision import DecisionScreen
from dspark_tui.tui.screens.help import HelpScreen
from dspark_tui.tui.screens.history import HistoryScreen
from dspark_tui.tui.screens.plan_picker import PlanPickerScreen
from dspark_tui.tui.screens.report import ReportScreen
from dspark_tui.tui.screens.run_detail import RunDetailScreen
from tests.conftest import SAMPLE_RUN
from tests.tui.helpers import make_app, run_screen_shown, screen_text, settled, wait_until
from tests.tui.k_sweep_dir import write_k_sweep

RECORDED = Path(__file__).parent / "data" / "demo_run"
SIZE = (120, 40)

# Units, metrics, formats and programs: the same in both languages.
KEPT = {
    "tok", "TTFT", "TPOT", "ITL", "E2E", "P99", "KV", "GPU", "CPU", "JSON", "TOML", "SVG", "CSV",
    "ms", "vLLM", "vllm", "dspark", "tui", "ctrl", "esc", "enter", "space", "Home", "End", "Tab",
    "tab", "Enter", "Esc", "demo", "attach", "keymap", "binding", "key", "id", "speculative",
    "config", "serve", "num", "max", "seqs", "model", "Total", "Out", "Mean", "p50", "p99",
    "AL", "md", "html", "sim", "dspark_tui", "log",
    "batch",  # vLLM's running batch: the catalogue's zh says 运行 batch
    "rounds",  # the plan key (`rounds >= 2`) a sentence names
}


# Code on a screen: a binding id (`history.open`), a plan key (`bench.rounds`), a flag
# (`--max-num-seqs`), a path (`docs/decision.md`), a JSON key or a placeholder (`num_speculative_tokens`).
CODE = re.compile(r"\S*(?:[._/=]|--)\S*|\S*[A-Za-z]_[A-Za-z]\S*")


WORD = re.compile(r"[A-Za-z][A-Za-z]{2,}")


def english_words(text: str, names: set[str]) -> list[str]:
    """Latin words of three or more letters on the screen that are neither kept, nor a name,
    nor code. A name excuses whole words only: the name itself, or a word of a name that is
    shown as it is (`demo` of a model `demo-model`); never a word that merely occurs inside a
    name (`say` in a tmp path `test_every_screen_says…`, which let English through)."""
    # A name with code in it (`demo_run_b`, a path) leaves the screen whole with CODE: only
    # the words of a plain name (`Qwen3 8B`, `demo-model`) are excused one by one.
    allowed = {token for name in names if not CODE.search(name) for token in WORD.findall(name)}
    found = []
    for word in WORD.findall(CODE.sub(" ", text)):
        if word in KEPT or word.lower() in KEPT or word in names or word in allowed:
            continue
        found.append(word)
    return sorted(set(found))


def names_of(*run_dirs: Path) -> set[str]:
    """Names a run carries (its folder, name, model, arms, scenarios). Paths are code (CODE
    takes them off the screen whole), so the test's tmp path is no name: its words (`every`,
    `screen`, `says` …) would excuse the same English words anywhere on a screen."""
    import json

    names: set[str] = set()
    for run_dir in run_dirs:
        manifest = json.loads((run_dir / "run.json").read_text())
        names |= {run_dir.name, manifest.get("name", ""), manifest.get("model", ""),
                  *(a.get("name", "") for a in manifest.get("arms") or [] if isinstance(a, dict)),
                  *(s.get("name", "") for s in (manifest.get("plan") or {}).get("scenarios") or []
                    if isinstance(s, dict))}
        names |= set(manifest.get("scenarios") or [])
        names.add(str(manifest.get("model", "")).rsplit("/", 1)[-1])  # as screens show a model
    return {name for name in names if name}


def test_a_name_excuses_whole_words_only():
    """The check itself: a tmp path's or a name's inner letters excuse nothing."""
    names = names_of(Path(__file__).parent / "data" / "demo_run")
    assert english_words("状态 unsure 0/5", names) == ["unsure"]
    assert english_words("配置 st=3 vs st=5", names | {"test_every_screen_says_its_la0"}) == []
    assert english_words("every screen says", names | {"test_every_screen_says_its_la0"}) == [
        "every", "says", "screen"]
    assert english_words("模型 demo model", {"demo-model"}) == []  # a name shown as it is
    assert english_words("/tmp/pytest-of-x/test_every_screen_says_its_la0/results", names) == []


async def _shown(pilot: Pilot[object], what: str, ready) -> str:  # type: ignore[no-untyped-def]
    await wait_until(pilot, ready, timeout=30, what=what)
    await settled(pilot)
    return screen_text(pilot.app)


async def test_every_screen_says_its_labels_in_chinese(tmp_path: Path):
    root = tmp_path / "results"
    demo = root / "demo_run"
    shutil.copytree(RECORDED, demo)
    other = root / "demo_run_b"
    shutil.copytree(RECORDED, other)
    sweep = write_k_sweep(root)
    names = names_of(demo, other, sweep)
    app = make_app(tmp_path, settings={"language": "zh"})
    english: dict[str, list[str]] = {}
    async with app.run_test(size=SIZE) as pilot:
        def on_top(kind: type, loaded=lambda s: True):  # type: ignore[no-untyped-def]
            return lambda: isinstance(app.screen, kind) and loaded(app.screen)

        history = await _shown(pilot, "History", on_top(
            HistoryScreen, lambda s: any(t.row_count >= 2 for t in s.query("#history-table"))))
        english["history"] = english_words(history, names | names_of(SAMPLE_RUN) | {
            "results", "sample_results"})
        await pilot.press("question_mark")
        english["help"] = english_words(await _shown(pilot, "help", on_top(HelpScreen)), names)
        await pilot.press("escape")
        await wait_until(pilot, on_top(HistoryScreen), what="back in History")
        await pilot.press("n", "enter")  # the New-run picker, the demo plan loaded
        english["plan picker"] = english_words(await _shown(pilot, "the picker", on_top(
            PlanPickerScreen, lambda s: s.plan is not None)), names | {"native", *shipped_plan_names()})
        await pilot.press("escape")

        app.push_screen(RunDetailScreen(demo))
        detail = await _shown(pilot, "the run's detail", on_top(
            RunDetailScreen, lambda s: s.run is not None))
        for tab in ("w", "e"):
            await pilot.press(tab)
            await settled(pilot)
            detail += screen_text(app)
        english["run detail"] = english_words(detail, names)
        app.pop_screen()

        app.push_screen(ReportScreen(demo))
        viewer = await _shown(pilot, "the report", on_top(ReportScreen, lambda s: bool(s.text)))
        # The viewer's own lines: the report's body is report/'s zh text, whose appendix tables
        # keep the seed's English column names (tests/report's goldens hold them).
        lines = viewer.splitlines()
        english["report viewer"] = english_words("\n".join([lines[0], lines[-1]]), names)
        app.pop_screen()

        app.push_screen(CompareScreen(demo, other))
        english["compare"] = english_words(await _shown(pilot, "the comparison", on_top(
            CompareScreen, lambda s: any(t.row_count for t in s.query("#compare-table")))), names)
        app.pop_screen()

        app.push_screen(DecisionScreen(sweep))
        english["decision view"] = english_words(await _shown(pilot, "the decision", on_top(
            DecisionScreen, lambda s: s.answer is not None)), names)
        app.pop_screen()

        app.push_screen(ChartScreen(demo))
        english["charts"] = english_words(await _shown(pilot, "the chart", on_top(
            ChartScreen, lambda s: bool(getattr(s, "cells", None)))), names)
        app.pop_screen()

        app.open_replay(demo)
        screen = await run_screen_shown(pilot, "[", timeout=30)
        await settled(pilot)
        english["run screen"] = english_words(screen_text(app), names)
        assert screen is not None
    assert {where: words for where, words in english.items() if words} == {}


def test_every_key_of_every_screen_is_named_in_the_catalogue_as_the_code_names_it():
    """Each binding with an id has its name (and its tooltip, when it has one) in both
    languages; the English one is the code's own, so the two never drift apart."""
    import importlib
    import pkgutil

    from textual.binding import Binding

    import dspark_tui.tui.screens as screens
    import dspark_tui.tui.widgets as widgets
    from dspark_tui.report.words import CATALOGUE
    from dspark_tui.tui import app, keys

    modules = [app, *(importlib.import_module(f"{package.__name__}.{info.name}")
                      for package in (screens, widgets) for info in pkgutil.iter_modules(package.__path__))]
    bindings = [b for module in modules for owner in vars(module).values() if isinstance(owner, type)
                for b in getattr(owner, "BINDINGS", []) or [] if isinstance(b, Binding) and b.id]
    bindings += [b for b in keys.NAVIGATION if b.id]
    assert len(bindings) > 60
    for binding in bindings:
        for lang in ("en", "zh"):
            assert f"screens.key.{binding.id}" in CATALOGUE[lang], (lang, binding.id)
            if binding.tooltip:
                assert f"screens.tip.{binding.id}" in CATALOGUE[lang], (lang, binding.id)
        assert CATALOGUE["en"][f"screens.key.{binding.id}"] == binding.description, binding.id
        if binding.tooltip:
            assert CATALOGUE["en"][f"screens.tip.{binding.id}"] == binding.tooltip, binding.id
