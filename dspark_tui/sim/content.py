"""Acceptance that depends on what the prompt is: per-category profiles and prompt lookup.

A real drafter accepts longer runs on code and structured output than on open chat. The
simulator cannot read meaning, so it is told the prompts: it reads prompt files (the project's
own, plus any `--prompts FILE`, the dataset the run sends) and recognises a prompt it receives by
its first words, whitespace-normalised. The start survives what clients do to a prompt — cut to
a length, repeated to a length, sent through /tokenize and back — so a category-pure cell's
acceptance is exactly the configured profile: a ground truth a test can check. A prompt it does
not know (random token ids, text from elsewhere) gets the base `--acceptance`.

A profile `code=0.88` is the first draft position's acceptance; deeper positions fall as the
base curve does (each p_i scaled by 0.88 / base p_1, capped at 1). A TOML or JSON file may give
a number or the whole per-position list per category.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from dspark_tui.model.prompt_file import PromptEntry

# Words of a prompt's start that identify it (fewer when the prompt is shorter).
KEY_WORDS = 8

Acceptance = tuple[float, ...]


class ProfileError(ValueError):
    """A bad `--accept-profile`; str() is the one line to print."""


def scaled_acceptance(first: float, base: Acceptance) -> Acceptance:
    """The base per-position curve moved so that position 1 accepts with `first`."""
    if not base or base[0] <= 0:
        return (first,)
    return tuple(min(1.0, first * p / base[0]) for p in base)


def parse_accept_profile(text: str, base: Acceptance) -> dict[str, Acceptance]:
    """`code=0.88,chat=0.70`, or the path of a .toml / .json file mapping category to rate(s)."""
    if text.endswith((".toml", ".json")) or Path(text).is_file():
        return _profile_file(Path(text), base)
    profiles: dict[str, Acceptance] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        if not sep or not name.strip():
            raise ProfileError(f"--accept-profile: {part!r} is not CATEGORY=RATE")
        profiles[name.strip()] = _profile(f"--accept-profile {name.strip()}", _number(value), base)
    if not profiles:
        raise ProfileError("--accept-profile: no CATEGORY=RATE given")
    return profiles


def _number(value: str) -> float | str:
    try:
        return float(value)
    except ValueError:
        return value


def _profile_file(path: Path, base: Acceptance) -> dict[str, Acceptance]:
    try:
        raw = path.read_bytes()
        data = json.loads(raw) if path.suffix == ".json" else tomllib.loads(raw.decode())
    except OSError as exc:
        raise ProfileError(f"--accept-profile: cannot read {path}: {exc.strerror}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProfileError(f"--accept-profile: {path}: {exc}") from None
    if not isinstance(data, dict) or not data:
        raise ProfileError(f"{path}: expected a table of category = rate or [rates]")
    return {str(name): _profile(f"{path}: {name}", value, base) for name, value in data.items()}


def _profile(where: str, value: object, base: Acceptance) -> Acceptance:
    given = value if isinstance(value, list) else [value]
    rates = [float(r) for r in given if isinstance(r, int | float) and not isinstance(r, bool)
             and 0.0 <= r <= 1.0]
    if not rates or len(rates) != len(given):
        raise ProfileError(f"{where}: a rate in [0, 1] or a list of them, got {value!r}")
    if isinstance(value, list):
        return tuple(rates)
    return scaled_acceptance(rates[0], base)


def prompt_key(text: str, words: int) -> str:
    return " ".join(text.split()[:words])


@dataclass(frozen=True)
class ContentAcceptance:
    """Which category a prompt is, and the acceptance that category has."""

    profiles: Mapping[str, Acceptance] = field(default_factory=dict)
    # prompt key (its first words) -> category, per key length
    index: Mapping[int, Mapping[str, str]] = field(default_factory=dict)

    @classmethod
    def build(cls, profiles: Mapping[str, Acceptance],
              entries: Iterable[PromptEntry]) -> ContentAcceptance:
        index: dict[int, dict[str, str]] = {}
        for entry in entries:
            if entry.category is None:
                continue
            words = min(KEY_WORDS, len(entry.text.split()))
            index.setdefault(words, {})[prompt_key(entry.text, words)] = entry.category
        return cls(profiles=dict(profiles), index=index)

    @property
    def enabled(self) -> bool:
        return bool(self.profiles and self.index)

    @property
    def known_prompts(self) -> int:
        return sum(len(keys) for keys in self.index.values())

    def category_of(self, text: str) -> str | None:
        for words in sorted(self.index, reverse=True):
            category = self.index[words].get(prompt_key(text, words))
            if category is not None:
                return category
        return None

    def acceptance_of(self, text: str | None) -> Acceptance | None:
        """The prompt's profile; None (the base acceptance) for unknown prompts and categories."""
        if text is None or not self.enabled:
            return None
        category = self.category_of(text)
        return None if category is None else self.profiles.get(category)


def prompt_text(body: Mapping[str, object], chat: bool) -> str | None:
    """The text a request asks about; None for token-id prompts (no text to recognise)."""
    if chat:
        messages = body.get("messages")
        if not isinstance(messages, list):
            return None
        return " ".join(str(m.get("content") or "") for m in messages
                        if isinstance(m, dict) and isinstance(m.get("content"), str))
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1:
        prompt = prompt[0]
    return prompt if isinstance(prompt, str) else None
