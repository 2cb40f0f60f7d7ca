"""The choice under an SLO is made at the K decision's level (analysis/slo.py `_choose`): a
best picked among the sweep's K arms, so each comparison it rests on is read at
`family_alpha(look_alpha, K arms)` by the same function the K decision uses
(decision.family_ratio, smallest_within_band), for Total tok/s and for goodput.

The run is test_decision's two-round eight-arm sweep (k_sweep_builders, the same seed) with a
`[slo]` every arm meets by far, and the native client's raw file written for every measurement
(64 requests, TPOT 5 ms against a 50 ms limit; the file's duration set so that a session's
goodput is its Total tok/s over 768 tokens a request). With every arm meeting the SLO, the
choice under it is the K decision's choice in every cell. At chat c=1, K=6 is within the band
of K=7 at one comparison's level (lower end 0.9801) but not at the family's: the choice under
the SLO took K=6 before (the per-comparison interval) and takes K=7 now."""

from __future__ import annotations

import pytest

from dspark_tui.analysis.analysis import analyse
from dspark_tui.analysis.decision import decide_k, family_alpha, ratio_between
from dspark_tui.analysis.slo import slo_answer
from dspark_tui.model import Provenance
from dspark_tui.report.markdown import render_report
from dspark_tui.results.native_raw import NativeRaw, RequestTiming, write_native_raw
from dspark_tui.results.store import LoadedRun
from tests.report.k_sweep_builders import k_sweep_run

KS = list(range(8))
GRID = {"chat": [1, 4, 16, 64, 256], "rag": [1, 8, 32, 96]}  # test_decision's
REQUESTS, TOKENS = 64, 768  # 512 in, 256 out


def slo_sweep(folder, objective: str) -> LoadedRun:
    slo = f'\n[slo]\np90_tpot_ms = 50\nobjective = "{objective}"\n'
    run = k_sweep_run(folder, KS, GRID, rounds=2, slo=slo)
    with_raw = []
    for m in run.measurements:
        total = m.total_throughput
        assert total is not None
        seconds = REQUESTS * TOKENS / total
        # Every request: TTFT 0.1 s, then 255 tokens 5 ms apart.
        timings = [RequestTiming(index=i, input_tokens=512, requested_output_tokens=256,
                                 output_tokens=256, start_s=0.0, ttft_s=0.1, e2e_s=0.1 + 255 * 0.005,
                                 usage_reported=True, itl_count=255) for i in range(REQUESTS)]
        relative = f"raw/K_{m.arm.split('=')[1]}__r{m.round}p1/{m.scenario}__c{m.concurrency}.jsonl"
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        write_native_raw(folder / relative, NativeRaw(timings, seconds, None, 0))
        with_raw.append(m.model_copy(update={"provenance": Provenance(driver="native",
                                                                      raw_output=relative)}))
    run.measurements = with_raw
    run.cells = {m.key: m for m in with_raw if m.round == 2}
    return run


@pytest.mark.parametrize("objective", ["throughput", "goodput"])
def test_the_choice_under_the_slo_is_the_k_decisions_at_its_family_level(tmp_path, objective):
    analysis = analyse(slo_sweep(tmp_path, objective))
    answer, decision = slo_answer(analysis), decide_k(analysis)
    assert answer is not None and decision is not None and analysis.verdicts is not None
    assert all(c.status == "meets" for c in answer.cells)
    # Every arm meets the SLO: the choice under it is the K decision's, cell by cell.
    chosen = {ch.key: ch.choice for ch in answer.choices}
    assert chosen == {c.key: f"K={c.k}" for c in decision.choices}
    # The cell that tells the levels apart (test_decision's): K=6 within the band of K=7 at one
    # comparison's level, not at the family's; the choice is K=7, as the K decision's is.
    paired = answer.goodput if objective == "goodput" else analysis.verdicts
    assert paired is not None
    per_comparison = ratio_between(paired, "chat", 1, "K=6", "K=7")
    family = ratio_between(paired, "chat", 1, "K=6", "K=7",
                           family_alpha(paired.settings.look_alpha, len(KS)))
    floor = analysis.band.floor
    assert per_comparison is not None and per_comparison.lower >= floor  # the old rule's K=6
    assert family is not None and family.lower < floor
    assert chosen[("chat", 1)] == "K=7"
    # The level the choice was made at, stated where the choice is (not the attainment's).
    alpha = family_alpha(analysis.verdicts.settings.look_alpha, len(KS))
    assert answer.choice_alpha == pytest.approx(alpha) and answer.choice_arms == len(KS)
    assert answer.to_json()["choice_alpha"] == pytest.approx(alpha, abs=1e-6)
    en = render_report(analysis.run, "en", charts=[])
    assert f"are read at {100 * (1 - alpha):.3g}% each: the family level of a best picked among 8 arms" in en
    assert "the attainment intervals above are at 95%" in en
    # The ratio against the fastest the choice lines show is at that level too.
    for ch in answer.choices:
        if ch.choice is not None and ch.choice != ch.fastest:
            at_family = ratio_between(analysis.verdicts, ch.scenario, ch.concurrency, ch.choice,
                                      ch.fastest, alpha)
            assert ch.choice_vs_fastest == at_family
