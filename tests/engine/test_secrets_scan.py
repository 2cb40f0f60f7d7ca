"""Secrets the tool holds never reach the disk: planted in every place a plan can hold one,
served by a server that prints its argv and environment, looked for in every file of the
finished run and in the detached runner's /proc entries. And a resume still hands the server
the real values, and a runner killed with -9 costs the server's log no line."""

from __future__ import annotations

import array
import fcntl
import json
import os
import re
import signal
import sys
import termios
import threading
from pathlib import Path

import psutil

from dspark_tui.engine.servers.log_relay import HOLD_MAX, copy_scrubbed
from dspark_tui.model.secrets import Scrubber
from tests.cli import hold_paused, run_cli, slow_cells, wait_for
from tests.engine.helpers import FAKES, sim_plan_text
from tests.fakes.loud_server import digest

LOUD = FAKES / "loud_server.py"

API_KEY = "sk-bench-key-0001"
SERVER_FLAG = "sk-server-flag-0002"
OPENAI_KEY = "sk-openai-env-0003"
HUB_TOKEN = "hf_hub_token_0004"
URL_PASSWORD = "PWurl-secret-0005"
DB_URL = f"postgres://user:{URL_PASSWORD}@db.example:5432/x"
EXTRA_ARG = "sk-extra-args-0006"
ALL = (API_KEY, SERVER_FLAG, OPENAI_KEY, HUB_TOKEN, URL_PASSWORD, EXTRA_ARG)
def _loud_plan(folder: Path, port: int, *server_flags: str, extra_args: list[str] | None = None,
               **kwargs: object) -> Path:
    """A one-arm simulator plan served through loud_server.py, with secrets in the bench's API
    key and the server's environment (and wherever the caller adds them)."""
    text = sim_plan_text(port, *server_flags, arms=(3,), warmup=0, **kwargs)  # type: ignore[arg-type]
    text = text.replace('"-m", "dspark_tui.sim"', json.dumps(str(LOUD)))
    env = (f'\n[server.env]\nOPENAI_KEY = "{OPENAI_KEY}"\nHF_HUB_TOKEN_X = "{HUB_TOKEN}"\n'
           f'DB_URL = "{DB_URL}"\n\n[[arms]]')
    text = text.replace("\n[[arms]]", env, 1)
    bench = f'driver = "native"\napi_key = "{API_KEY}"'
    if extra_args:
        bench += f"\nextra_args = {json.dumps(extra_args)}"
    text = text.replace('driver = "native"', bench)
    path = folder / "plan.toml"
    path.write_text(text)
    return path


def _manifest(run_dir: Path) -> dict:
    return json.loads((run_dir / "run.json").read_text())


def _secrets_in_files(run_dir: Path, secrets: tuple[str, ...]) -> list[str]:
    return [f"{secret} in {path.relative_to(run_dir)}"
            for path in run_dir.rglob("*") if path.is_file()
            for secret in secrets if secret.encode() in path.read_bytes()]


def _runner_pid(run_dir: Path) -> int:
    wait_for(lambda: _manifest(run_dir).get("runner_pid"), timeout=60, what="the runner's pid")
    return int(_manifest(run_dir)["runner_pid"])


def _queued(pipe_read_end: int) -> int:
    queued = array.array("i", [0])
    fcntl.ioctl(pipe_read_end, termios.FIONREAD, queued)
    return queued[0]


def _relays_of(run_dir: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if "dspark_tui.engine.servers.log_relay" in cmdline and str(run_dir) in cmdline:
            found.append(proc)
    return found


def _gone(pid: int) -> bool:
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_the_relay_scrubs_a_secret_cut_across_reads_and_inside_a_line_longer_than_it_holds(
        tmp_path: Path):
    secret = "hf_split_secret_0007"
    pieces = [b"HF_TOKEN=hf_split_", b"secret_0007 and more\n",
              b"y" * (HOLD_MAX + 5) + b" " + secret.encode()[:6], secret.encode()[6:] + b" end",
              b"\nno newline at the end " + secret.encode()]
    source, sink = os.pipe()
    log = tmp_path / "log"
    log_fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    copier = threading.Thread(target=copy_scrubbed, args=(source, log_fd, Scrubber([secret])))
    copier.start()
    for piece in pieces:  # one read each: the next is written once the relay took this one
        os.write(sink, piece)
        wait_for(lambda: _queued(source) == 0, timeout=10, what="the relay to read")
    os.close(sink)
    copier.join(10)
    os.close(log_fd)
    os.close(source)
    written = log.read_bytes()
    assert secret.encode() not in written
    assert written.count(b"***") == 3
    assert written.startswith(b"HF_TOKEN=*** and more\n") and written.endswith(b"at the end ***")
    assert written.count(b"y") == HOLD_MAX + 5


def test_no_secret_reaches_the_run_directory_nor_the_runners_environment(tmp_path: Path,
                                                                        port: int):
    # A secret in bench.extra_args is refused before the run starts (a resume could never give
    # it back): said in one line that names no secret, and no run directory is made.
    refused = _loud_plan(tmp_path, port, extra_args=["--header", f"Authorization=Bearer {EXTRA_ARG}"])
    said = run_cli("run", str(refused), "--detach", "--results", str(tmp_path / "results"))
    assert said.returncode == 2 and "bench.extra_args holds a secret" in said.stderr, said.stderr
    assert EXTRA_ARG not in said.stderr + said.stdout and not (tmp_path / "results").exists()
    plan = _loud_plan(tmp_path, port, "--api-key", SERVER_FLAG, speed=20)
    done = run_cli("run", str(plan), "--detach", "--results", str(tmp_path / "results"), timeout=120)
    assert done.returncode == 0, done.stderr
    run_dir = Path(done.stdout.strip().splitlines()[0])
    pid = _runner_pid(run_dir)
    # Read while the runner lives: its environment, its command line.
    proc_entries = (Path(f"/proc/{pid}/environ").read_bytes()
                    + Path(f"/proc/{pid}/cmdline").read_bytes())
    assert b"DSPARK_SERVER_TOKEN" not in proc_entries  # it is the runner's, not a server's
    # The log relay holds what it scrubs in memory only, not in its environment or argv.
    relays: list[psutil.Process] = []
    wait_for(lambda: relays.extend(_relays_of(run_dir)) or relays, timeout=60, what="the log relay")
    proc_entries += (Path(f"/proc/{relays[0].pid}/environ").read_bytes()
                     + Path(f"/proc/{relays[0].pid}/cmdline").read_bytes())
    wait_for(lambda: _manifest(run_dir)["status"] != "running", timeout=60, what="the run to end")
    assert _manifest(run_dir)["status"] == "completed", (run_dir / "runner.log").read_text()

    assert [s for s in ALL if s.encode() in proc_entries] == []
    assert _secrets_in_files(run_dir, ALL) == []
    # The server did print them, and the log shows where they were.
    (log,) = (run_dir / "logs").glob("server-*.log")
    text = log.read_text()
    assert "--api-key ***" in text
    assert "OPENAI_KEY=***" in text and "HF_HUB_TOKEN_X=***" in text
    assert "DB_URL=postgres://user:***@db.example:5432/x" in text
    assert "loud heartbeat 1" in text  # a line that holds no secret is left alone


def test_a_killed_runner_costs_the_log_no_line_and_a_resume_hands_the_server_the_real_secrets(
        tmp_path: Path, port: int):
    plan = _loud_plan(tmp_path, port, speed=2, cells=slow_cells((1, 2, 3)))
    done = run_cli("run", str(plan), "--detach", "--results", str(tmp_path / "results"), timeout=120)
    assert done.returncode == 0, done.stderr
    run_dir = Path(done.stdout.strip().splitlines()[0])
    pid = _runner_pid(run_dir)
    events = run_dir / "events.jsonl"
    # Killed while held paused after its first cell, its server up: left going, the other two
    # cells and the reports took under 2 s, and a kill 2 s late (a loaded box) found the server
    # stopped, its heartbeats over.
    wait_for(lambda: events.exists() and '"cell_started"' in events.read_text(), timeout=60,
             what="the first cell to start")
    hold_paused(run_dir)
    assert any(run_dir.glob("cells/*/slow__c1__r1p1.json"))
    (first_log,) = (run_dir / "logs").glob("server-*.log")

    def beats() -> int:
        return max(map(int, re.findall(r"loud heartbeat (\d+)", first_log.read_text())), default=0)

    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: _gone(pid), timeout=60, what="the runner to die")
    after_kill = beats()
    # The orphaned server goes on printing, and its lines still reach the log, scrubbed.
    wait_for(lambda: beats() >= after_kill + 5, timeout=20, what="heartbeats after the kill")

    real = {"OPENAI_KEY": OPENAI_KEY, "DB_URL": DB_URL, "HF_HUB_TOKEN_X": HUB_TOKEN,
            "DSPARK_API_KEY": API_KEY}
    resumed = run_cli("run", "--resume", str(run_dir), "--headless", env=real, timeout=120)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert _manifest(run_dir)["status"] == "completed"
    logs = sorted((run_dir / "logs").glob("server-*.log"))
    assert len(logs) == 2, logs
    resumed_log = next(p for p in logs if p != first_log).read_text()
    for name in ("OPENAI_KEY", "DB_URL", "HF_HUB_TOKEN_X"):
        assert f"digest {name} {digest(real[name])}" in resumed_log, name
    assert _secrets_in_files(run_dir, ALL) == []


async def test_a_bench_client_printing_its_argv_leaves_no_secret_in_its_log(tmp_path: Path):
    """sglang and `vllm bench serve` print their parsed args, extra_args' header included."""
    from dspark_tui.engine.drivers import DriverContext, make_driver
    from dspark_tui.model import BenchConfig, CellKey, CellSpec
    from tests.drivers.test_external_drivers import _shim

    bench = BenchConfig(driver="sglang", python=sys.executable, cell_timeout_s=60,
                        api_key=API_KEY,
                        extra_args=["--header", f"Authorization=Bearer {EXTRA_ARG}"])
    ctx = DriverContext(
        base_url="http://127.0.0.1:18555", host="127.0.0.1", port=18555,
        served_model_name="served-model", model_path="/models/tok", bench=bench,
        raw_dir=tmp_path / "run" / "raw" / "st_3",
        extra_env={"PYTHONPATH": str(_shim(tmp_path)), "FAKE_BENCH_ECHO_ARGV": "1"})
    cell = CellSpec(key=CellKey(arm="st=3", scenario="chat", concurrency=2),
                    input_len=64, output_len=32, range_ratio=0.0, num_prompts=4)
    result = await make_driver(bench).run(cell, ctx, lambda _: None)
    assert result.ok and result.metrics.completed == 4  # what the driver parses still works
    log = (ctx.raw_dir / "chat__c2.log").read_text()
    assert log.count("argv: [") == 2 and "Namespace(" in log  # the client did print them
    assert "header=['***']" in log
    assert _secrets_in_files(tmp_path / "run", ALL) == []


def test_a_key_inside_a_shell_command_line_is_kept_from_every_saved_file(tmp_path: Path,
                                                                         port: int):
    """`["sh", "-c", "vllm serve … --api-key sk-…"]`, the shape srun and docker commands take:
    the key is inside one argument, where no flag masking sees it."""
    text = _loud_plan(tmp_path, port, speed=20).read_text()
    shell = (f'command = ["sh", "-c", "exec {{python}} {LOUD} serve {{model}} --host {{host}} '
             f'--port {{port}} --spec-tokens {{spec_tokens}} --speed 20 --api-key {SERVER_FLAG}"]')
    text = re.sub(r"command = \[.*?\]", lambda _: shell, text, count=1, flags=re.DOTALL)
    plan = tmp_path / "shell.toml"
    plan.write_text(text)
    done = run_cli("run", str(plan), "--headless", "--results", str(tmp_path / "results"),
                   timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    (run_dir,) = (tmp_path / "results").iterdir()
    assert _manifest(run_dir)["status"] == "completed"
    (log,) = (run_dir / "logs").glob("server-*.log")
    assert "--api-key ***" in log.read_text()  # the server did print it
    saved = [run_dir / "run.json", run_dir / "server.json", *run_dir.glob("servers/*.json"),
             run_dir / "events.jsonl"]
    assert all(path.exists() for path in saved), saved
    assert "--api-key ***" in json.dumps(_manifest(run_dir)["plan"]["server"]["command"])
    assert _secrets_in_files(run_dir, ALL) == []


MULTI_1, MULTI_2 = "sk-multi-first-0008", "sk-multi-second-0009"
PLURAL_FLAG = "sk-plural-flag-0010"
PLURAL_KEYS, PLURAL_TOKENS = "sk-plural-keys-0011", "hf_plural_tokens_0012"
IN_ENV_VALUE = "sk-inside-env-value-0013"
FIVE_PATHS = (MULTI_1, MULTI_2, PLURAL_FLAG, PLURAL_KEYS, PLURAL_TOKENS, IN_ENV_VALUE)


def test_the_five_late_paths_are_closed_error_bodies_multi_values_plurals_env_flags_plan_check(
        tmp_path: Path, port: int):
    """Issue 25: a 401 body echoing the key (cell file, raw/, results.csv, reports, events,
    stdout); every value of `--api-key K1 K2`; API_KEYS, HF_TOKENS, --api-keys; a flag inside a
    variable's value; `plan check` printing a key inside `sh -c "…"`."""
    plan = _loud_plan(tmp_path, port, "--echo-key-401", "--api-key", MULTI_1, MULTI_2,
                      "--api-keys", PLURAL_FLAG, speed=20)
    text = plan.read_text().replace(
        "\n[server.env]\n", f'\n[server.env]\nAPI_KEYS = "{PLURAL_KEYS}"\nHF_TOKENS = "{PLURAL_TOKENS}"\n'
                            f'VLLM_EXTRA = "--api-key {IN_ENV_VALUE} --enforce-eager"\n', 1)
    plan.write_text(text)
    secrets = (*ALL, *FIVE_PATHS)
    done = run_cli("run", str(plan), "--headless", "--results", str(tmp_path / "results"),
                   timeout=120)
    assert done.returncode != 0  # every measurement got the 401
    assert [s for s in secrets if s in done.stdout + done.stderr] == []
    (run_dir,) = (tmp_path / "results").iterdir()
    assert _secrets_in_files(run_dir, secrets) == []
    errors = [json.loads(p.read_text())["error"] for p in run_dir.glob("cells/*/*.json")]
    assert errors and all("Incorrect API key provided: Bearer ***" in e for e in errors), errors
    assert any(b"Bearer ***" in p.read_bytes() for p in run_dir.glob("raw/*/*.jsonl"))
    (log,) = (run_dir / "logs").glob("server-*.log")
    logged = log.read_text()  # the server printed every one of them, scrubbed
    assert "API_KEYS=***" in logged and "HF_TOKENS=***" in logged
    assert "VLLM_EXTRA=--api-key *** --enforce-eager" in logged
    assert "--api-key *** *** --api-keys ***" in logged
    env = _manifest(run_dir)["plan"]["server"]["env"]
    assert env["API_KEYS"] == env["HF_TOKENS"] == "***"
    assert env["VLLM_EXTRA"] == "--api-key *** --enforce-eager"

    shell = (f'command = ["sh", "-c", "exec {{python}} {LOUD} serve {{model}} --port {{port}} '
             f'--spec-tokens {{spec_tokens}} --api-key {SERVER_FLAG}"]')
    checked = tmp_path / "check.toml"
    checked.write_text(re.sub(r"command = \[.*?\]", lambda _: shell, text, count=1,
                              flags=re.DOTALL))
    listed = run_cli("plan", "check", str(checked))
    assert listed.returncode == 0, listed.stderr
    assert "--api-key ***" in listed.stdout
    assert [s for s in secrets if s in listed.stdout + listed.stderr] == []
