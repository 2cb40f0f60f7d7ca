"""The language the screens open in: the user's setting when they made one, else the locale's."""

from __future__ import annotations

import os
from collections.abc import Mapping

from dspark_tui.config import Settings


def locale_language(env: Mapping[str, str] | None = None) -> str:
    """`zh` for a Chinese locale, else `en`; LC_ALL wins over LC_MESSAGES over LANG, as in POSIX."""
    env = os.environ if env is None else env
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(name, "")
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


def view_language(settings: Settings | None, env: Mapping[str, str] | None = None) -> str:
    if settings is not None and "language" in settings.model_fields_set:
        return settings.language
    return locale_language(env)
