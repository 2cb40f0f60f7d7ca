"""The screens' words in the app's language: the catalogue's `screens` section (report/words/).

A key's name and what it does (footer, help, command palette) come from the catalogue by the
binding's id (`screens.key.<id>`, `screens.tip.<id>`); the code's own description is the
fallback for a binding the catalogue does not know (Textual's own, say).
"""

from __future__ import annotations

import dataclasses
import functools
import re
import string
from typing import TYPE_CHECKING, Any, get_args

from textual.binding import ActiveBinding, Binding

from dspark_tui.model.events import RunStatus, ServerState
from dspark_tui.report.words import CATALOGUE, LANGS, Texts
from dspark_tui.stats.paired import Verdict

if TYPE_CHECKING:
    from textual.app import App


def lang_of(app: App[Any] | None) -> str:
    """The app's language (`DsparkApp.lang`), English for an app that has none."""
    lang = getattr(app, "lang", "") if app is not None else ""
    return lang if lang in LANGS else "en"


def lang_here(node: object) -> str:
    """The language of the app a widget belongs to; English for one outside any app."""
    try:
        return lang_of(node.app)  # type: ignore[attr-defined]
    except Exception:  # textual's NoActiveAppError: drawn off the app (a test, a worker)
        return "en"


# The model's own values, each with a word in the catalogue (tests/report/test_words.py);
# "starting" is the run directory's status before the runner's first event (results/scan.py).
STATUSES = ("starting", *get_args(RunStatus))
VERDICTS = tuple(Verdict)


def status_said(lang: str, status: str, *, skipped: int = 0) -> str:
    """A run's status in `lang` (`completed, 1 skipped`: model/run_status.py's wording); a
    status this app does not know as it is."""
    t = Texts(lang, "screens")
    word = t(f"status.{status}") if status in STATUSES else status
    return t("status_skipped", status=word, n=skipped) if status == "completed" and skipped > 0 else word


def verdict_said(lang: str, verdict: str) -> str:
    """`wins`, `tie`, `unsure`, `single` (and a cell's `failed`, `skipped`) in `lang`; anything
    else as it is."""
    t = Texts(lang, "screens")
    if verdict in VERDICTS:
        return t(f"verdict.{verdict}")
    return t(f"outcome.{verdict}") if verdict in ("failed", "skipped") else verdict


SERVER_STATES = (*get_args(ServerState), "pending")  # and "pending": not started yet


def server_said(lang: str, state: str) -> str:
    """An arm's server state (`ready`, `stopped` …) in `lang`."""
    return Texts(lang, "screens")(f"server.{state}") if state in SERVER_STATES else state


def said(binding: Binding, lang: str) -> Binding:
    """The binding with its description and tooltip in `lang`."""
    t = Texts(lang, "screens")
    name = binding.id or binding.action
    description = t.get(f"key.{name}", binding.description)
    tooltip = t.get(f"tip.{name}", binding.tooltip) if binding.tooltip else binding.tooltip
    if description == binding.description and tooltip == binding.tooltip:
        return binding
    return dataclasses.replace(binding, description=description, tooltip=tooltip)


class SaidBindings:
    """A screen whose footer (and command palette) names its keys in the app's language."""

    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        active: dict[str, ActiveBinding] = super().active_bindings  # type: ignore[misc]
        lang = lang_of(self.app)  # type: ignore[attr-defined]
        shown: dict[str, ActiveBinding] = {}
        for key, (node, binding, enabled, tooltip) in active.items():
            binding = said(binding, lang)
            shown[key] = ActiveBinding(node, binding, enabled, binding.tooltip if tooltip else tooltip)
        return shown


# -- the engine's event lines ----------------------------------------------------------------
# The runner writes its event messages in English (events.jsonl is read by tools and by either
# language's screens). A screen words them by event kind: `screens.event.<kind>.<state or
# action>.<name>` holds each sentence the engine emits, its English exactly as the engine
# writes it (tests/tui/test_event_words.py holds the two together), its fields in braces; a
# Notice's sentences under `screens.event.notice.<name>`. A message that matches none (a
# failure's reason, a command line, a server's own words) is shown as it came.
_EVENT_PREFIX = "screens.event."


# Fields that are always a number: a template whose number field would take words is not the
# sentence ("exited with code 1 while starting" is not a death "with code {code}")
_NUMERIC = frozenset({"code", "pid", "count", "seconds"})
_NUMBERS = r"-?\d+(?:\.\d+)?"
_ONE_LINE = r"[^\n]+?"
_ANY_TEXT = r"(?s:.+?)"


def _pattern(template: str) -> re.Pattern[str]:
    """The template's English as a pattern, each field any text; `{{`/`}}` are literal braces
    (a notice that names a `{affinity}` placeholder). A field that opens the template (`{arm}`,
    `{cell}`) stays on the first line: one that could run over lines would swallow a log tail
    and read its last line as the whole notice (review); a field further in (an error's text,
    a multi-line exception) may run over lines."""
    regex = ""
    for i, (literal, name, _, _) in enumerate(string.Formatter().parse(template)):
        regex += re.escape(literal)
        if name is None:
            continue
        opens = i == 0 and not literal
        value = _NUMBERS if name in _NUMERIC else _ONE_LINE if opens else _ANY_TEXT
        regex += f"(?P<{name}>{value})"
    return re.compile(f"{regex}$")


@functools.cache
def _templates(prefix: str) -> list[tuple[str, re.Pattern[str]]]:
    """(catalogue key, pattern of its English) of every template under `prefix`, the longest
    literal first (`external server {url}` before `{url} pid {pid}`)."""
    found = [(key[len("screens."):], template) for key, template in CATALOGUE["en"].items()
             if key.startswith(prefix)]
    found.sort(key=lambda item: -sum(len(literal) for literal, *_ in string.Formatter().parse(item[1])))
    return [(key, _pattern(template)) for key, template in found]


def _said(lang: str, prefix: str, message: str) -> str:
    said = _matched(lang, prefix, message) if lang != "en" and message else None
    return message if said is None else said


# The fields that hold another of the engine's sentences, and the templates they may be: only
# these are worded in turn (any field matched against every template read a reason such as
# "server exited with code 1 while starting" as a death with code "1 while starting").
_SENTENCE_FIELDS = {"reasons": "notice.behind_reason", "scale": "notice.behind_",
                    "death": "notice.death_"}


def _matched(lang: str, prefix: str, message: str) -> str | None:
    for key, pattern in _templates(prefix):
        match = pattern.match(message)
        if match is not None:
            fields = {name: _field_said(lang, name, value) for name, value in match.groupdict().items()}
            return Texts(lang, "screens")(key, **fields)
    return None


def _field_said(lang: str, name: str, value: str) -> str:
    within = _SENTENCE_FIELDS.get(name)
    return value if within is None else _said(lang, f"{_EVENT_PREFIX}{within}", value)


def event_said(lang: str, kind: str, what: str, message: str) -> str:
    """An engine message of one event kind (`server`: ServerStateChanged by its state;
    `control`: RunControl by its action) in `lang`; as it came when the catalogue lacks it."""
    return _said(lang, f"{_EVENT_PREFIX}{kind}.{what}.", message)


def notice_said(lang: str, message: str) -> str:
    """An engine Notice's message in `lang` (`screens.event.notice.*`): its fields (an error's
    text, a path, a launcher's words) as they came, unless a field is itself one of the
    engine's sentences (the client's reason for falling behind); a message of several lines
    that matches none as a whole (a server that failed to start, its log tail below) has its
    first line worded, the lines below as they came; a message no template matches (a
    refusal's own sentence) as it came."""
    prefix = f"{_EVENT_PREFIX}notice."
    said = _said(lang, prefix, message)
    if said is message and "\n" in message:  # a server's failure: its log tail below the sentence
        first, tail = message.split("\n", 1)
        return f"{_said(lang, prefix, first)}\n{tail}"
    return said
