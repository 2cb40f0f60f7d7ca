"""Our own themes, kept as TOML files so users can read and copy them.

The files live in the top-level `themes/` folder; `dspark_tui/themes` links to it so the same
lookup works in a checkout and in an installed wheel (setuptools copies the files).
"""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path

from textual.theme import Theme

_THEME_KEYS = (
    "primary", "secondary", "accent", "foreground", "background", "surface", "panel",
    "boost", "warning", "error", "success", "dark", "luminosity_spread", "text_alpha", "variables",
)


def theme_files() -> list[Path]:
    candidates = [Path(str(resources.files("dspark_tui") / "themes")),
                  Path(__file__).resolve().parents[2] / "themes"]
    for folder in candidates:
        if folder.is_dir():
            return sorted(folder.glob("*.toml"))
    return []


def load_theme_file(path: Path) -> Theme:
    """One theme; a broken file raises ValueError naming the file, so one bad theme costs only itself."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"{path}: not a readable theme ({exc})") from None
    name = data.get("name") or path.stem
    if "primary" not in data:
        raise ValueError(f"{path}: a theme needs at least `primary`")
    unknown = sorted(set(data) - {"name", *_THEME_KEYS})
    if unknown:
        raise ValueError(f"{path}: unknown theme key {unknown[0]!r}")
    try:
        return Theme(name=str(name), **{k: v for k, v in data.items() if k in _THEME_KEYS})
    except Exception as exc:  # Theme validates colours lazily and raises several types
        raise ValueError(f"{path}: {exc}") from None


def load_themes(extra_dirs: list[Path] | None = None) -> tuple[list[Theme], list[str]]:
    """(themes, warnings): ours, then any in the user's folders (a user file may override ours)."""
    files = theme_files()
    for folder in extra_dirs or []:
        if folder.is_dir():
            files.extend(sorted(folder.glob("*.toml")))
    themes: list[Theme] = []
    warnings: list[str] = []
    for path in files:
        try:
            themes.append(load_theme_file(path))
        except ValueError as exc:
            warnings.append(str(exc))
    return themes, warnings
