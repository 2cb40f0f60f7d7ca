"""The in-process app runs with Textual's animations off.

An animated scroll (`j`, `G`, a table's cursor) redraws and lays out the whole screen at every
frame until it settles, ~10 frames at 60 fps, and a test only ever waits for where it settles:
in test_keys.py that doubled the screen's layouts (151 against 66 in the report viewer's keys
test). Textual reads the level when an App is made (`App.animation_level`), so this reaches
every app a test builds in this process, and no process a test starts (the tmux tests run the
app as users do, animated).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import textual.constants


@pytest.fixture(autouse=True)
def no_animations(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(textual.constants, "TEXTUAL_ANIMATIONS", "none")
    yield
