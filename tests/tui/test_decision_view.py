"""The decision view of a finished K sweep, driven through Pilot over a real run directory:
reached from History's run detail and from an ended run screen, what it shows at 80x24 and
120x40 (nothing essential clipped), `c` copying the serve command, and the one notification
for a run that is no sweep."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widgets import Static

from dspark_tui.analysis.analysis import analyse
from dspark_tui.analysis.deploy import DeployAnswer, deploy_answer
from dspark_tui.analysis.schedule import shell_line
from dspark_tui.results import load_run
from dspark_tui.tui.app import AttachTarget, DsparkApp
from dspark_tui.tui.screens.decision import NOT_A_SWEEP, DecisionScreen
from dspark_tui.tui.screens.help import HelpScreen
from dspark_tui.tui.screens.run_detail import RunDetailScreen
from tests.tui.eventlog import write_run
from tests.tui.helpers import (
    history_listed,
    make_app,
    run_screen_shown,
    screen_text,
    until_shown,
    wait_until,
)
from tests.tui.k_sweep_dir import write_k_sweep


def _words(text: str) -> str:
    """Text without its whitespace: what survives any wrapping."""
    return "".join(text.split())


async def decision_shown(pilot: Pilot[object]) -> DecisionScreen:
    app = pilot.app
    await wait_until(pilot, lambda: isinstance(app.screen, DecisionScreen)
                     and app.screen.answer is not None, timeout=30, what="the decision view loaded")
    assert isinstance(app.screen, DecisionScreen)
    return app.screen


async def detail_loaded(pilot: Pilot[object]) -> None:
    app = pilot.app
    await wait_until(pilot, lambda: isinstance(app.screen, RunDetailScreen) and app.screen.run is not None,
                     timeout=30, what="the run loaded")


async def open_from_history(pilot: Pilot[object]) -> DecisionScreen:
    await history_listed(pilot)
    await pilot.press("enter")
    await detail_loaded(pilot)
    await pilot.press("d")
    return await decision_shown(pilot)


async def seen_whole(pilot: Pilot[object], screen: DecisionScreen, selector: str) -> str:
    """Scroll the part into view and check every line of it is on the terminal, unclipped."""
    widget = screen.query_one(selector, Static)
    screen.query_one("#decision-body").scroll_to_widget(widget, animate=False, top=True)
    await pilot.pause()
    # The whole widget, padding included (widget_text draws the content area only).
    lines = widget.render_lines(Region(0, 0, widget.region.width, widget.region.height))
    drawn = "\n".join("".join(segment.text for segment in strip) for strip in lines)
    on_screen = screen_text(pilot.app)
    assert widget.region.right <= pilot.app.size[0]
    for line in drawn.splitlines():
        assert line.rstrip() in on_screen
    return drawn


@pytest.fixture(scope="module")
def sweep_answer(tmp_path_factory: pytest.TempPathFactory) -> DeployAnswer:
    answer = deploy_answer(analyse(load_run(write_k_sweep(tmp_path_factory.mktemp("expected")))))
    assert answer is not None and answer.schedule is not None and answer.command is not None
    return answer


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_the_decision_view_shows_the_schedule_and_command_and_c_copies_it(
        tmp_path: Path, size: tuple[int, int], sweep_answer: DeployAnswer):
    write_k_sweep(tmp_path / "results")
    app = make_app(tmp_path)
    async with app.run_test(size=size, notifications=True) as pilot:
        screen = await open_from_history(pilot)
        schedule = await seen_whole(pilot, screen, "#decision-schedule")
        assert sweep_answer.schedule is not None
        for lo, hi, k in sweep_answer.schedule.ranges:
            batches = f"{lo}–{hi}" if lo != hi else str(lo)  # one batch: `1`, not `1–1`
            assert any(line.split()[:2] == [batches, str(k)] for line in schedule.splitlines()
                       if line.strip()), (lo, hi, k)
        command = shell_line(sweep_answer.command or [])
        assert _words(await seen_whole(pilot, screen, "#decision-command")) == _words(command)
        assert "num_speculative_tokens_per_batch_size" in command
        best = await seen_whole(pilot, screen, "#decision-map")
        assert "K=0 wins" in best and "K=6 tie, top 7" in best
        acceptance = await seen_whole(pilot, screen, "#decision-acceptance")
        assert "90%   76%   61%   47%   33%   23%   15%" in acceptance
        command_widget = screen.query_one("#decision-command", Static)
        command_widget.text_select_all()  # what a mouse drag over it selects
        await wait_until(pilot, lambda: _words(screen.get_selected_text() or "") == _words(command),
                         what="the command selected as text")
        screen.clear_selection()
        await pilot.press("c")
        await wait_until(pilot, lambda: app.clipboard == command, what="the command copied")
        # Sent, not said to be copied: a terminal (tmux) may ignore OSC 52.
        await until_shown(pilot, app, "serve command sent to the terminal's clipboard")
        port = " ".join((await seen_whole(pilot, screen, "#decision-port")).split())
        assert "--port 8000 is the port this run's server listened on" in port
        await pilot.press("j")
        # The schedule's top K: 7 at c = 1, where K=6 is not shown within the band of K=7 at
        # the family level of a choice among eight arms (issue 22).
        await wait_until(pilot, lambda: '"num_speculative_tokens":7' in app.clipboard,
                         what="the JSON copied")
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, RunDetailScreen), what="back")


async def test_an_ended_run_screen_opens_it_and_help_lists_the_key(tmp_path: Path):
    run_dir = write_k_sweep(tmp_path / "results")
    app = make_app(tmp_path, start=AttachTarget(run_dir))
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await run_screen_shown(pilot, "[completed]")
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        await until_shown(pilot, app, "run.decision")
        await pilot.press("escape")
        await pilot.press("d")
        screen = await decision_shown(pilot)
        assert "UNVERIFIED" not in str(screen.query_one("#decision-title").render())
        await until_shown(pilot, app, "Serve command")


async def test_the_best_arm_of_a_sweep_is_shown_against_k0_in_run_detail(tmp_path: Path):
    write_k_sweep(tmp_path / "results")
    app: DsparkApp = make_app(tmp_path)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await history_listed(pilot)
        await pilot.press("enter")
        await detail_loaded(pilot)
        table = app.screen.query_one("#detail-ab")
        headers = [str(column.label) for column in table.ordered_columns][:5]  # type: ignore[attr-defined]
        assert headers == ["Scenario", "C", "Best", "Margin", "vs K=0"]  # verdict and interval inside
        rows = {(str(r[0]), str(r[1])): [str(c) for c in r]
                for r in (table.get_row_at(i) for i in range(table.row_count))}  # type: ignore[attr-defined]
        # K=7 leads K=6 by 1.3 % (+0.6 … +2.0 %): unsure since the level is calibrated for the
        # estimated df (issue 22; a tie before, the upper end just inside the 2 % band).
        assert rows[("chat", "1")][2] == "K=7 unsure" and rows[("chat", "1")][4].startswith("+")
        assert re.fullmatch(r" *\d+\.\d% [+-][\d.]+…[+-][\d.]+", rows[("chat", "1")][3])
        assert rows[("chat", "256")][2] == "K=0 wins" and rows[("chat", "256")][4] == "—"


async def test_a_run_that_is_no_sweep_says_so_in_one_notification(tmp_path: Path):
    write_run(tmp_path / "results")  # st=3 against st=5: the seed's two hand-picked values
    app = make_app(tmp_path)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await history_listed(pilot)
        await pilot.press("enter")
        await detail_loaded(pilot)
        await pilot.press("d")
        await wait_until(pilot, lambda: any(NOT_A_SWEEP in n.message for n in app._notifications),
                         what="the notification")
        assert isinstance(app.screen, RunDetailScreen)
        assert sum(NOT_A_SWEEP in n.message for n in app._notifications) == 1


async def test_a_running_run_has_no_decision_yet(tmp_path: Path):
    run_dir = write_run(tmp_path / "results", stop_after=3, finish=False, live=True)
    app = make_app(tmp_path, start=AttachTarget(run_dir, read_only=True))
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await run_screen_shown(pilot, "[running]")
        await pilot.press("d")
        await until_shown(pilot, app, "opens when the run has ended")
        assert not isinstance(app.screen, DecisionScreen)


async def test_single_measurements_are_marked_unverified(tmp_path: Path):
    run_dir = write_k_sweep(tmp_path / "results", rounds=1)
    app = make_app(tmp_path)
    app.call_after_refresh(lambda: app.push_screen(DecisionScreen(run_dir)))
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        screen = await decision_shown(pilot)
        assert "UNVERIFIED" in str(screen.query_one("#decision-title").render())
        best = await seen_whole(pilot, screen, "#decision-map")
        cells = [line for line in best.splitlines() if "K=" in line]
        assert cells and all("unverified" in line for line in cells)


async def test_historys_best_arm_of_a_sweep_is_the_decision_views_answer(tmp_path: Path):
    """No arm beats every other in a sweep's cells (neighbouring K tie), so the verdicts' line
    read `unsure 0/5`: History gives the sweep's answer, the decision view's, in both languages
    (symbols, not words: 11 columns hold no zh word after `K=0–7`)."""
    from dspark_tui.tui.run_facts import best_column

    run_dir = write_k_sweep(tmp_path / "results")
    answer = deploy_answer(analyse(load_run(run_dir)))
    assert answer is not None and answer.schedule is not None
    ks = {k for _, _, k in answer.schedule.ranges}
    unsure = sum(1 for c in answer.decision.choices if c.status != "decided")
    said = f"K={min(ks)}–{max(ks)} ?{unsure}/{len(answer.decision.choices)}"
    # NOT DECIDED: 5 of 9 cells unsure, in the decision view (each choice's comparisons at the
    # family level of eight arms, issue 22: 2 of 9 at one comparison's level)
    assert said == "K=0–7 ?5/9"
    assert best_column(load_run(run_dir), "zh") == said  # 11 columns: symbols, no words
    app: DsparkApp = make_app(tmp_path, settings={"language": "en"})
    async with app.run_test(size=(80, 24)) as pilot:
        await history_listed(pilot)
        await until_shown(pilot, app, said)


async def test_a_picked_port_is_left_out_of_the_command_and_said(tmp_path: Path):
    """A run whose plan said `port = 0` (the demos) records that its port was picked: the
    command to copy has no --port, and the note says why; a run without the record keeps it."""
    from dspark_tui.results import RunStore

    run_dir = write_k_sweep(tmp_path / "results")
    store = RunStore(run_dir)
    manifest = store.read_manifest()
    assert manifest.plan["server"]["port"] and "port_picked" not in manifest.plan["server"]
    kept = deploy_answer(analyse(load_run(run_dir)))
    assert kept is not None and "--port" in (kept.command or [])
    manifest.plan["server"]["port_picked"] = True
    store.write_manifest(manifest)
    app = make_app(tmp_path, settings={"language": "en"})
    async with app.run_test(size=(80, 24)) as pilot:
        app.push_screen(DecisionScreen(run_dir))
        screen = await decision_shown(pilot)
        command = str(screen.query_one("#decision-command", Static).render())
        assert "vllm serve" in command and "--port" not in command
        assert screen.answer is not None and "--port" not in (screen.answer.command or [])
        note = screen.query_one("#decision-port", Static)
        assert note.display and "--portleftout" in _words(str(note.render()))
