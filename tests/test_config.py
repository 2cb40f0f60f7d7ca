"""User settings: each key of config.toml and each DSPARK_* variable stands or falls alone."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dspark_tui.config import Settings, load_settings, save_setting

README = Path(__file__).resolve().parent.parent / "README.md"


@pytest.fixture(autouse=True)
def _no_dspark_env(monkeypatch: pytest.MonkeyPatch):
    for name in list(os.environ):
        if name.startswith("DSPARK_"):
            monkeypatch.delenv(name)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_bad_value_is_named_and_dropped_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("LC_ALL", raising=False)
    monkeypatch.delenv("LC_MESSAGES", raising=False)
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    path = _write(tmp_path, f'language = "fr"\nresults_root = "{tmp_path / "mine"}"\ntheme = "x"\n')
    settings, warning = load_settings(path)
    assert settings.language == "zh"  # the default (the locale's), for this key only
    assert settings.results_root == tmp_path / "mine" and settings.theme == "x"
    assert warning == f"{path}: key 'language' ignored, Input should be 'zh' or 'en', got 'fr'"


def test_an_unknown_key_is_named_and_the_rest_applies(tmp_path: Path):
    path = _write(tmp_path, 'langauge = "en"\ndefault_plan = "mine"\n\n[keymap]\nquit = "ctrl+q"\n')
    settings, warning = load_settings(path)
    assert settings.default_plan == "mine" and settings.keymap == {"quit": "ctrl+q"}
    assert warning is not None and warning.startswith(f"{path}: key 'langauge' ignored, unknown key")
    assert "\n" not in warning


def test_a_file_that_is_not_toml_gives_defaults_and_one_line(tmp_path: Path):
    path = _write(tmp_path, "language = [\n")
    settings, warning = load_settings(path)
    assert settings == Settings()
    assert warning is not None and warning.startswith(f"{path}: ignored, not valid TOML (")
    assert "\n" not in warning


def test_every_key_can_be_set_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    values = {
        "DSPARK_RESULTS_ROOT": str(tmp_path / "r"),
        "DSPARK_EXTRA_RESULTS_DIRS": f'["{tmp_path / "a"}", "{tmp_path / "b"}"]',
        "DSPARK_PLANS_DIR": str(tmp_path / "p"),
        "DSPARK_DEFAULT_PLAN": "big",
        "DSPARK_THEME": "dspark-light",
        "DSPARK_LANGUAGE": "en",
        "DSPARK_KEYMAP": '{"quit": "ctrl+q", "help": "f1"}',
        "DSPARK_DETACH_ON_HANGUP": "false",
        "DSPARK_CHARTS": "false",
    }
    assert {f"DSPARK_{name.upper()}" for name in Settings.model_fields} == set(values)
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    path = _write(tmp_path, 'language = "zh"\ntheme = "from-file"\n')
    settings, warning = load_settings(path)
    assert warning is None
    assert settings == Settings(
        results_root=tmp_path / "r", extra_results_dirs=[tmp_path / "a", tmp_path / "b"],
        plans_dir=tmp_path / "p", default_plan="big", theme="dspark-light", language="en",
        keymap={"quit": "ctrl+q", "help": "f1"}, detach_on_hangup=False, charts=False,
    )  # fmt: skip


def test_a_bad_variable_falls_back_to_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("DSPARK_LANGUAGE", "fr")
    monkeypatch.setenv("DSPARK_KEYMAP", "quit=q")
    monkeypatch.setenv("DSPARK_THEME", "")  # empty means unset
    path = _write(tmp_path, 'language = "en"\ntheme = "t"\n[keymap]\nhelp = "f1"\n')
    settings, warning = load_settings(path)
    assert (settings.language, settings.theme, settings.keymap) == ("en", "t", {"help": "f1"})
    assert warning is not None
    problems = warning.split("; ")
    assert len(problems) == 2, warning
    assert problems[0].startswith("DSPARK_KEYMAP: ignored, not valid JSON")
    assert problems[1] == "DSPARK_LANGUAGE: ignored, Input should be 'zh' or 'en', got 'fr'"


def test_readme_lists_exactly_the_settings():
    text = README.read_text(encoding="utf-8")
    listed = re.search(r"config folder \(.*?: (.*?)\), each overridable", text, re.S)
    assert listed is not None, "README's sentence on settings moved; update this test"
    names = set(re.findall(r"`(\w+)`", listed.group(1)))
    assert names == set(Settings.model_fields)


def test_saving_a_setting_keeps_the_rest_of_the_file(tmp_path: Path):
    original = '# mine\nlanguage = "en"  # English reports\n\n[keymap]\nquit = "ctrl+q"\n'
    path = _write(tmp_path, original)
    save_setting("theme", 'odd "name" \\ here', path)
    save_setting("language", "zh", path)
    text = path.read_text(encoding="utf-8")
    assert "# mine" in text and "# English reports" in text
    settings, warning = load_settings(path)
    assert warning is None
    assert settings.theme == 'odd "name" \\ here'
    assert (settings.language, settings.keymap) == ("zh", {"quit": "ctrl+q"})


def test_saving_creates_the_file_and_leaves_a_broken_one_alone(tmp_path: Path):
    fresh = tmp_path / "new" / "config.toml"
    save_setting("theme", "dspark-light", fresh)
    assert load_settings(fresh) == (Settings(theme="dspark-light"), None)
    broken = _write(tmp_path, "language = [\n")
    save_setting("theme", "dspark-light", broken)
    assert broken.read_text(encoding="utf-8") == "language = [\n"


def test_the_cli_warns_in_one_line_and_applies_the_other_keys(tmp_path: Path):
    plans = tmp_path / "plans"
    plans.mkdir()
    (plans / "mine.toml").write_text("# a user plan\n", encoding="utf-8")
    _write(tmp_path, f'language = "fr"\nplans_dir = "{plans}"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSPARK_")}
    env["DSPARK_CONFIG_DIR"] = str(tmp_path)
    done = subprocess.run([sys.executable, "-m", "dspark_tui", "plan", "list"], capture_output=True,
                          text=True, timeout=60, env=env, stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr == (f"dspark-tui: warning: {tmp_path / 'config.toml'}: key 'language' ignored, "
                           "Input should be 'zh' or 'en', got 'fr'\n")
    assert "\nmine " in done.stdout and str(plans / "mine.toml") in done.stdout  # plan list: a user plan


@pytest.mark.parametrize(("env", "expected"), [
    ({"LANG": "zh_CN.UTF-8"}, "zh"),
    ({"LANG": "zh_TW.UTF-8"}, "zh"),
    ({"LANG": "en_US.UTF-8"}, "en"),
    ({"LANG": "C.UTF-8"}, "en"),
    ({}, "en"),
    ({"LC_ALL": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"}, "zh"),  # LC_ALL wins
    ({"LC_MESSAGES": "en_GB.UTF-8", "LANG": "zh_CN.UTF-8"}, "en"),  # then LC_MESSAGES
])
def test_the_default_report_language_follows_the_locale(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: str):
    for name in ("LC_ALL", "LC_MESSAGES", "LANG", "DSPARK_LANGUAGE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings, warning = load_settings(tmp_path / "absent.toml")
    assert (settings.language, warning) == (expected, None)
    # A language the user set wins over the locale.
    other = "zh" if expected == "en" else "en"
    settings, _ = load_settings(_write(tmp_path, f'language = "{other}"\n'))
    assert settings.language == other
