"""Server logs are bounded (issue 25, item 11): past `server.log_max_bytes` a log keeps its
head, one line saying how much was cut there, and the latest output; the disk budget counts the
cap per session. Seen: 5-6 MB/s of server output filled an 8 MB results disk."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

from dspark_tui.engine.checks.disk_budget import LOG_CUT_LINE_BYTES, expected_output_bytes
from dspark_tui.engine.servers.log_relay import BoundedLog, head_bytes, marker
from dspark_tui.engine.servers.server import ServerProcess
from dspark_tui.model import Plan
from dspark_tui.plans import resolve_plan
from dspark_tui.results import load_run
from tests.cli import run_cli, slow_cells
from tests.disks import small_tmpfs
from tests.engine.helpers import Recorder, fake_server_plan, write_sim_plan

CAP = 256 << 10


def _numbered(start: int, count: int) -> bytes:
    return b"".join(b"line %08d %s\n" % (i, b"y" * 80) for i in range(start, start + count))


def test_a_log_past_its_cap_keeps_its_head_a_cut_line_and_the_latest_output(tmp_path: Path):
    path = tmp_path / "server.log"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    output = b""
    try:
        log = BoundedLog(fd, CAP)
        for start in range(0, 60_000, 1_000):  # ~5.6 MB, written as a relay gets it
            chunk = _numbered(start, 1_000)
            output += chunk
            log.write(chunk)
            assert os.fstat(fd).st_size <= CAP + len(marker(0, 0, CAP))
    finally:
        os.close(fd)
    text = path.read_bytes()
    head = head_bytes(CAP)
    assert text[:head] == output[:head]  # how the server started, untouched
    cut = text[head:].split(b"\n", 2)[1].decode()
    found = re.fullmatch(r"\[dspark-tui: log cut #(\d+): +(\d+) bytes of the server's output "
                         r"left out here \(server.log_max_bytes = 262144\); its first 131072 "
                         r"bytes are above, its latest below\]", cut)
    assert found, cut
    latest = text[head + len(marker(0, 0, CAP)):]
    assert output.endswith(latest) and latest.startswith(b"line ")  # from a line's start
    assert int(found.group(2)) == len(output) - head - len(latest)  # counted exactly
    assert int(found.group(1)) > 1  # cut again and again, rewritten in place


def test_a_log_under_its_cap_is_untouched(tmp_path: Path):
    path = tmp_path / "server.log"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        log = BoundedLog(fd, CAP)
        log.write(_numbered(0, 100))
    finally:
        os.close(fd)
    assert path.read_bytes() == _numbered(0, 100)


async def test_a_flooding_servers_log_stays_within_its_cap_and_is_still_followed(
        tmp_path: Path, port: int):
    plan = fake_server_plan(port, "--log-flood", log_max_bytes=CAP)
    recorder = Recorder()
    log_path = tmp_path / "logs" / "server-a_1.log"
    server = ServerProcess(plan, plan.arms[0], log_path=log_path, run_dir=tmp_path, emit=recorder)
    await server.start()
    try:
        for _ in range(10):  # two seconds of a ~5 MB/s flood: 40 times the cap
            await asyncio.sleep(0.2)
            assert log_path.stat().st_size <= CAP + LOG_CUT_LINE_BYTES
        assert await server.probe_health()
    finally:
        await server.stop()
    text = log_path.read_text()
    assert text.startswith("fake server pid ")  # the head: how it started
    assert "Application startup complete." in text[:head_bytes(CAP)]
    assert re.search(r"\[dspark-tui: log cut #\d+: +\d+ bytes of the server's output left out", text)
    assert "[... server log cut (server.log_max_bytes); reading on from its end ...]" in server.tail()
    assert len(server.tail()) <= 200


def test_the_disk_budget_counts_each_sessions_log_at_its_cap():
    plan, _ = resolve_plan("demo")
    sessions = len(plan.arms) * plan.bench.rounds
    bigger = plan.model_copy(update={"server": plan.server.model_copy(
        update={"log_max_bytes": plan.server.log_max_bytes + 10_000_000})})
    assert expected_output_bytes(bigger) - expected_output_bytes(plan) == sessions * 10_000_000
    assert plan.server.log_max_bytes == 2 << 20
    assert "log_max_bytes" not in plan.model_dump()["server"]  # snapshots as before unless set
    assert Plan.model_validate(bigger.model_dump()).server.log_max_bytes == (2 << 20) + 10_000_000


def test_a_server_flooding_its_log_no_longer_fills_a_small_results_disk(tmp_path: Path,
                                                                          port: int):
    """The probe: ~5 MB/s of server output on an 8 MB results disk stopped the run. Now each
    session's log stops at its cap and the run completes."""
    plan = write_sim_plan(tmp_path, port, "--log-flood", "5000000", warmup=0, speed=8,
                          cells=slow_cells((1,), output_len=256))
    with small_tmpfs(tmp_path, "8m") as disk:
        done = run_cli("run", str(plan), "--headless", "--results", str(disk / "results"),
                       timeout=120)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        (run_dir,) = (disk / "results").iterdir()
        logs = sorted((run_dir / "logs").glob("server-*.log"))
        assert len(logs) == 2
        for log in logs:
            assert log.stat().st_size <= (2 << 20) + LOG_CUT_LINE_BYTES
            assert "bytes of the server's output left out here" in log.read_text()
        assert all(c.ok for c in load_run(run_dir).cells.values())
