"""The engine's event lines on a zh screen in Chinese: the runner writes English to
events.jsonl, and the TUI words each line by its event kind from the screens catalogue
(tui/words.py's event_said); a server's own words (a command line, a failure's reason) stay as
they came."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from dspark_tui.engine.run.runner import TERMINAL_CLOSED, Runner
from dspark_tui.model.events import RunControl
from dspark_tui.plans import resolve_plan
from dspark_tui.results import RunStore
from dspark_tui.tui.words import event_said
from tests.tui.helpers import make_app, run_screen_shown, screen_text, settled

RECORDED = Path(__file__).parent / "data" / "demo_run"
WARMED_UP_LINE = 22  # events.jsonl: st=3 warmed up, its first cell not yet started


def test_every_server_line_of_a_recorded_run_is_worded_in_chinese():
    """A real simulator run's server lines: each state's message in zh from the catalogue, in en
    as the engine wrote it; the command line a server starts with stays verbatim."""
    lines = [json.loads(line) for line in (RECORDED / "events.jsonl").read_text().splitlines()]
    server = {(e["state"], e["message"]) for e in lines if e["kind"] == "server_state" and e["message"]}
    assert {state for state, _ in server} >= {"loading", "warming_up", "ready", "stopping"}
    for state, message in server:
        assert event_said("en", "server", state, message) == message
        zh = event_said("zh", "server", state, message)
        if state == "starting":
            assert zh == message  # the command: code, the same in either language
        else:
            assert zh != message, (state, message)
    assert event_said("zh", "server", "ready", "warmed up") == "已预热"
    assert event_said("zh", "server", "warming_up", "8 requests") == "8 个请求"
    assert event_said("zh", "server", "ready", "http://127.0.0.1:18000 pid 12749") == \
        "http://127.0.0.1:18000 进程 12749"
    assert event_said("zh", "server", "failed", "exited with code 1") == "exited with code 1"


def test_every_control_acknowledgement_the_runner_writes_is_worded_in_chinese():
    """The runner's own acknowledgements (a real Runner, not started), each matched by the
    catalogue's English exactly and said in zh."""
    runner = Runner(resolve_plan("demo")[0], RunStore(Path(tempfile.mkdtemp())), gpu=None)
    said: list[RunControl] = []
    runner.subscribe(lambda event: said.append(event) if isinstance(event, RunControl) else None)
    runner.pause()
    runner.resume()
    runner.skip()
    runner.detach()
    runner.detach(TERMINAL_CLOSED)
    runner.retry()
    runner.abort()
    assert [e.action for e in said] == ["pause", "resume", "skip", "detach", "detach", "retry", "abort"]
    zh = [event_said("zh", "control", e.action, e.message) for e in said]
    assert zh == ["当前单元结束后暂停", "已继续", "没有正在运行的单元，无可跳过",
                  "已转入后台：运行继续，不再依赖启动它的应用",
                  "终端已关闭，已转入后台：运行继续，不再依赖启动它的应用",
                  "0 个失败单元重新排队", "用户中止"]
    assert [event_said("en", "control", e.action, e.message) for e in said] == [e.message for e in said]


async def test_the_run_screen_says_warmed_up_in_chinese(tmp_path: Path):
    """A replay cut where st=3 has just warmed up: its header line in zh, the state and the
    message both."""
    run_dir = tmp_path / "results" / "demo_warm"
    run_dir.mkdir(parents=True)
    manifest = RunStore(RECORDED).read_manifest()
    manifest.status = "running"
    RunStore(run_dir).write_manifest(manifest)
    lines = (RECORDED / "events.jsonl").read_text().splitlines(keepends=True)[:WARMED_UP_LINE]
    assert '"message":"warmed up"' in lines[-1]
    (run_dir / "events.jsonl").write_text("".join(lines))
    last = json.loads(lines[-1])["t"]
    for lang, words in (("zh", "已预热"), ("en", "warmed up")):
        app = make_app(tmp_path, clock=lambda: last + 1.0, settings={"language": lang})
        async with app.run_test(size=(80, 24)) as pilot:
            app.open_replay(run_dir)
            await run_screen_shown(pilot, "[")
            await settled(pilot)
            text = screen_text(app)
            assert words in text, text
            if lang == "zh":
                assert "warmed up" not in text


async def test_the_run_screens_own_toasts_are_in_chinese(tmp_path: Path):
    """The run screen's own toasts, from the catalogue: `p` on a run opened read-only, `abort
    requested` on one attached."""
    from dspark_tui.tui.app import AttachTarget
    from tests.tui.eventlog import write_run
    from tests.tui.helpers import until_shown

    run_dir = write_run(tmp_path / "results", stop_after=2, finish=False, live=True)
    app = make_app(tmp_path, start=AttachTarget(run_dir, read_only=True), settings={"language": "zh"})
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await run_screen_shown(pilot, "单元 2/10")
        await pilot.press("p")
        text = await until_shown(pilot, app, "以只读方式打开")
        assert "read-only" not in text
    app = make_app(tmp_path, start=AttachTarget(run_dir), settings={"language": "zh"})
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await run_screen_shown(pilot, "单元 2/10")
        await pilot.press("s")
        await until_shown(pilot, app, "已请求跳过")
