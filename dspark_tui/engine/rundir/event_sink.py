"""Where the runner's events go: events.jsonl first, then every in-process subscriber.
A subscriber that raises is dropped (a broken viewer must not stop a benchmark).

Subscribers get every event. The file gets every event but CellProgress, of which it keeps at
most one a measurement every FILE_PROGRESS_EVERY_S: the last one written before the measurement
ends is always its last one (one held back is written before the measurement's end event)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from dspark_tui.model import CellKey
from dspark_tui.model import events as ev
from dspark_tui.results import RunStore

Subscriber = Callable[[ev.Event], None]

# Watchers read events.jsonl no more often than this (the run screen's poll, tui/screens/run_screen.py
# REFRESH_S), and a progress event supersedes the one before: more a second is only bytes.
FILE_PROGRESS_EVERY_S = 0.5


class ProgressThinning:
    """Which events go to the file, in which order: CellProgress thinned to one every
    FILE_PROGRESS_EVERY_S a measurement (by its lane and cell), the first, the final one
    (every request answered) and the last one before the measurement ended always kept."""

    def __init__(self) -> None:
        self._written: dict[tuple[int | None, CellKey], float] = {}  # its last progress's t
        self._held: dict[tuple[int | None, CellKey], ev.CellProgress] = {}

    def for_file(self, event: ev.Event) -> list[ev.Event]:
        if isinstance(event, ev.CellProgress):
            slot = (event.lane, event.key)
            last = self._written.get(slot)
            final = event.completed + event.failed >= event.total
            if final or last is None or event.t - last >= FILE_PROGRESS_EVERY_S:
                self._written[slot] = event.t
                self._held.pop(slot, None)
                return [event]
            self._held[slot] = event
            return []
        if isinstance(event, ev.CellStarted):  # what an unsaved measurement held, written
            return [*self._forget(lambda slot: slot == (event.lane, event.key)), event]
        ended = _ended_key(event)
        if ended is not None:
            return [*self._forget(lambda slot: slot[1] == ended), event]
        if isinstance(event, ev.RunFinished):
            return [*self._forget(lambda slot: True), event]
        return [event]

    def _forget(self, which: Callable[[tuple[int | None, CellKey]], bool]) -> list[ev.Event]:
        """Drop what is known of the matching measurements; return their progress held back."""
        for slot in [s for s in self._written if which(s)]:
            del self._written[slot]
        held = [s for s in self._held if which(s)]
        return [self._held.pop(slot) for slot in held]


def _ended_key(event: ev.Event) -> CellKey | None:
    """The cell whose measurement this event ends (CellFinished/Failed/Skipped carry no lane:
    a held progress of the same cell on another lane is written early, which costs one line)."""
    if isinstance(event, ev.CellFinished):
        return event.result.key
    if isinstance(event, (ev.CellFailed, ev.CellSkipped)):
        return event.key
    return None


class EventSink:
    def __init__(self, store: RunStore) -> None:
        self.store = store
        self._subscribers: list[Subscriber] = []
        self._thinning = ProgressThinning()

    def subscribe(self, subscriber: Subscriber) -> None:
        self._subscribers.append(subscriber)

    def emit(self, event: ev.Event) -> None:
        try:
            for written in self._thinning.for_file(event):
                self.store.append_event(written)
        except OSError as exc:
            if event.kind != "notice":
                self._notify(ev.Notice(level="error", message=f"events.jsonl not written: {exc}"))
        self._notify(event)

    def _notify(self, event: ev.Event) -> None:
        for subscriber in list(self._subscribers):
            try:
                subscriber(event)
            except (Exception, SystemExit) as exc:  # rich turns a closed stdout into SystemExit
                self._subscribers.remove(subscriber)
                with contextlib.suppress(OSError):
                    self.store.append_event(ev.Notice(
                        level="error", message=f"a subscriber failed and was dropped: {exc!r}"))
