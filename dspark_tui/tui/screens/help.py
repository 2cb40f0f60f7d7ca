"""`?`: what every key does on the screen below, and the few things worth knowing."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Markdown

from dspark_tui.report.words import Texts
from dspark_tui.tui.screens.dialog import Dialog
from dspark_tui.tui.words import SaidBindings, lang_of, said


class HelpScreen(SaidBindings, Dialog[None]):
    DEFAULT_CSS = """
    HelpScreen > VerticalScroll {
        width: 80%; max-width: 100; height: 85%;
        border: round $primary; padding: 0 1;
    }
    /* Keys and ids at their full width; the action column takes the rest and wraps (CJK text
       has no spaces, so the table's own shrinking would cut the key column to "sp…"). */
    HelpScreen MarkdownTableContent { grid-columns: auto 1fr auto; }
    HelpScreen MarkdownTableContent > .cell { text-overflow: fold; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "close", "Close", id="help.close"),
    ]

    def __init__(self, below: Screen[object]) -> None:
        super().__init__()
        self.below = below

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Markdown(self._text())

    def keys_here(self) -> list[Binding]:
        """The screen's keys, then those of its widgets (a list's j/k/g/G, the report's ←/→),
        then the app's: every key that does something here, each once."""
        found: list[Binding] = []
        widgets = [type(widget) for widget in self.below.query("*")]
        for owner in [type(self.below), *dict.fromkeys(widgets), type(self.app)]:
            found += [b for b in getattr(owner, "BINDINGS", []) if isinstance(b, Binding) and b.id]
        return found

    def _key(self, binding: Binding) -> str:
        """The key as the user's keymap (resolved as the app applied it) has it now."""
        keymap: dict[str, str] = getattr(self.app, "_keymap", {}) or {}
        keys = keymap.get(binding.id or "")
        if keys is None:
            return self.app.get_key_display(binding)
        return "/".join(self.app.get_key_display(binding.with_key(key.strip(), key_display=None))
                        for key in keys.split(","))

    def _text(self) -> str:
        lang = lang_of(self.app)
        t = Texts(lang, "screens")
        lines = [t("help.title"), "", t("help.columns"), "|---|---|---|"]
        seen: set[str] = set()
        for binding in self.keys_here():
            action = binding.action.removeprefix("app.")  # a screen's key for an app action
            if binding.id in seen or action in seen:
                continue
            seen.update({action, binding.id or action})
            binding = said(binding, lang)
            what = (t("help.key_does", name=binding.description, does=binding.tooltip)
                    if binding.tooltip else binding.description or binding.action)
            lines.append(f"| `{self._key(binding)}` | {what} | {binding.id or ''} |")
        return "\n".join(lines) + "\n\n" + t("help.about") + "\n"

    def action_close(self) -> None:
        self.dismiss(None)
