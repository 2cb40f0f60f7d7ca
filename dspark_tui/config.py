"""User settings: `config.toml` in the platformdirs config folder, `DSPARK_*` variables over it.

A broken config must never stop the tool, nor cost the user the keys that were right: each key
of the file and each variable is validated on its own; a bad one is reported in one line naming
the file (or variable) and the key, and only it falls back (to the file's value, else the default).
"""

from __future__ import annotations

import os
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import Field, TypeAdapter, ValidationError
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from dspark_tui.model import safe_files
from dspark_tui.model.numbers import MAX_DEPTH, check_scalars, too_deep

APP_NAME = "dspark-tui"
ENV_PREFIX = "DSPARK_"


def config_dir() -> Path:
    override = os.environ.get("DSPARK_CONFIG_DIR")
    return Path(override).expanduser() if override else platformdirs.user_config_path(APP_NAME)


def default_results_root() -> Path:
    return platformdirs.user_data_path(APP_NAME) / "results"


def locale_language(env: Mapping[str, str] | None = None) -> Literal["zh", "en"]:
    """The report language a user who has set none gets: zh under a Chinese locale, else en.
    The first of LC_ALL, LC_MESSAGES, LANG that is set decides, as POSIX orders them."""
    env = os.environ if env is None else env
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(name, "")
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


def sample_results_dir() -> Path | None:
    """The seed's run shipped beside the package in a source checkout (absent in a bare wheel)."""
    candidate = Path(__file__).resolve().parent.parent / "sample_results"
    return candidate if candidate.is_dir() else None


class Settings(BaseSettings):
    """Every key can be set in config.toml or as `DSPARK_<KEY>` (lists and tables as JSON)."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_ignore_empty=True, extra="forbid")

    results_root: Path = Field(default_factory=default_results_root)
    extra_results_dirs: list[Path] = Field(default_factory=list)
    plans_dir: Path = Field(default_factory=lambda: config_dir() / "plans")
    default_plan: str = "demo"
    theme: str = "dspark-dark"
    # The language screens and the viewer open in; report.md (zh) and report.en.md are both
    # written whatever it is.
    language: Literal["zh", "en"] = Field(default_factory=locale_language)
    keymap: dict[str, str] = Field(default_factory=dict)
    # A lost terminal (SSH drop, closed tmux) hands a run off as detach does; false: the run
    # stops, interrupted and resumable (`--no-detach-on-hangup` for one run).
    detach_on_hangup: bool = True
    # The SVG charts beside the report (matplotlib: ~1.5 s of CPU at a small run's end); false:
    # none are drawn, the reports link none, and the run ends that much sooner.
    charts: bool = True

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # load_settings reads the file and the environment key by key and passes what is valid;
        # a Settings built in code holds exactly what it was given.
        return (init_settings,)

    def history_roots(self) -> list[Path]:
        roots = [self.results_root, *self.extra_results_dirs]
        sample = sample_results_dir()
        if sample is not None:
            roots.append(sample)
        return roots


_CHECKS = {name: TypeAdapter(info.rebuild_annotation()) for name, info in Settings.model_fields.items()}


def config_path() -> Path:
    return config_dir() / "config.toml"


def _problem(key: str, value: Any) -> str | None:
    """Why `value` cannot be the setting `key`, in a few words; None when it can."""
    check = _CHECKS.get(key)
    if check is None:
        return f"unknown key (known: {', '.join(_CHECKS)})"
    try:
        check_scalars(value)
    except ValueError as exc:
        return str(exc)
    try:
        check.validate_python(value)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        return f"{error['msg']}, got {value!r}"
    return None


def _file_values(path: Path) -> tuple[dict[str, Any], list[str]]:
    try:
        values = tomllib.loads(safe_files.read_text(path, safe_files.PLAN_CAP, follow=True))
    except FileNotFoundError:
        return {}, []
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return {}, [f"{path}: ignored, not valid TOML ({exc}); using defaults"]
    except RecursionError:
        values = None
    if values is None or too_deep(values):
        return {}, [f"{path}: ignored, arrays or tables nested deeper than {MAX_DEPTH} levels; "
                    "using defaults"]
    return values, []


def _env_values() -> tuple[dict[str, Any], list[str]]:
    """`DSPARK_<KEY>` for every setting, parsed by pydantic-settings (JSON for lists and tables)."""
    source = EnvSettingsSource(Settings)
    values: dict[str, Any] = {}
    problems: list[str] = []
    for name, info in Settings.model_fields.items():
        variable = f"{ENV_PREFIX}{name.upper()}"
        try:
            raw, _, is_complex = source.get_field_value(info, name)
            value = source.prepare_field_value(name, info, raw, is_complex)
        except (SettingsError, ValueError) as exc:
            problems.append(f"{variable}: ignored, not valid JSON ({exc})")
            continue
        if value is not None:
            values[name] = value
    return values, problems


def load_settings(path: Path | None = None) -> tuple[Settings, str | None]:
    """(settings, warning). The warning is one line naming each bad key and where it came from."""
    path = path or config_path()
    file_values, warnings = _file_values(path)
    env_values, env_warnings = _env_values()
    warnings.extend(env_warnings)
    chosen: dict[str, Any] = {}
    for origin, values in ((str(path), file_values), (None, env_values)):
        for key, value in values.items():
            problem = _problem(key, value)
            if problem is None:
                chosen[key] = value
            elif origin is None:
                warnings.append(f"{ENV_PREFIX}{key.upper()}: ignored, {problem}")
            else:
                warnings.append(f"{origin}: key {key!r} ignored, {problem}")
    return Settings(**chosen), "; ".join(warnings) or None


def settings_or_warn(path: Path | None = None) -> Settings:
    """The settings for a command: each problem is one warning line on stderr, then it goes on."""
    settings, warning = load_settings(path)
    if warning:
        print(f"dspark-tui: warning: {warning}", file=sys.stderr)
    return settings


def save_setting(key: str, value: str, path: Path | None = None) -> None:
    """Remember one top-level choice (theme, language), keeping the file's other keys and comments.

    A file that is not valid TOML is left alone (it was reported when loaded): the choice is kept
    for this session only rather than overwrite what the user wrote.
    """
    import tomlkit  # only here: writing a setting is rare, and every CLI start loads this module
    from tomlkit.exceptions import TOMLKitError

    from dspark_tui.results.atomic import atomic_write_text

    path = path or config_path()
    try:
        document = tomlkit.parse(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        document = tomlkit.document()
    except (OSError, UnicodeDecodeError, TOMLKitError):
        return
    document[key] = value
    atomic_write_text(path, tomlkit.dumps(document))
