"""The side-by-side table (the seed's winner table, live), updated in place by row key.

Two arms: the winner, the verdict, the margin and its interval. More arms (a K sweep), in
three columns rather than five, so that a sweep's `vs K=0` fits too: the leading arm with its
verdict (`K=6 unsure`), its margin over the runner-up with that margin's interval
(`2.6% +2.1…+4.0`, the interval beside the figure it bounds, in tenths while both ends are under
10 %: neighbouring K values are often a few percent apart), then its margin over K = 0. What
decides comes first and scenario and concurrency stay pinned, so at 80 columns, beside the plan
tree and a scrollbar, every row says which cell it is, who leads, how sure, by how much and how
far over K = 0; the arms' figures are a sideways scroll away (left/right with the row cursor).
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from dspark_tui.analysis.live import (
    ArmFigures,
    ComparisonRow,
    verdict_text,
)
from dspark_tui.analysis.verdicts import Verdict
from dspark_tui.report.words import Texts
from dspark_tui.tui import colours, safe
from dspark_tui.tui import format as fmt
from dspark_tui.tui.widgets.columns import step_columns
from dspark_tui.tui.words import lang_here, verdict_said

_PER_ARM = (
    ("Total", "total_tok_s", 1),
    ("Out", "output_tok_s", 1),
    ("P99TTFT", "p99_ttft_ms", 1),
    ("TPOT", "mean_tpot_ms", 2),
    ("AL", "accept_length", 2),
)


# Scenario and concurrency stay on screen while ←/→ scroll the rest; with N arms the Best
# column too (which K leads, how sure): at 80 columns the lesser columns go first.
PINNED = 2
PINNED_MANY = 3


class ABTable(DataTable[Text | str]):
    """Rows are added as cells finish and only changed rows are drawn again, and of those only
    their changed cells rewritten: no flicker, no jump, and a measurement landing in a table of
    1,800 rows costs the UI thread one row's drawing.

    A theme switch redraws the rows last shown, so the winner's colour is the new theme's.
    """

    DEFAULT_CSS = """
    ABTable { height: 1fr; scrollbar-size-vertical: 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True, fixed_columns=PINNED)
        self._arms: list[str] = []
        self._baseline: str | None = None
        self._shown: dict[str, tuple[Text | str, ...]] = {}
        self._drawn: dict[str, ComparisonRow] = {}  # the row each shown one was drawn from
        self._rows: list[ComparisonRow] = []
        self._margin_width = 0  # N arms: the margins right-aligned, each interval after them

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, self._recolour)

    def _recolour(self, _theme: object) -> None:
        if self._rows:
            self._drawn.clear()  # the same rows, new colours
            self.show(self._rows, self._arms)

    def show(self, rows: list[ComparisonRow], arms: list[str]) -> None:
        self._rows = rows
        margin_width = max((len(_margin(row)) for row in rows), default=0)
        if margin_width != self._margin_width:  # every N-arm row aligns its margin anew
            self._margin_width = margin_width
            self._drawn.clear()
        baseline = next((row.baseline for row in rows if row.baseline), None)
        keys = [row_key(row) for row in rows]
        if arms != self._arms or baseline != self._baseline:
            self._set_columns(arms, baseline)
        elif keys[:len(self._shown)] != list(self._shown):
            # A row that belongs above rows already shown (a resumed run measures a cell its
            # first runner never reached): add them all again, in the plan's order.
            self.clear()
            self._shown.clear()
            self._drawn.clear()
        with self.app.batch_update():
            for key, row in zip(keys, rows, strict=True):
                if self._drawn.get(key) == row:
                    continue  # drawn from the same figures and verdict: nothing to redo
                cells = self._render_row(row)
                before = self._shown.get(key)
                if before is None:
                    self.add_row(*cells, key=key)
                else:
                    for column, (old, new) in enumerate(zip(before, cells, strict=True)):
                        if str(old) != str(new) or _style(old) != _style(new):
                            self.update_cell_at_row_key(key, column, new)
                self._shown[key] = cells
                self._drawn[key] = row

    def action_cursor_right(self) -> None:
        """N arms, row cursor: →/← scroll the unpinned columns a whole column at a time, so
        that a margin and its interval are never shown cut (two arms scroll as DataTable does)."""
        if self.many_arms and self.cursor_type == "row":
            step_columns(self, 1)
        else:
            super().action_cursor_right()

    def action_cursor_left(self) -> None:
        if self.many_arms and self.cursor_type == "row":
            step_columns(self, -1)
        else:
            super().action_cursor_left()

    def update_cell_at_row_key(self, row_key: str, column: int, value: Text | str) -> None:
        column_key = self.ordered_columns[column].key
        # Widened to the new value: a cell first shown as "—" or "failed" and measured later
        # (a retry, a resume) would otherwise be cut to the old width.
        self.update_cell(row_key, column_key, value, update_width=True)

    @property
    def many_arms(self) -> bool:
        return len(self._arms) > 2

    def _set_columns(self, arms: list[str], baseline: str | None) -> None:
        """Winner first, then one metric at a time across arms: readable at 80 columns.
        N arms: the verdict is in the Best column, the interval in the Margin column."""
        self.clear(columns=True)
        self._shown.clear()
        self._drawn.clear()
        self._arms = list(arms)
        self._baseline = baseline
        self.fixed_columns = PINNED_MANY if self.many_arms else PINNED
        t = Texts(lang_here(self), "screens")
        self.add_column(t("ab.scenario"), key="scenario")
        self.add_column("C", key="concurrency")
        if self.many_arms:
            self.add_column(t("ab.best"), key="winner")
            self.add_column(t("ab.margin"), key="margin")
            if baseline is not None:
                self.add_column(safe.text(t("ab.versus", arm=baseline)), key="baseline")
        else:
            self.add_column(t("ab.winner"), key="winner")
            self.add_column(t("ab.verdict"), key="verdict")
            self.add_column(t("ab.margin"), key="margin")
            self.add_column(t("ab.interval"), key="interval")
        for label, attr, _ in _PER_ARM:
            for arm in arms:
                self.add_column(safe.text(f"{label} {arm}"), key=f"{arm}:{attr}")

    def _render_row(self, row: ComparisonRow) -> tuple[Text | str, ...]:
        win_style = colours.rich_style(colours.WINNER)
        failed_style = colours.rich_style(colours.FAILED)
        cells: list[Text | str] = [safe.text(row.scenario), Text(str(row.concurrency), justify="right")]
        lang = lang_here(self)
        if self.many_arms:
            # The leader, even in a tie, then the verdict: `K=6 unsure`, verdicts aligned.
            best = Text()
            best.append(safe.plain(row.leader or fmt.MISSING), style=win_style if row.winner else "")
            if row.leader and row.verdict:
                widest = max(len(safe.plain(arm)) for arm in self._arms)
                best.append(" " * (widest - len(safe.plain(row.leader)) + 1))
                best.append(verdict_said(lang, row.verdict))
            margin = f"{_margin(row):>{self._margin_width}} {compact_interval(row, tenths=True)}"
            cells += [best, Text(margin.rstrip())]
            if self._baseline is not None:
                cells.append(Text(compact_baseline(row) or fmt.MISSING, justify="right"))
        else:
            cells += [Text(safe.plain(row.winner or _no_winner(row, lang)),
                           style=win_style if row.winner else ""),
                      verdict_said(lang, verdict_text(row)) or fmt.MISSING,
                      Text(fmt.percent(row.margin), justify="right"),
                      Text(compact_interval(row) or fmt.MISSING, justify="right")]
        for _, attr, digits in _PER_ARM:
            for arm in self._arms:
                numbers = row.arms.get(arm, ArmFigures())
                if numbers.status in ("failed", "skipped") and attr == "total_tok_s":
                    cells.append(Text(verdict_said(lang, numbers.status), style=failed_style))
                    continue
                text = Text(fmt.number(getattr(numbers, attr), digits), justify="right")
                if attr == "total_tok_s" and row.winner == arm:
                    text.stylize(win_style)
                cells.append(text)
        return tuple(cells)


def compact_interval(row: ComparisonRow, *, tenths: bool = False) -> str:
    """The margin's interval in whole percent, `+12…+31`: the Margin column beside it carries
    the unit and the decimals, and this width keeps the column on screen at 80x24. `tenths`:
    `+2.1…+4.0` while both ends are under 10 %, where whole percent would read `+2…+4`."""
    if row.margin_low is None or row.margin_high is None:
        return ""
    low, high = row.margin_low * 100, row.margin_high * 100
    digits = 1 if tenths and max(abs(low), abs(high)) < 9.95 else 0
    return f"{low:+.{digits}f}…{high:+.{digits}f}"


def _margin(row: ComparisonRow) -> str:
    """N arms: the margin over the runner-up in tenths (`2.6%`), its interval beside it."""
    return fmt.MISSING if row.margin is None else f"{row.margin * 100:.1f}%"


def compact_baseline(row: ComparisonRow) -> str:
    """The leader over K = 0 as `+53.9%`, whole percent from 100 % (`+246%`): never wider than
    its `vs K=0` header, and a speed-up that large needs no decimal to decide on."""
    if row.baseline_margin is None:
        return ""
    percent = row.baseline_margin * 100
    return f"{percent:+.1f}%" if abs(percent) < 99.95 else f"{percent:+.0f}%"


def _no_winner(row: ComparisonRow, lang: str = "en") -> str:
    """What the winner column says when the verdict names none: a tie, or not decided yet."""
    if row.verdict in (Verdict.TIE, Verdict.SINGLE) and row.margin is not None:
        return verdict_said(lang, "tie")
    if row.verdict == Verdict.UNSURE and row.leader:
        return f"{row.leader}?"  # ahead so far, not shown to win
    return fmt.MISSING


def _style(value: Text | str) -> str:
    return str(value.style) + "".join(str(s.style) for s in value.spans) if isinstance(value, Text) else ""


def row_key(row: ComparisonRow) -> str:
    return f"{row.scenario}|c{row.concurrency}"
