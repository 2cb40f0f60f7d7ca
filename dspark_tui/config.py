"""User settings: a TOML file in the platformdirs config folder, `DSPARK_*` variables over it.

A broken config file must never stop the tool: it is reported in one line and defaults apply.
"""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path
from typing import Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, ValidationError

APP_NAME = "dspark-tui"


def config_dir() -> Path:
    override = os.environ.get("DSPARK_CONFIG_DIR")
    return Path(override).expanduser() if override else platformdirs.user_config_path(APP_NAME)


def default_results_root() -> Path:
    return platformdirs.user_data_path(APP_NAME) / "results"


def sample_results_dir() -> Path | None:
    """The seed's run shipped beside the package in a source checkout (absent in a bare wheel)."""
    candidate = Path(__file__).resolve().parent.parent / "sample_results"
    return candidate if candidate.is_dir() else None


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    results_root: Path = Field(default_factory=default_results_root)
    extra_results_dirs: list[Path] = Field(default_factory=list)
    plans_dir: Path = Field(default_factory=lambda: config_dir() / "plans")
    default_plan: str = "demo"
    theme: str = "dspark-dark"
    language: Literal["zh", "en"] = "zh"
    keymap: dict[str, str] = Field(default_factory=dict)

    def history_roots(self) -> list[Path]:
        roots = [self.results_root, *self.extra_results_dirs]
        sample = sample_results_dir()
        if sample is not None:
            roots.append(sample)
        return roots


_ENV_KEYS = {
    "DSPARK_RESULTS_ROOT": "results_root",
    "DSPARK_PLANS_DIR": "plans_dir",
    "DSPARK_DEFAULT_PLAN": "default_plan",
    "DSPARK_THEME": "theme",
    "DSPARK_LANGUAGE": "language",
}


def config_path() -> Path:
    return config_dir() / "config.toml"


def load_settings(path: Path | None = None) -> tuple[Settings, str | None]:
    """(settings, warning). The warning is one line naming the file and key, or None."""
    path = path or config_path()
    data: dict[str, object] = {}
    warning: str | None = None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        pass
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        warning = f"{path}: ignored, not valid TOML ({exc}); using defaults"
    for env, key in _ENV_KEYS.items():
        if os.environ.get(env):
            data[key] = os.environ[env]
    try:
        return Settings.model_validate(data), warning
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        key = ".".join(str(p) for p in err["loc"])
        warning = f"{path}: ignored, key {key!r}: {err['msg']}; using defaults"
        env_only = {k: v for k, v in data.items() if k in _ENV_KEYS.values()}
        try:
            return Settings.model_validate(env_only), warning
        except ValidationError:
            return Settings(), warning


def settings_or_warn(path: Path | None = None) -> Settings:
    """The settings for a command: a bad file is one warning line on stderr, then defaults."""
    settings, warning = load_settings(path)
    if warning:
        print(f"dspark-tui: warning: {warning}", file=sys.stderr)
    return settings


def save_setting(key: str, value: str, path: Path | None = None) -> None:
    """Remember one top-level choice (theme, language) without disturbing the rest of the file."""
    from dspark_tui.results.atomic import atomic_write_text

    path = path or config_path()
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        lines = []
    rendered = f'{key} = "{value}"'
    for i, line in enumerate(lines):
        if line.split("=", 1)[0].strip() == key and not line.lstrip().startswith("["):
            lines[i] = rendered
            break
    else:
        first_table = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("[")), len(lines))
        lines.insert(first_table, rendered)
    atomic_write_text(path, "\n".join(lines) + "\n")
