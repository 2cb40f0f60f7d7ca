"""The catalogue of words: every sentence the reports say, one module per language (zh.py, en.py),
each a plain dict whose keys are namespaced by section (`findings.…`, `decision.…`).

`Texts(lang, section)` reads one section of one language: `t("key", name=value)` fills the
template `section.key`. Templates take only computed values; nothing here states a fact on its
own. tests/report/test_words.py holds both languages to the same keys and placeholders, and
every key the code asks for to the catalogue.

Sections: `report` (the report's body, shared by its modules), `decision` (a K sweep),
`verification`, `greedy`, `slo` (throughput under an SLO), `categories`, `compare` (two runs
side by side), `screens` (what the app's screens say, tui/words.py).
"""

from __future__ import annotations

from collections.abc import Iterable

from dspark_tui.model import UserError
from dspark_tui.report.words import en, zh

LANGS = ("zh", "en")

CATALOGUE: dict[str, dict[str, str]] = {"zh": zh.WORDS, "en": en.WORDS}

SECTIONS = ("report", "decision", "verification", "greedy", "slo", "categories", "compare",
            "screens")


class Texts:
    """One section of one language's catalogue; `t("key", name=value)` fills a template."""

    def __init__(self, lang: str, section: str = "report") -> None:
        if lang not in CATALOGUE:
            raise UserError(f"unknown report language {lang!r} (choose from {', '.join(LANGS)})")
        if section not in SECTIONS:
            raise ValueError(f"no section {section!r} in the catalogue of words")
        self.lang = lang
        self.section = section
        self._words = CATALOGUE[lang]

    def __call__(self, key: str, **values: object) -> str:
        return self._words[f"{self.section}.{key}"].format(**values)

    def get(self, key: str, default: str) -> str:
        """The template as it is written (no values), or `default` when the section has none."""
        return self._words.get(f"{self.section}.{key}", default)

    def of(self, section: str) -> Texts:
        """Another section in the same language."""
        return Texts(self.lang, section)

    def join(self, items: Iterable[str]) -> str:
        """The language's list separator (`、`, `, `)."""
        return self._words["report.list_sep"].join(items)
