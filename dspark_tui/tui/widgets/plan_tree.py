"""Arms > scenarios > cells, each cell with its state mark and headline number."""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from dspark_tui.model import CellKey
from dspark_tui.model.run_state import RunState
from dspark_tui.tui import colours, safe
from dspark_tui.tui import format as fmt
from dspark_tui.tui.words import lang_here, server_said, verdict_said

MARKS = {"pending": "·", "running": "▶", "done": "✓", "failed": "✗", "skipped": "–"}
PART_DONE = "◐"  # measured in some of its planned rounds: the mean so far, more to come


FOLLOW_RETRY_S = 0.1
FOLLOW_TRIES = 300  # 30 s


class PlanTree(Tree[CellKey | None]):
    DEFAULT_CSS = """
    /* 23 with a one-column scrollbar: its longest label (`│ └ ✓ c16   132,434.4`) whole, and
       the A/B table beside it keeps Winner to Interval on screen at 80 columns */
    PlanTree { width: 23; border-right: solid $panel; scrollbar-size-vertical: 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("cells", id=id)
        self.show_root = False
        self.guide_depth = 2
        self._cell_nodes: dict[CellKey, TreeNode[CellKey | None]] = {}
        self._arm_nodes: dict[str, TreeNode[CellKey | None]] = {}
        self._scenario_nodes: dict[tuple[str, str], TreeNode[CellKey | None]] = {}
        self._labels: dict[CellKey, tuple[str, float | None, bool]] = {}
        self._arm_states: dict[str, str] = {}
        self._followed: CellKey | None = None  # the running cell last brought into view

    def show(self, state: RunState) -> None:
        for key, cell in state.cells.items():
            node = self._cell_nodes.get(key) or self._add_cell(key)
            shown = (cell.phase, cell.total_tok_s, cell.phase == "pending" and cell.ok_count > 0)
            if self._labels.get(key) != shown:
                self._labels[key] = shown
                # Plain text: it marks the node changed; render_label colours it when drawn.
                node.set_label(Text(self._cell_label(key).plain))
        for name, arm_node in self._arm_nodes.items():
            arm = state.arms.get(name)
            server = arm.server_state if arm is not None else ""
            if self._arm_states.get(name) != server:
                self._arm_states[name] = server
                said = server_said(lang_here(self), server)
                arm_node.set_label(Text.assemble((safe.plain(name), "bold"), f"  {safe.plain(said)}"))
        self._follow(state)

    def _follow(self, state: RunState) -> None:
        """Bring the running cell into view when it changes (a K sweep's later arms are below
        the fold at 24 rows); the cursor stays where the user put it."""
        current = state.current
        key = current.key if current is not None else None
        if key is None or key == self._followed:
            return
        self._followed = key
        node = self._cell_nodes.get(key)
        if node is not None:
            self.call_after_refresh(self._scroll_to_running, node)

    def _scroll_to_running(self, node: TreeNode[CellKey | None], tries: int = FOLLOW_TRIES) -> None:
        line = node.line
        if line < 0 or self.virtual_size.height <= line:
            # The tree has not laid out its new lines yet (a busy box): look again shortly,
            # for a while in time rather than a count of refreshes, which a busy box runs fast.
            if tries > 0 and node.data == self._followed:
                self.set_timer(FOLLOW_RETRY_S, lambda: self._scroll_to_running(node, tries - 1))
            return
        # Its arm's name at the top when the cell fits below it ("K=6  ready" and the cell
        # both in view), else the cell a third of the way down. The arm's line does not depend
        # on the tree's height, which may still change while the screen is laid out.
        height = self.scrollable_content_region.height
        arm_node = self._arm_nodes.get(node.data.arm) if node.data is not None else None
        arm_line = arm_node.line if arm_node is not None else -1
        fits = 0 <= arm_line <= line < arm_line + height - 1
        y = arm_line if fits else max(0, line - max(1, height // 3))
        # force: the tree builds its lines (its virtual size) before the layout that shows its
        # scrollbar, and until then Textual refuses a plain scroll without a word
        # (allow_vertical_scroll is False): the follow did nothing and the tree stayed on K=0.
        self.scroll_to(y=y, animate=False, force=True)

    def watch_show_vertical_scrollbar(self, shown: bool) -> None:
        """A scrollbar made after a forced scroll starts at the top (Textual moves the thumb
        only when scroll_y changes while it is shown): put it where the lines are."""
        if shown:
            self.vertical_scrollbar.position = self.scroll_y

    def render_label(self, node: TreeNode[CellKey | None], base_style: Style, style: Style) -> Text:
        """A cell's label is built at draw time, so its colours follow the current theme."""
        key = node.data
        if key is None or key not in self._labels:
            return super().render_label(node, base_style, style)
        label = self._cell_label(key)
        label.stylize(style)
        return label

    def _add_cell(self, key: CellKey) -> TreeNode[CellKey | None]:
        arm_node = self._arm_nodes.get(key.arm)
        if arm_node is None:
            arm_node = self._arm_nodes[key.arm] = self.root.add(safe.text(key.arm), expand=True)
        scenario_node = self._scenario_nodes.get((key.arm, key.scenario))
        if scenario_node is None:
            scenario_node = arm_node.add(safe.text(key.scenario), expand=True)
            self._scenario_nodes[(key.arm, key.scenario)] = scenario_node
        node = scenario_node.add_leaf(f"c{key.concurrency}", data=key)
        self._cell_nodes[key] = node
        return node

    def _cell_label(self, key: CellKey) -> Text:
        phase, total, part_done = self._labels[key]
        colour = colours.rich_style(colours.CELL_PHASE.get(phase, ""))
        mark = PART_DONE if part_done else MARKS[phase]
        text = Text.assemble((mark, colour), f" c{key.concurrency:<4}")
        if phase == "done" or part_done:
            text.append(f" {fmt.number(total, 1)}")
        elif phase in ("failed", "skipped"):
            text.append(f" {verdict_said(lang_here(self), phase)}", style=colour)
        return text
