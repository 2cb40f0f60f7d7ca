"""The key bar at the bottom of every screen: Textual's Footer, rebuilt only when what it shows changed.

Textual's Footer recomposes itself (every key a new widget, each styled and laid out again)
whenever the screen says its bindings may have changed: on every focus change, every screen
pushed or popped, every `refresh_bindings`. Most of those change nothing it shows; measured on
the screen tests, these rebuilds were about a twentieth of the app's whole CPU. This one first
compares what it would show (each shown key, its label, description, whether enabled, its
tooltip and group; the palette's key) with what it shows, and rebuilds only on a difference.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer


class KeysFooter(Footer):
    """A Footer that recomposes only when its keys, their words or their state changed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._shown: tuple[object, ...] | None = None

    def shown_keys(self) -> tuple[object, ...]:
        """All that Footer.compose reads from the screen and the app, as one comparable value."""
        app = self.app
        keys = tuple(
            (key, binding.key, app.get_key_display(binding), binding.description, binding.action,
             binding.group, enabled, tooltip, binding.tooltip)
            for key, (_node, binding, enabled, tooltip) in self.screen.active_bindings.items()
            if binding.show or key == app.COMMAND_PALETTE_BINDING
        )
        return (self.show_command_palette, app.ENABLE_COMMAND_PALETTE, self.compact, keys)

    def compose(self) -> ComposeResult:
        # Whatever asks for the rebuild, what it shows is recorded here.
        if self._bindings_ready:
            self._shown = self.shown_keys()
        yield from super().compose()

    def bindings_changed(self, screen: Screen[Any]) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen:
            self.call_after_refresh(self._recompose_if_changed)

    async def _recompose_if_changed(self) -> None:
        if not self.is_attached:
            return
        if self.shown_keys() != self._shown:
            await self.recompose()
