"""The run's one-glance line: name, each arm's server, cells done / failed / total, time, and
the greedy check's verdict once every arm has answered (engine/run/greedy.py)."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from dspark_tui.model.run_state import RunState
from dspark_tui.report.words import Texts
from dspark_tui.tui import colours, safe
from dspark_tui.tui import format as fmt
from dspark_tui.tui.words import event_said, lang_here, server_said, status_said

Part = str | tuple[str, str]
_IDLE = ("pending", "stopped")  # servers with nothing to watch share one line


class RunHeader(Static):
    """Styles are theme variables (`$success`) that Textual resolves each time it draws."""

    DEFAULT_CSS = """
    RunHeader { height: auto; max-height: 6; background: $panel; color: $foreground; padding: 0 1; }
    """

    _last: tuple[Part, ...] = ()

    def show(self, state: RunState, now: float, mode: str) -> None:
        lang = lang_here(self)
        t = Texts(lang, "screens")
        status = "paused" if state.paused and not state.finished else state.status
        status_colour = colours.RUN_STATUS.get(status, "$accent")
        label = (t("header.paused") if status == "paused"
                 else status_said(lang, state.status, skipped=state.skipped_cells if state.skipped else 0))
        parts: list[Part] = [(safe.plain(state.name or "run"), "bold"),
                             (f"  [{label}]", f"bold {status_colour}")]
        if mode:
            parts.append("  " + t(f"header.mode.{mode}"))
        # measurements ("runs"), when cells are measured again
        parts.append("   " + t("header.runs" if state.repeated else "header.cells",
                               done=state.done, total=state.total))
        if state.failed:
            parts.append(("  " + t("header.failed", n=state.failed), f"bold {colours.FAILED}"))
        if state.skipped:
            parts.append("  " + t("header.skipped", n=state.skipped))
        parts.append("   " + t("header.elapsed", time=fmt.duration(state.elapsed(now))))
        if not state.finished:  # an ended run's `ETA 0:00` says nothing and wraps at 80 columns
            parts.append("  " + t("header.eta", time=fmt.duration(state.eta(now))))
        if greedy := state.greedy_line():
            diverges = any(v.verdict == "diverges" for v in state.greedy)
            greedy = safe.plain(greedy)
            parts += ["\n", (greedy, f"bold {colours.FAILED}") if diverges else greedy]
        if state.board.lanes:  # rounds in parallel: a line a node, whatever arm it serves now
            parts += _lane_lines(state, lang)
            self._draw(parts)
            return
        idle: dict[str, list[str]] = {}
        for arm in state.arms.values():
            server = server_said(lang, arm.server_state)
            if arm.server_state in _IDLE:  # folded below: a K sweep has many arms, 24 rows
                idle.setdefault(safe.plain(server), []).append(safe.plain(arm.name))
                continue
            parts += ["\n", (f"{safe.plain(arm.name)}: ", "bold"), safe.plain(server)]
            detail = arm.progress_line or event_said(lang, "server", arm.server_state, arm.message)
            if detail:
                parts.append((f"  {safe.plain(detail)}"[:160], "italic"))
        if idle:
            parts.append("\n")
            parts.append("   ".join(f"{', '.join(names)}: {server}" for server, names in idle.items()))
        self._draw(parts)

    def _draw(self, parts: list[Part]) -> None:
        shown = tuple(parts)
        if shown != self._last:
            self._last = shown
            self.update(Content.assemble(*parts))


def _lane_lines(state: RunState, lang: str = "en") -> list[Part]:
    """`lane 1 · node07 · r1 · st=3: ready  chat c4 12/32`: every node's round, arm, server and
    the cell it measures."""
    parts: list[Part] = []
    for number, lane in sorted(state.board.lanes.items()):
        parts += ["\n", (f"{safe.plain(lane.describe())}: ", "bold"), safe.plain(lane.server_state)]
        cell = state.board.cell_of(number)
        if cell is not None and lane.server_state == "ready":
            parts.append(f"  {safe.plain(cell.key.scenario)} c{cell.key.concurrency} "
                         f"{cell.completed}/{cell.num_prompts}")
        elif lane.message:
            message = event_said(lang, "server", lane.server_state, lane.message)
            parts.append((f"  {safe.plain(message)}"[:120], "italic"))
    return parts
