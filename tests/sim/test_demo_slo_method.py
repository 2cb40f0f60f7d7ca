"""demo-slo's arms name the method vLLM requires for adaptive verification: at 002e77c1f0ef
vLLM refuses `enable_adaptive_verification` unless `method = "dspark"`, so the demo's
adaptive arm (and, for one drafter across the arms, its fixed ones) says "dspark". The
simulator serves "dspark" exactly as it served "mtp" (the method is logged, not modelled; only
"ngram" changes how often a step drafts), so the demo's numbers stand; and the report carries
no "method differs" note."""

from __future__ import annotations

from pathlib import Path

from dspark_tui.plans import resolve_plan
from dspark_tui.report.markdown import render_report
from dspark_tui.results import RunStore, load_run, manifest_for_plan
from dspark_tui.sim.cli import build_parser, serve_config
from tests.report.k_sweep_builders import stated_cells

METHOD_NOTE = "this arm's method differs"


def test_every_arm_of_demo_slo_says_dspark():
    plan = resolve_plan("demo-slo")[0]
    assert [(arm.name, arm.speculative.model_dump(exclude_none=True)) for arm in plan.arms] == [
        ("K=1", {"method": "dspark", "num_speculative_tokens": 1}),
        ("K=3", {"method": "dspark", "num_speculative_tokens": 3}),
        ("K=6", {"method": "dspark", "num_speculative_tokens": 6}),
        ("K=6 adaptive", {"method": "dspark", "num_speculative_tokens": 6,
                          "enable_adaptive_verification": True}),
    ]


def _config(argv: list[str]):  # type: ignore[no-untyped-def]
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv[argv.index("dspark_tui.sim") + 1:])
    return serve_config(args, unknown, parser)


def test_the_simulator_serves_dspark_as_it_served_mtp():
    """Each arm's own command line, as the runner starts it, with "dspark" and with "mtp":
    the same model (steps, drafts, adaptive verification), only the logged method differs."""
    plan = resolve_plan("demo-slo")[0]
    for arm in plan.arms:
        argv = [a.replace("{port}", "0") for a in plan.server_argv(arm)]
        dspark = _config(argv)
        mtp = _config([a.replace('"method":"dspark"', '"method":"mtp"') for a in argv])
        assert (dspark.spec_method, mtp.spec_method) == ("dspark", "mtp")
        assert dspark.engine == mtp.engine, arm.name
        assert dspark.engine.draft_rate == 1.0
        assert dspark.engine.adaptive_verification is (arm.name == "K=6 adaptive")


def test_the_demo_slo_report_has_no_method_note(tmp_path: Path):
    """A run of the shipped plan (its measurements from a stated truth in which adaptive
    verification wins at c=16): the adaptive section says what it found, with no note that
    vLLM would refuse the arm's method."""
    plan = resolve_plan("demo-slo")[0]
    manifest = manifest_for_plan(plan, plan_source="demo-slo")
    manifest.status = "completed"
    RunStore(tmp_path).write_manifest(manifest)
    run = load_run(tmp_path)
    truth = {"K=1": {4: 100.0, 16: 100.0}, "K=3": {4: 112.0, 16: 109.0},
             "K=6": {4: 105.0, 16: 95.0}, "K=6 adaptive": {4: 104.0, 16: 120.0}}
    measured = stated_cells(truth, "mixed")
    run.measurements = measured
    run.cells = {m.key: m for m in measured if m.round == 3}
    text = render_report(run, "en")
    assert "## Adaptive verification against the K decision" in text
    assert "K=6 adaptive" in text.split("## Adaptive verification against the K decision", 1)[1]
    assert METHOD_NOTE not in text
