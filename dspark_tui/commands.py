"""The small non-interactive commands: plan list/show/check, report, runs."""

from __future__ import annotations

import argparse
import functools
import shlex
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from dspark_tui.config import settings_or_warn
from dspark_tui.model import Plan, UserError, parse_plan, shown
from dspark_tui.model.secrets import redact_argv

if TYPE_CHECKING:
    from dspark_tui.results.scan import RunSummary


LIST_NAME_WIDTH = 20


def _description(load: Callable[[], Plan]) -> str:
    """A plan's one-line description (what it runs, where, how long), or why it has none."""
    try:
        return load().description or "(no description)"
    except UserError as exc:
        return f"(not a valid plan: {str(exc).splitlines()[0]})"


def _shipped(name: str) -> Plan:
    from dspark_tui.plans import shipped_plan_text

    return parse_plan(shipped_plan_text(name), name)


def _list_line(name: str, description: str) -> None:
    """`name  description`, the description wrapped to 80 columns beside the names."""
    lines = textwrap.wrap(shown.plain(description), 80 - LIST_NAME_WIDTH - 1,
                          break_on_hyphens=False, break_long_words=False) or [""]
    print(f"{name:<{LIST_NAME_WIDTH}} {lines[0]}")
    for line in lines[1:]:
        print(f"{'':<{LIST_NAME_WIDTH}} {line}")


def plan_command(args: argparse.Namespace) -> int:
    from dspark_tui.model.plan import load_plan
    from dspark_tui.plans import resolve_plan, shipped_plan_names, shipped_plan_text

    settings = settings_or_warn(getattr(args, "config", None))
    if args.plan_command == "list":
        for name in shipped_plan_names():
            _list_line(name, _description(functools.partial(_shipped, name)))
        if settings.plans_dir.is_dir():
            for path in sorted(settings.plans_dir.glob("*.toml")):
                _list_line(path.stem, f"{_description(functools.partial(load_plan, path))} ({path})")
        return 0
    if args.plan_command == "show":
        path = Path(args.name).expanduser()
        if path.is_file():
            sys.stdout.write(path.read_text(encoding="utf-8"))
            return 0
        user = settings.plans_dir / f"{args.name}.toml"
        sys.stdout.write(user.read_text(encoding="utf-8") if user.is_file() else shipped_plan_text(args.name))
        return 0
    plan, source = resolve_plan(args.name, settings.plans_dir)
    from dspark_tui.engine.servers.cpus import plan_split

    split = plan_split(plan, source)  # a UserError: one line naming the file and the key
    cells = plan.cells()
    print(f"{source}: ok — plan {plan.name!r}, {len(plan.arms)} arms, {len(plan.scenarios)} scenarios")
    print(f"driver {plan.bench.driver}, warmup {plan.bench.warmup_requests} requests")
    print(*_dataset_lines(plan), sep="\n")
    for arm in plan.arms:
        served = (f"external server {arm.url}" if arm.url
                  else shlex.join(redact_argv(plan.server_argv(arm))))
        print(f"arm {arm.name}: {served}")
    if split is not None:
        print(f"server.cpus: {split.said()} on this machine")
    print(f"{'arm':<10} {'scenario':<22} {'conc':>5} {'in':>6} {'out':>6} {'prompts':>8}")
    for cell in cells:
        key = cell.key
        print(f"{key.arm:<10} {key.scenario:<22} {key.concurrency:>5} {cell.input_len:>6} "
              f"{cell.output_len:>6} {cell.num_prompts:>8}")
    print(f"{len(cells)} cells")
    _print_slo(plan)
    _print_cost(plan, source)
    if getattr(args, "preflight", False):
        results_root = getattr(args, "results", None) or settings.results_root
        return _print_preflight(plan, results_root, settings.history_roots(), source)
    return 0


def _dataset_lines(plan: Plan) -> list[str]:
    """Where each scenario's prompts come from, one line per distinct source."""
    sources: dict[str, list[str]] = {}
    for scenario in plan.scenarios:
        dataset, path = plan.dataset_of(scenario)
        where = f" from {path}" if path else (" from the shipped prompts file" if dataset == "jsonl"
                                               else "")
        only = f", category {scenario.category} only" if scenario.category else ""
        sources.setdefault(f"dataset {dataset}{where}{only}", []).append(scenario.name)
    if len(sources) == 1:
        return list(sources)
    return [f"{line} ({', '.join(names)})" for line, names in sources.items()]


def _print_preflight(plan: Plan, results_root: Path, roots: list[Path],
                     source: str | None = None) -> int:
    """What a run of this plan would meet on this machine now: notes on stdout, problems as the
    run would refuse them (one `error:` line each on stderr, exit code 2)."""
    from dspark_tui.engine.checks.preflight import check_plan
    from dspark_tui.engine.servers.ports import with_concrete_port

    checked = check_plan(with_concrete_port(plan), [results_root, *roots],
                         results_root=Path(results_root).expanduser(), source=source)
    for note in checked.notes:
        print(f"preflight: {'warning' if note.warning else 'note'}: {note.message}")
    if not checked.problems:
        print("preflight: ok — no problem found; a run of this plan can start here")
        return 0
    print(f"preflight: {len(checked.problems)} problem(s); a run of this plan would not start")
    sys.stdout.flush()
    for problem in checked.problems:
        print(f"dspark-tui: error: {problem.message}", file=sys.stderr)
    return 2


def _print_slo(plan: Plan) -> None:
    """`slo:` and each scenario's limits with the share of requests each asks for (docs/decision.md,
    "Under an SLO"); nothing without `[slo]`."""
    slo = plan.slo
    if slo is None:
        return
    from dspark_tui.report.slo_section import limit_text
    from dspark_tui.report.words import Texts

    say = Texts("en", "slo")  # the report's words for a limit; plan check speaks English
    for scenario in plan.scenarios:
        said = say.join(limit_text(lim, say) for lim in slo.limits_for(scenario.name))
        print(f"slo {scenario.name}: {said or 'no limit'}")


def _print_cost(plan: Plan, source: str | None = None) -> None:
    """What the plan costs: cell runs and server starts as planned and at most (every adaptive
    round spent), and the wall time where a model of the server's speed exists."""
    from dspark_tui.engine.schedule import plan_cost
    from dspark_tui.sim.estimate import SimFlagError, TooLarge, estimate_plan

    bench, cost = plan.bench, plan_cost(plan)
    print(f"rounds {bench.rounds} x repeats {bench.repeats}, adaptive budget "
          f"{bench.adaptive_rounds} extra round(s) for the cells still unsure")
    if bench.parallel > 1:
        print(f"parallel: up to {bench.parallel} planned rounds at once, each on a node of its own "
              "running every arm in turn; adaptive rounds one at a time")
    print(f"cell runs: {cost.measurements} planned, at most {cost.measurements_at_most}")
    print(f"server starts: {cost.server_starts} planned, at most {cost.server_starts_at_most} "
          "(plus one restart a session if a server dies)")
    try:
        estimate = estimate_plan(plan)
    except TooLarge as exc:
        print(f"wall time: not estimated ({exc})")
        return
    except SimFlagError as exc:  # one line naming the key, not the simulator's usage
        raise UserError(f"{source}: {exc}" if source else str(exc)) from None
    if estimate is None:
        print("wall time: not estimated (only plans against dspark_tui.sim have a model of "
              "their speed; History shows what earlier runs of this plan took)")
        return
    # Rounds in parallel: the planned ones in waves of `parallel`; adaptive ones one at a time.
    waves = -(-bench.rounds // bench.parallel)
    planned = waves * estimate.round_s
    most = (waves + bench.adaptive_rounds) * estimate.round_s
    print(f"wall time (rough, from the simulator's model; no HTTP or warmup): about "
          f"{_duration(planned)} planned, at most {_duration(most)}")


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"


def report_command(args: argparse.Namespace) -> int:
    from dspark_tui.report.markdown import render_report
    from dspark_tui.results import load_run

    run = load_run(args.run_dir)
    for problem in run.problems:
        print(f"dspark-tui: warning: {run.path / problem.path}: {problem.reason}", file=sys.stderr)
    if not run.cells:
        raise UserError(f"{run.path}: no readable cells to report on")
    if getattr(args, "json", False):
        from dspark_tui.report.outputs import analysis_json

        sys.stdout.write(analysis_json(run))  # computed in memory: works on read-only runs
        return 0
    partial = bool(getattr(args, "partial_schedule", False))
    if args.stdout:
        # Printed for a person: in the language the app opens in (issue 23), unless asked.
        lang = args.lang or settings_or_warn(getattr(args, "config", None)).language
        sys.stdout.write(render_report(run, lang=lang, partial_schedule=partial))
        return 0
    from dspark_tui.report.outputs import write_outputs
    from dspark_tui.results.store import RUN_JSON

    if any(problem.path == RUN_JSON for problem in run.problems):
        # Without run.json the report loses its plan and header: never overwrite a good one.
        raise UserError(f"{run.path / RUN_JSON}: unreadable, so no report is written over the "
                        "saved one; `--stdout` prints what can be rendered")
    charts = settings_or_warn(getattr(args, "config", None)).charts
    try:  # the report, analysis.json and (K sweeps) schedule.json, as a finishing runner does
        path, *_ = write_outputs(run, (args.lang or "zh",), partial_schedule=partial, charts=charts)
    except OSError as exc:
        raise UserError(f"{run.path}: cannot write the report ({exc.strerror})") from None
    print(path)
    return 0


def noise_command(args: argparse.Namespace) -> int:
    from dspark_tui.analysis.noise_prior import pooled_session_noise
    from dspark_tui.results import load_run

    pooled = pooled_session_noise([load_run(path) for path in args.run_dirs])
    print(f"between-session sd of the paired log ratio: {pooled.sd:.4f} "
          f"({pooled.df} degrees of freedom, {pooled.source})")
    print("to use it as a stated prior, put this line in the plan's [bench] table:")
    print(pooled.toml_line())
    return 0


def runs_command(args: argparse.Namespace) -> int:
    from dspark_tui.results import scan_runs

    settings = settings_or_warn(getattr(args, "config", None))
    roots = list(dict.fromkeys(Path(r).expanduser() for r in
                               [*(args.results or []), *settings.history_roots()]))
    runs = scan_runs(roots, sizes=True)
    if not runs:
        print("no runs found in " + ", ".join(str(r) for r in roots))
        return 0
    rows = [_run_row(run, args.paths) for run in runs]
    header = ("NAME", "ARMS", "CELLS", "SIZE", "STATUS", *(("PATH",) if args.paths else ()))
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header) - 1)]
    for row in [header, *rows]:
        cells = [cell.rjust(width) if i in (2, 3) else cell.ljust(width)
                 for i, (cell, width) in enumerate(zip(row, widths, strict=False))]
        print(shown.plain("  ".join([*cells, row[-1]]).rstrip()))  # a crafted directory's name
    if not args.paths:
        # The NAME (or a unique prefix) is taken wherever a run directory is.
        print("in " + ", ".join(str(r) for r in roots) + "  (--paths: each directory)")
    return 0


ARMS_SHOWN = 12  # wider than this, the ARMS column counts the arms (`7 arms`): 80 columns


def _run_row(run: RunSummary, paths: bool) -> tuple[str, ...]:
    from dspark_tui.model.run_status import run_status_label, skipped_of_completed
    from dspark_tui.results.run_size import format_size

    state = f"problem: {run.problem}" if run.problem else run_status_label(
        run.status, skipped=skipped_of_completed(run.cells_total, run.cells_done)
        if run.status == "completed" else 0)
    arms = ",".join(run.arms)
    if len(arms) > ARMS_SHOWN:
        arms = f"{len(run.arms)} arms"
    row = (run.path.name, arms, f"{run.cells_done}/{run.cells_total}", format_size(run.size_bytes), state)
    return (*row, str(run.path)) if paths else row
