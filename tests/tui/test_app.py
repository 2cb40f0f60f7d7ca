"""App-wide behaviour: themes, keymap, help, the command palette, the plan picker, the CLI."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from textual.command import CommandPalette

from dspark_tui.config import load_settings
from dspark_tui.tui.app import AttachTarget
from dspark_tui.tui.launch import _start_of
from dspark_tui.tui.screens.plan_picker import PlanPickerScreen
from dspark_tui.tui.themes import load_themes, theme_files
from tests.tui.eventlog import write_run
from tests.tui.helpers import make_app, replayed, until_shown, wait_until

SIZE = (100, 30)
RECORDED = Path(__file__).parent / "data" / "demo_run"


def test_our_theme_files_load_and_a_broken_one_is_named(tmp_path: Path):
    names = {theme.name for theme in load_themes()[0]}
    assert {"dspark-dark", "dspark-light"} <= names
    assert all(path.suffix == ".toml" for path in theme_files())
    bad = tmp_path / "themes"
    bad.mkdir()
    (bad / "oops.toml").write_text('name = "oops"\nprimary = "#123456"\nshiny = true\n')
    themes, warnings = load_themes([bad])
    assert "oops" not in {t.name for t in themes}
    assert warnings == [f"{bad / 'oops.toml'}: unknown theme key 'shiny'"]


async def test_theme_chosen_in_the_app_is_remembered(tmp_path: Path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        assert app.theme == "dspark-dark"
        app.theme = "dspark-light"
        await wait_until(pilot, lambda: app.settings.theme == "dspark-light", what="theme remembered")
    settings, warning = load_settings(tmp_path / "config" / "config.toml")
    assert warning is None and settings.theme == "dspark-light"
    again = make_app(tmp_path, settings={"theme": settings.theme})
    async with again.run_test(size=SIZE):
        assert again.theme == "dspark-light"


async def test_unknown_theme_falls_back_with_a_notice(tmp_path: Path):
    app = make_app(tmp_path, settings={"theme": "no-such-theme"})
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until_shown(pilot, app, "unknown theme 'no-such-theme'")
        assert app.theme == "dspark-dark"


async def test_keymap_from_settings_rebinds_by_id(tmp_path: Path):
    run_dir = tmp_path / "demo_run"
    shutil.copytree(RECORDED, run_dir)
    async with replayed(tmp_path, run_dir, "[completed]",
                        size=SIZE, settings={"keymap": {"run.log": "g"}}) as (pilot, app, screen):
        log = screen.query_one("#log-pane")
        await pilot.press("l")
        assert not log.has_class("-visible")
        await pilot.press("g")
        await wait_until(pilot, lambda: log.has_class("-visible"), what="log shown")
        await until_shown(pilot, app, "Starting vLLM API server")


async def test_help_and_palette_list_the_screen_actions(tmp_path: Path):
    run_dir = tmp_path / "demo_run"
    shutil.copytree(RECORDED, run_dir)
    async with replayed(tmp_path, run_dir, "[completed]", size=(120, 40)) as (pilot, app, _):
        await pilot.press("question_mark")
        text = await until_shown(pilot, app, "app.quit")
        for binding_id in ("run.pause", "run.skip", "run.abort", "run.retry", "run.log", "app.quit"):
            assert binding_id in text
        await pilot.press("escape", "ctrl+p")
        await wait_until(pilot, lambda: isinstance(app.screen, CommandPalette), what="palette open")
        await pilot.press(*"charts")  # (abort is off once the run has ended)
        await until_shown(pilot, app, "(c) tok/s, TPOT")  # the screen's binding, with its key
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, CommandPalette), what="closed")
        # Each action once; a focused table's own keys (cursor up, page down ...) are no commands.
        app.screen.query_one("#ab-table").focus()
        await pilot.pause()
        titles = [command.title for command in app.get_system_commands(app.screen)]
        assert len(titles) == len(set(titles)), titles
        assert "Charts" in titles and "Abort" not in titles, titles  # no abort once a run ended
        assert not [t for t in titles if "cursor" in t.lower()], titles


async def test_plan_picker_lists_plans_and_counts_the_chosen_cells(tmp_path: Path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        text = await until_shown(pilot, app, "demo  (shipped)")
        assert isinstance(app.screen, PlanPickerScreen)
        assert "dspark-st3-vs-st5  (shipped)" in text
        await pilot.press("enter")  # the default plan (demo) is highlighted
        await until_shown(pilot, app, "demo: 10 cells")
        await pilot.press("space")  # untick arm st=3
        await until_shown(pilot, app, "demo: 5 cells")
        request = app.screen.request()
        assert request.arms == ["st=5"] and request.scenarios is None and not request.detach
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, PlanPickerScreen), what="closed")


async def test_plan_picker_names_a_bad_plan_file(tmp_path: Path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nmodel = "m"\n[server]\ncommand = []\n')
    app = make_app(tmp_path)
    async with app.run_test(size=(160, 30)) as pilot:
        await pilot.press("n")
        await wait_until(pilot, lambda: isinstance(app.screen, PlanPickerScreen), what="picker open")
        app.screen.query_one("#plan-path").value = str(bad)
        app.screen.query_one("#plan-path").focus()
        await pilot.press("enter")
        await until_shown(pilot, app, f"{bad}:")


def test_cli_names_user_mistakes_in_one_line(tmp_path: Path):
    env = {"DSPARK_CONFIG_DIR": str(tmp_path), "DSPARK_RESULTS_ROOT": str(tmp_path / "r"),
           "PATH": "/usr/bin:/bin"}
    env = {**os.environ, **env}
    missing = subprocess.run([sys.executable, "-m", "dspark_tui", "run", str(tmp_path / "no.toml")],
                             capture_output=True, text=True, env=env, timeout=30)
    assert missing.returncode == 2
    assert missing.stderr.count("\n") == 1 and "no.toml" in missing.stderr
    attach = subprocess.run([sys.executable, "-m", "dspark_tui", "attach"],
                            capture_output=True, text=True, env=env, timeout=30)
    assert attach.returncode == 2
    assert attach.stderr.startswith("dspark-tui: error: attach: no running run in ")
    assert attach.stderr.count("\n") == 1, attach.stderr


async def test_a_failing_background_task_is_shown_not_swallowed(tmp_path: Path):
    app = make_app(tmp_path)

    async def broken() -> None:
        raise RuntimeError("disk on fire")

    async with app.run_test(size=SIZE, notifications=True) as pilot:
        app.run_worker(broken(), exit_on_error=False, description="loading the plan")
        await until_shown(pilot, app, "loading the plan failed: disk on fire")
        assert app.is_running


def test_plain_command_opens_history_or_the_run_that_is_going(tmp_path: Path):
    root = tmp_path / "results"
    args = argparse.Namespace(command=None)
    write_run(root)  # finished: nothing is going, so History
    assert _start_of(args, tmp_path / "plans", [root]) is None
    live = write_run(root, stop_after=2, finish=False, live=True)
    assert _start_of(args, tmp_path / "plans", [root]) == AttachTarget(live)
