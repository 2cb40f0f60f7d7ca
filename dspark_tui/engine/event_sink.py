"""Where the runner's events go: events.jsonl first, then every in-process subscriber.
A subscriber that raises is dropped (a broken viewer must not stop a benchmark)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from dspark_tui.model.events import Event, Notice
from dspark_tui.results import RunStore

Subscriber = Callable[[Event], None]


class EventSink:
    def __init__(self, store: RunStore) -> None:
        self.store = store
        self._subscribers: list[Subscriber] = []

    def subscribe(self, subscriber: Subscriber) -> None:
        self._subscribers.append(subscriber)

    def emit(self, event: Event) -> None:
        try:
            self.store.append_event(event)
        except OSError as exc:
            if event.kind != "notice":
                self._notify(Notice(level="error", message=f"events.jsonl not written: {exc}"))
        self._notify(event)

    def _notify(self, event: Event) -> None:
        for subscriber in list(self._subscribers):
            try:
                subscriber(event)
            except (Exception, SystemExit) as exc:  # rich turns a closed stdout into SystemExit
                self._subscribers.remove(subscriber)
                with contextlib.suppress(OSError):
                    self.store.append_event(Notice(
                        level="error", message=f"a subscriber failed and was dropped: {exc!r}"))
