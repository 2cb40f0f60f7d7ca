"""The key bar rebuilds only when what it shows changes (tui/widgets/footer.py): a focus change
that leaves the keys as they were keeps its widgets; a key hidden, disabled or renamed is shown."""

from __future__ import annotations

import dataclasses
import re
from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import ActiveBinding, Binding, BindingType
from textual.screen import Screen
from textual.widgets import Button, Footer
from textual.widgets._footer import FooterKey

from dspark_tui.tui.widgets.footer import KeysFooter
from tests.tui.helpers import wait_until


class KeysScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("p", "pause", "Pause"),
        Binding("s", "skip", "Skip"),
    ]
    paused_allowed: bool | None = True  # check_action's answer for pause: True, None (dim), False (hidden)
    skip_said = "Skip"  # as SaidBindings words a key in the app's language

    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        return {key: ActiveBinding(node, dataclasses.replace(binding, description=self.skip_said)
                                   if binding.action == "skip" else binding, enabled, tooltip)
                for key, (node, binding, enabled, tooltip) in super().active_bindings.items()}

    def compose(self) -> ComposeResult:
        yield Button("one", id="one")
        yield Button("two", id="two")
        yield KeysFooter(compact=True)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.paused_allowed if action == "pause" else True

    def action_pause(self) -> None:
        pass

    def action_skip(self) -> None:
        pass


class KeysApp(App[None]):
    ENABLE_COMMAND_PALETTE = False

    def on_mount(self) -> None:
        self.push_screen(KeysScreen())


def keys(footer: Footer) -> list[tuple[str, str, bool]]:
    return [(key.key, key.description, key.has_class("-disabled")) for key in footer.query(FooterKey)]


async def test_the_footer_keeps_its_keys_across_a_focus_change_and_shows_a_changed_one():
    app = KeysApp()
    async with app.run_test(size=(80, 10)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, KeysScreen)
                         and app.screen.query(FooterKey), what="the footer's keys")
        screen = app.screen
        assert isinstance(screen, KeysScreen)
        footer = screen.query_one(KeysFooter)
        assert keys(footer) == [("p", "Pause", False), ("s", "Skip", False)]
        before = list(footer.query(FooterKey))
        # Focus moves between the buttons: the screen says its bindings changed, none shown did.
        screen.query_one("#two", Button).focus()
        await pilot.pause()
        screen.query_one("#one", Button).focus()
        await pilot.pause()
        await pilot.pause()
        assert list(footer.query(FooterKey)) == before  # the same widgets: not rebuilt
        # A key that becomes disabled, then hidden: each is shown.
        screen.paused_allowed = None
        screen.refresh_bindings()
        await wait_until(pilot, lambda: keys(footer) == [("p", "Pause", True), ("s", "Skip", False)],
                         what="pause shown disabled")
        screen.paused_allowed = False
        screen.refresh_bindings()
        await wait_until(pilot, lambda: keys(footer) == [("s", "Skip", False)], what="pause hidden")
        # A renamed key (another language's words) is shown too.
        screen.skip_said = "跳过"
        screen.refresh_bindings()
        await wait_until(pilot, lambda: keys(footer) == [("s", "跳过", False)],
                         what="skip renamed")


def test_every_screen_of_the_app_uses_the_keys_footer():
    """Textual's own Footer anywhere in the app brings its rebuild on every focus change back."""
    from pathlib import Path

    import dspark_tui.tui

    tui = Path(dspark_tui.tui.__file__).parent
    using = {path.relative_to(tui).as_posix() for path in tui.rglob("*.py")
             if "KeysFooter(" in path.read_text()}
    plain = {path.relative_to(tui).as_posix() for path in tui.rglob("*.py")
             if path.name != "footer.py" and re.search(r"(?<!Keys)Footer\(", path.read_text())}
    assert len(using) >= 7 and not plain, plain
