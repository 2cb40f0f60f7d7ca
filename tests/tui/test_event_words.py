"""The engine's event lines on a zh screen in Chinese: the runner writes English to
events.jsonl, and the TUI words each line by its event kind from the screens catalogue
(tui/words.py's event_said); a server's own words (a command line, a failure's reason) stay as
they came."""

from __future__ import annotations

import ast
import asyncio
import json
import re
import shutil
import string
import tempfile
from pathlib import Path

import pytest

from dspark_tui.engine.datasets.vocab import vocabulary_line
from dspark_tui.engine.run.runner import TERMINAL_CLOSED, Runner
from dspark_tui.engine.servers.server import ServerError, ServerProcess
from dspark_tui.model.client_health import ClientHealth, judge
from dspark_tui.model.cpus import CpuSplit
from dspark_tui.model.events import Notice, RunControl
from dspark_tui.model.greedy import GreedyVerdict
from dspark_tui.plans import resolve_plan
from dspark_tui.report.words import CATALOGUE
from dspark_tui.results import RunStore
from dspark_tui.results.manifest import VocabularyRecord, record_server_info
from dspark_tui.results.store import CELL_SCHEMA_VERSION, EXAMPLES
from dspark_tui.tui import words as event_words
from dspark_tui.tui.words import event_said
from tests.engine.helpers import fake_server_plan
from tests.tui.helpers import make_app, replayed, run_screen_shown, screen_text, settled

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
        async with replayed(tmp_path, run_dir, "[",
                            clock=lambda: last + 1.0, settings={"language": lang}) as (pilot, app, _):
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


# -- the engine's Notice sentences ------------------------------------------------------------
ENGINE = Path(__file__).resolve().parents[2] / "dspark_tui"
NOTICE_PREFIX = "notice."


def _notice_templates() -> dict[str, str]:
    return {key: template for key, template in CATALOGUE["en"].items()
            if key.startswith(f"screens.event.{NOTICE_PREFIX}")}


def _said_in_both(message: str) -> str:
    """The message's zh (not the English) and its en (the same message)."""
    assert event_words.notice_said("en", message) == message
    zh = event_words.notice_said("zh", message)
    assert zh != message, message
    return zh


def test_notices_of_a_real_runner_are_worded_in_chinese():
    """A real Runner (not started): a signal's notice and the pause's (the runner holding before
    its next cell), each in zh and as written in en."""
    runner = Runner(resolve_plan("demo")[0], RunStore(Path(tempfile.mkdtemp())), gpu=None)
    notices: list[Notice] = []
    runner.subscribe(lambda event: notices.append(event) if isinstance(event, Notice) else None)
    runner._on_signal("SIGHUP")

    async def pause_then_resume() -> None:
        runner.pause()
        waiting = asyncio.ensure_future(runner._may_go_on())
        while len(notices) < 2:
            await asyncio.sleep(0.01)
        runner.resume()
        assert await waiting

    asyncio.run(pause_then_resume())
    assert [n.message for n in notices] == ["SIGHUP: stopping the server and saving state",
                                            "paused; resume to go on"]
    assert [_said_in_both(n.message) for n in notices] == ["SIGHUP：正在停止服务器并保存状态",
                                                           "已暂停；继续后接着运行"]


def test_notice_sentences_built_by_the_engine_are_worded_and_keep_their_fields():
    """Sentences built by the engine's own code (greedy verdicts, the vocabulary line, a
    changed external server, the CPU split): each in zh; what is not ours to word (an arm's
    name, an answer's text, a path, a URL) stays as it came."""
    line = GreedyVerdict(arm="K=3", reference="K=0", verdict="diverges", compared=8, diverging=2,
                         first_prompt=5, first_position=17, unit="token",
                         expected="the cat", got="the dog").line()
    assert _said_in_both(line) == ("贪心检查：K=3 对 K=0：8 个提示中有 2 个输出不同；首次在提示 5 的"
                                   "第 17 个 token：期望 'the cat'，得到 'the dog'")
    char = GreedyVerdict(arm="K=3", reference="K=0", verdict="diverges", compared=8, diverging=1,
                         first_prompt=0, first_position=4, unit="char", expected="a", got="b").line()
    assert "第 4 个字符" in _said_in_both(char)
    within = GreedyVerdict(arm="K=3", reference="K=0", verdict="within_control", compared=8,
                           within_control=3).line()
    assert _said_in_both(within).startswith("贪心检查：K=3 对 K=0：在对照范围内相同（8 个提示中有 3 个")
    same = GreedyVerdict(arm="K=3", reference="K=0", verdict="same", compared=8).line()
    assert _said_in_both(same) == "贪心检查：K=3 对 K=0：全部 8 个提示输出相同"
    for source, detail, zh in (
            ("tokenizer.json", "/models/tok/tokenizer.json", "来自 /models/tok/tokenizer.json"),
            ("server", "probed 3 ids", "来自服务器（probed 3 ids）"),
            ("default", "no tokenizer", "默认值（no tokenizer）")):
        said = _said_in_both(vocabulary_line(VocabularyRecord(size=151936, source=source, detail=detail)))
        assert said == f"random-ids：token id 取自 151,936 以下，{zh}"
    split = CpuSplit(server=frozenset({0}), client=frozenset({1}), allowed=frozenset({0, 1}))
    cpus = (f"server.cpus: {split.said()} "  # runner.py's sentence around the split
            "(the server's whole process tree; the client keeps off it)")
    assert _said_in_both(cpus).startswith("server.cpus：服务器用 CPU 0，客户端用 CPU 1")
    manifest = RunStore(RECORDED).read_manifest()
    arm = manifest.arms[0]
    arm.external_server = {"url": "http://gpu1:8000", "version": "0.9.1"}
    change = record_server_info(manifest, arm.name, {"url": "http://gpu1:8000", "version": "0.9.2"})
    assert change is not None
    said = _said_in_both(f"{arm.name}: {change}")  # session.py's sentence around the change
    assert said.startswith(f"{arm.name}：http://gpu1:8000 的服务器现在报告的 version 与")


def test_the_client_behind_notice_words_its_reason_too():
    """The client's reason for falling behind (model/client_health.judge, the engine's own words
    inside runner.py's sentence) is worded as well, with and without a mean ITL; its numbers as
    they came."""
    for itl, scale in ((4.22, "平均 ITL 4.22 ms 的 50%"), (None, "无 ITL")):
        health = judge(ClientHealth(gaps=100, same_read_gaps=20, loop_lag_p99_ms=12.8,
                                    mean_itl_ms=itl))
        assert health.behind
        message = (f"st=3/chat_short/c16 r1 p1: the client fell behind ({'; '.join(health.reasons)}); "
                   "its latencies are left out of comparisons; later ones are in the log only")
        assert _said_in_both(message) == (
            "st=3/chat_short/c16 r1 p1：客户端跟不上（20% 的 token 间隔与前一个 token 在同一次读取中"
            f"读到（上限 10%），同时事件循环滞后（延迟 p99 12.8 ms，至少为{scale}，且至少 2 ms））；"
            "其延迟不参与比较；之后的只记在日志中")


def test_the_problems_of_a_resumed_runs_cell_files_are_worded(tmp_path: Path):
    """The runner's notices of unreadable cell files (RunStore.load_measurements on a recorded run
    with junk beside its cells): each file's problem in zh, its path as it came; many of them as
    one line, its examples as they came."""
    run = tmp_path / "run"
    shutil.copytree(RECORDED, run)
    said = []
    for junk in ({"junk.json": "{not json", "list.json": "[]", "future.json": '{"schema_version": 99}'},
                 {"odd.json": '{"schema_version": "x"}'}):
        for name, text in junk.items():
            (run / "cells" / "st_3" / name).write_text(text)
        _, problems = RunStore(run).load_measurements()
        said += [_said_in_both(str(problem)) for problem in problems]
        for name in junk:
            (run / "cells" / "st_3" / name).unlink()
    assert sorted(said) == [
        "cells/st_3/future.json：单元结构版本 99 由更新的 dspark-tui 写入（本版本最多读到 "
        f"{CELL_SCHEMA_VERSION}）；已跳过",
        "cells/st_3/junk.json：被截断或不是 JSON；已跳过",
        "cells/st_3/list.json：不是单元对象；已跳过",
        "cells/st_3/odd.json：单元结构版本 'x' 不是本工具认识的；已跳过",
    ]
    for n in range(EXAMPLES + 1):
        (run / "cells" / "st_5" / f"junk{n}.json").write_text("{")
    _, problems = RunStore(run).load_measurements()
    (many,) = problems
    assert _said_in_both(str(many)) == (
        f"cells：{EXAMPLES + 1} 个无法读取的文件，例如 "
        + ", ".join(f"cells/st_5/junk{n}.json (truncated or not JSON)" for n in range(EXAMPLES))
        + "，…；已跳过")
    for n in range(EXAMPLES + 1):
        (run / "cells" / "st_5" / f"junk{n}.json").unlink()
    store = RunStore(run)
    measured = store.load_measurements()[0][0]
    store.save_cell(measured.model_copy(update={"arm": "st=9"}))  # an arm the plan does not have
    _, problems = store.load_measurements()
    assert [_said_in_both(str(problem)) for problem in problems] == [
        f"cells：1 个测量文件属于计划之外的臂或场景（arm 'st=9' scenario '{measured.scenario}'）；"
        "不参与比较"]


async def test_a_server_that_fails_to_start_is_worded_above_its_log_tail(tmp_path: Path, port: int):
    """A real server process that exits while starting (tests/fakes/fake_server_http.py): the
    session's notice (`{arm}: ` and the error with its log tail) has its sentence worded and the
    server's own lines below it as they came."""
    plan = fake_server_plan(port, "--exit-at-start", "3", startup_timeout_s=30)
    server = ServerProcess(plan, plan.arms[0], log_path=tmp_path / "logs" / "server.log",
                           run_dir=tmp_path, emit=lambda event: None)
    with pytest.raises(ServerError) as caught:
        await server.start()
    arm = plan.arms[0].name
    message = f"{arm}: {caught.value.with_tail(10)}"  # session.py's notice
    tail = message.split("\n", 1)[1]
    assert "cannot load the model" in tail
    assert _said_in_both(message) == f"{arm}：服务器启动时退出，退出码 3\n{tail}"
    said = event_words.notice_said(
        "zh", f"{arm}: {server.death_reason()} during warmup\n{tail}")  # session.py's warmup death
    assert said == f"{arm}：预热期间服务器退出，退出码 3\n{tail}"


def test_a_notice_in_no_template_stays_as_it_came():
    """A refusal's own sentence, a server's log tail, an OS's words: as they came in zh."""
    for message in ("st=3: exited with code 1\nTraceback (most recent call last):",
                    "plan.toml: bench.cell_timeout_s must be > 0", ""):
        assert event_words.notice_said("zh", message) == message
    # an OS's words inside a field stay as they came, the engine's around them are worded
    said = event_words.notice_said(
        "zh", "report.md not written: OSError: [Errno 28] No space left on device (retry: "
              "dspark-tui report /runs/demo_1)")
    assert said == ("report.md 未写入：OSError: [Errno 28] No space left on device（重试："
                    "dspark-tui report /runs/demo_1）")
    # a template with literal braces (kubernetes.py names the `{affinity}` placeholder)
    affinity = _said_in_both(
        "K=3: pod.yaml has no {affinity} placeholder, so this pod may land on another node than "
        "its round's other arms (such a round is not compared); add `affinity: {affinity}` under "
        "the Pod's spec")
    assert affinity.startswith("K=3：pod.yaml 没有 {affinity} 占位符")
    assert affinity.endswith("请在 Pod 的 spec 下加上 `affinity: {affinity}`")


def test_a_leading_field_never_runs_over_lines():
    """A log tail whose last line looks like another notice: `{arm}` may not take the lines above
    it (the whole message read as "server log shows a fatal error" of an arm named by three
    lines, review); the first line is worded, the tail stays as it came."""
    tail = "INFO loading weights\nK=5: server log shows a fatal error: CUDA out of memory"
    said = event_words.notice_said("zh", f"K=3: server exited with code 1 while starting\n{tail}")
    assert said == f"K=3：服务器启动时退出，退出码 1\n{tail}"
    # A field further in may: a multi-line exception inside "report.md not written" (review)
    error = "ValidationError: 1 validation error for RunManifest\nstatus\n  Input should be 'completed'"
    said = event_words.notice_said(
        "zh", f"report.md not written: {error} (retry: dspark-tui report /runs/demo_1)")
    assert said == f"report.md 未写入：{error}（重试：dspark-tui report /runs/demo_1）"


def _engine_literals() -> set[str]:
    """Every string literal of the code that writes Notices, f-strings' literal parts too."""
    found: set[str] = set()
    for folder in ("engine", "model", "analysis", "results"):
        for path in (ENGINE / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value:
                    found.add(node.value)
    return found


def _produced(part: str, literals: set[str]) -> bool:
    """Whether the engine's literals give `part`: inside one literal, or the end of one, then
    whole words the code names (a Literal's value: GreedyVerdict's unit `char`), then the start of
    one (a sentence around another's words: runner.py's `server.cpus: `, then CpuSplit.said()'s
    `server on CPU `)."""
    if any(part in literal for literal in literals):
        return True
    words = {lit for lit in literals if re.fullmatch(r"[A-Za-z_]\w{2,}", lit)}
    ends = [j for j in range(1, len(part)) if any(lit.endswith(part[:j]) for lit in literals)]
    seen: set[int] = set()
    while ends:
        j = ends.pop()
        if j in seen:
            continue
        seen.add(j)
        rest = part[j:]
        if any(lit.startswith(rest) for lit in literals):
            return True
        ends += [j + len(word) for word in words if rest.startswith(word) and len(word) < len(rest)]
    return False


def test_every_notice_template_is_a_sentence_the_engine_writes():
    """Each `screens.event.notice.*` template's literal parts come from the engine's string
    literals (ast), so a notice reworded in the engine fails here, not silently in English on a
    zh screen; a reworded template is caught (the check can fail)."""
    literals = _engine_literals()
    templates = _notice_templates()
    assert len(templates) >= 35
    stale = {key: part for key, template in templates.items()
             for part, *_ in string.Formatter().parse(template) if part and not _produced(part, literals)}
    assert stale == {}
    assert not _produced("paused; resume to carry on", literals)
    assert not _produced("server.cpus: server at CPU ", literals)


def test_a_field_is_worded_only_where_it_holds_one_of_the_engines_sentences():
    """The node-move notice's reason is a ServerError's own text ("server exited with code 1
    while starting", server.py): it stays as it came. Any field matched against every template
    read it as a death "with code {code}" and put "1 while starting" where the exit code goes
    (review). A death in its own field is still worded, its code a number."""
    reason = "server exited with code 1 while starting"
    message = (f"K=3: no server started on node-a, round 2's node ({reason}); the round goes on "
               "elsewhere, and its cells measured on two nodes are not compared")
    zh = event_words.notice_said("zh", message)
    assert zh == CATALOGUE["zh"]["screens.event.notice.moved"].format(
        arm="K=3", node="node-a", round="2", reason=reason), zh
    assert event_words.notice_said("zh", "K=3: server exited with code 1 during warmup") == \
        CATALOGUE["zh"]["screens.event.notice.server_died_warmup"].format(
            arm="K=3", death=CATALOGUE["zh"]["screens.event.notice.death_exited"].format(code="1"))
