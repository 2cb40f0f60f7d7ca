"""k9s and vim habits in every list and the report: j/k a row (a line), g/G the first and the
last; and the rule that keeps a user's `[keymap]` winning over them.

Each of these bindings carries the usual key too (`j,down`, `g,home`), so a user who gives `j`
to something else on that screen keeps ↓. Textual lets a keymap take a key from another binding
of the same widget or screen only; these live on the lists themselves (which have the focus, and
so are asked first), hence `resolve_keymap`.
"""

from __future__ import annotations

from collections.abc import Mapping

from textual.binding import Binding

NAVIGATION: list[Binding] = []  # every binding made below, for resolve_keymap


def _nav(binding: Binding) -> Binding:
    NAVIGATION.append(binding)
    return binding


def list_keys(prefix: str, what: str, *, down: str = "cursor_down", up: str = "cursor_up",
              top: str = "scroll_top", bottom: str = "scroll_bottom",
              ends: tuple[str, str] = ("top", "bottom")) -> list[Binding]:
    """j/k/g/G for a list of `what` (a DataTable's actions by default), ids `prefix.down`,
    `prefix.up` and `prefix.<ends>`."""
    return [
        _nav(Binding("j,down", down, "Down", id=f"{prefix}.down", show=False,
                     key_display="j/↓", tooltip=f"next {what}")),
        _nav(Binding("k,up", up, "Up", id=f"{prefix}.up", show=False,
                     key_display="k/↑", tooltip=f"previous {what}")),
        _nav(Binding("g,home", top, "First", id=f"{prefix}.{ends[0]}", show=False,
                     key_display="g/Home", tooltip=f"first {what}")),
        _nav(Binding("G,end", bottom, "Last", id=f"{prefix}.{ends[1]}", show=False,
                     key_display="G/End", tooltip=f"last {what}")),
    ]


def _scope(binding_id: str) -> str:
    return binding_id.split(".", 1)[0]


def resolve_keymap(user: Mapping[str, str]) -> dict[str, str]:
    """The user's keymap, plus the navigation bindings of the same screen (same id prefix, or
    any screen for an `app.` key) without the keys the user gave to something else there."""
    resolved = dict(user)
    taken: dict[str, set[str]] = {}
    for binding_id, user_keys in user.items():
        taken.setdefault(_scope(binding_id), set()).update(k.strip() for k in user_keys.split(","))
    for binding in NAVIGATION:
        if binding.id is None or binding.id in user:
            continue
        lost = taken.get(_scope(binding.id), set()) | taken.get("app", set())
        keys = [key.strip() for key in binding.key.split(",")]
        kept = [key for key in keys if key not in lost]
        if kept != keys and kept:
            resolved[binding.id] = ",".join(kept)
    return resolved


# Made here, not in the screens' modules (some are imported only when first opened), so that
# NAVIGATION is whole when the app resolves the keymap at start.
# history.first / history.last: the ids Home and End had before j/k/g/G joined them.
HISTORY_KEYS = list_keys("history", "run", ends=("first", "last"))
DETAIL_KEYS = list_keys("detail", "measurement")
REPORT_KEYS = list_keys("report", "line", down="scroll_down", up="scroll_up",
                        top="scroll_home", bottom="scroll_end")
