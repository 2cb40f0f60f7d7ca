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

import atexit
import functools
import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from dspark_tui.analysis.analysis import analyse
from dspark_tui.analysis.decision import decide_k, family_alpha, family_ratio, ratio_between
from dspark_tui.analysis.deploy import deploy_answer
from dspark_tui.analysis.schedule import combine_ratios
from dspark_tui.analysis.slo import latency_verdicts, slo_answer
from dspark_tui.analysis.verdicts import SessionPrior
from dspark_tui.model import Provenance
from dspark_tui.report.markdown import render_report
from dspark_tui.results.native_raw import NativeRaw, RequestTiming, write_native_raw
from dspark_tui.results.store import LoadedRun, load_run
from tests.report.k_sweep_builders import Model, k_sweep_run, model_throughput

KS = list(range(8))
GRID = {"chat": [1, 4, 16, 64, 256], "rag": [1, 8, 32, 96]}  # test_decision's
REQUESTS, TOKENS = 64, 768  # 512 in, 256 out


def slo_sweep(folder, objective: str, *, rounds: int = 2, model: Model | None = None,
              tpot_ms: Callable[[int], float] = lambda k: 5.0, traffic: str = "",
              running: Callable[[int, str, int], float] | None = None,
              readings: Callable[[int, str, int], int] | None = None) -> LoadedRun:
    """`tpot_ms`: every request's TPOT of an arm's K (above 50 ms the arm fails the SLO);
    `traffic`, `running` (the server's running batch of a cell) and `readings` as k_sweep_run
    takes them."""
    slo = f'\n[slo]\np90_tpot_ms = 50\nobjective = "{objective}"\n'
    run = k_sweep_run(folder, KS, GRID, rounds=rounds, slo=slo, model=model, traffic=traffic,
                      running=running, readings=readings)
    with_raw = []
    for m in run.measurements:
        total = m.total_throughput
        assert total is not None
        seconds = REQUESTS * TOKENS / total
        gap = tpot_ms(int(m.arm.split("=")[1])) / 1000.0
        relative = f"raw/K_{m.arm.split('=')[1]}__r{m.round}p1/{m.scenario}__c{m.concurrency}.jsonl"
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_raw_file(seconds, gap), folder / relative)
        # The client's p90 TPOT moves with the session as Total tok/s does (latency verdicts).
        metrics = m.metrics.model_copy(update={"p90_tpot_ms": 5.0 * 1e5 / total})
        with_raw.append(m.model_copy(update={
            "metrics": metrics, "provenance": Provenance(driver="native", raw_output=relative)}))
    run.measurements = with_raw
    run.cells = {m.key: m for m in with_raw if m.round == 2}
    return run


# The raw files, written by the product's writer once per process and content, then copied (the
# same bytes): a sweep has 144, each an atomic write with two fsyncs, and this file's sweeps
# asked for ~4,800 fsyncs, which a busy disk made about a third of its wall time.
@functools.cache
def _cache_dir() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="slo_raw_cache_"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


@functools.cache
def _raw_file(seconds: float, gap: float) -> Path:
    """A raw file of REQUESTS requests over `seconds`: each a TTFT of 0.1 s, then 255 tokens
    `gap` seconds apart."""
    timings = [RequestTiming(index=i, input_tokens=512, requested_output_tokens=256,
                             output_tokens=256, start_s=0.0, ttft_s=0.1, e2e_s=0.1 + 255 * gap,
                             usage_reported=True, itl_count=255) for i in range(REQUESTS)]
    path = _cache_dir() / f"{seconds!r}_{gap!r}.jsonl"
    write_native_raw(path, NativeRaw(timings, seconds, None, 0))
    return path


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
    # Every arm meets the SLO: where the choice is not the fastest, the line says why (the band
    # rule), not that the fastest was not shown to meet it (it said so before: review).
    assert "not shown to meet" not in en
    assert ("- `rag` c=8: `K=6` meets the SLO, −0.3% (−1.8% … +1.3%) against the fastest, `K=7`, "
            "which meets it too: `K=6` is the smallest K shown within the tie band of `K=7`, the "
            "best arm that meets it") in en
    assert ("rag c=8 → `K=6` (the fastest, `K=7`, meets it too; a smaller K is shown within the "
            "tie band)") in en
    # The ratio against the fastest the choice lines show is at that level too.
    for ch in answer.choices:
        if ch.choice is not None and ch.choice != ch.fastest:
            at_family = ratio_between(analysis.verdicts, ch.scenario, ch.concurrency, ch.choice,
                                      ch.fastest, alpha)
            assert ch.choice_vs_fastest == at_family


def test_goodput_and_latency_verdicts_estimate_their_own_session_noise(tmp_path):
    """A plan's session-noise prior states the spread of log Total tok/s: the throughput verdicts
    use it, the goodput and latency verdicts do not (analysis/slo.own_noise; their session term
    from their own rounds). Before, both were handed the throughput verdicts' settings, prior
    and all, and goodput pooled it in all 28 pairs (here, where goodput's noise is throughput's,
    the median goodput interval's half-width was 0.63 % against 0.83 % from its own rounds)."""
    run = slo_sweep(tmp_path, "goodput")
    manifest = json.loads((tmp_path / "run.json").read_text())
    # The builder's sessions vary 0.2 %: a prior of 0.3 % on 20 df is not contradicted.
    manifest["plan"]["bench"]["session_noise_prior"] = {"sd": 0.003, "df": 20, "source": "a box"}
    (tmp_path / "run.json").write_text(json.dumps(manifest))
    with_prior = load_run(tmp_path)
    with_prior.measurements, with_prior.cells = run.measurements, run.cells
    analysis = analyse(with_prior)
    answer = slo_answer(analysis)
    assert answer is not None and answer.goodput is not None and analysis.verdicts is not None
    assert analysis.verdicts.settings.prior == SessionPrior(0.003, 20)
    assert all(n.prior for n in analysis.verdicts.noise)  # throughput pools it
    assert answer.goodput.settings.prior is None
    assert not any(n.prior for n in answer.goodput.noise)
    # The same intervals as without any prior in the plan.
    plain = slo_answer(analyse(slo_sweep(tmp_path / "plain", "goodput")))
    assert plain is not None and plain.goodput is not None
    assert [(p.ci_low, p.ci_high) for p in answer.goodput.pairs] == \
        [(p.ci_low, p.ci_high) for p in plain.goodput.pairs]
    assert answer.latency == plain.latency and answer.latency
    direct = latency_verdicts(with_prior.measurements, analysis.arms, analysis.verdicts.settings,
                              ["p90_tpot_ms"])
    assert direct == answer.latency


def test_an_arm_never_restarted_is_said_to_have_no_session_term_in_goodput_and_latency(tmp_path):
    """With the prior not lent, a never-restarted arm's goodput and latency verdicts cover
    within-session noise only: the section says so (the throughput summary says its own)."""
    run = slo_sweep(tmp_path, "goodput")
    manifest = json.loads((tmp_path / "run.json").read_text())
    manifest["plan"]["bench"]["session_noise_prior"] = {"sd": 0.003, "df": 20, "source": "a box"}
    manifest["plan"]["arms"][7]["url"] = "http://gpu-box:8000"
    (tmp_path / "run.json").write_text(json.dumps(manifest))
    external = load_run(tmp_path)
    external.measurements, external.cells = run.measurements, run.cells
    answer = slo_answer(analyse(external))
    assert answer is not None and answer.unreplicated == ["K=7"]
    en = render_report(external, "en", charts=[])
    assert ("- The server of `K=7` was not restarted between rounds: its goodput and latency "
            "verdicts cover within-session noise only.") in en
    plain = render_report(run, "en", charts=[])
    assert "goodput and latency verdicts cover within-session noise only" not in plain


# -- the best fixed arm under the SLO: the best fixed K's rule (schedule.best_fixed) -------------

def _k2_beside_k3(k: int, scenario: str, c: int) -> float:
    """K=2 0.5 % behind K=3 in every cell (within the tie band), the rest the builder's model."""
    return model_throughput(3, c) * 0.995 if k == 2 else model_throughput(k, c)


def _k4_up_fail(k: int) -> float:
    """TPOT of every request: K >= 4 miss the 50 ms limit everywhere, K <= 3 meet it by far."""
    return 60.0 if k >= 4 else 5.0


@pytest.mark.parametrize("objective", ["throughput", "goodput"])
def test_with_every_arm_meeting_the_slo_the_best_fixed_arm_is_the_best_fixed_k(tmp_path, objective):
    """One rule, one home: with no arm excluded by the SLO, the best fixed arm under it is the
    K sweep's best fixed K — the same K, leader, status and gains over every other K (goodput is
    Total tok/s over 768 tokens a request here, so its own verdicts give the same ratios)."""
    analysis = analyse(slo_sweep(tmp_path, objective))
    answer, deploy = slo_answer(analysis), deploy_answer(analysis)
    assert answer is not None and answer.single is not None
    assert deploy is not None and deploy.single is not None
    single, k = answer.single, deploy.single
    assert (single.arm, single.leader, single.status) == (f"K={k.k}", f"K={k.leader}", k.status)
    assert single.weights == deploy.weights
    assert answer.to_json()["best_fixed"]["traffic_keyed_on"] == "equal"  # no [traffic]
    assert {arm: (round(g.ratio, 9), round(g.low or 0, 9), round(g.high or 0, 9))
            for arm, g in single.gains.items()} == \
        {f"K={other}": (round(g.ratio, 9), round(g.low or 0, 9), round(g.high or 0, 9))
         for other, g in k.gains.items()}
    # The answer is the leader, shown best: the section says on what (en, zh).
    en = render_report(analysis.run, "en", charts=[])
    assert ("- **Best fixed arm under the SLO**: `K=4` (shown to meet it in every cell the traffic "
            "weighs; also meeting it everywhere:") in en
    assert ("  - Shown best among them on the traffic: none of them may beat it by more than the tie "
            "band (its traffic-weighted ratio to each, read at the level the choices are): ") in en
    zh = render_report(analysis.run, "zh", charts=[])
    assert "  - 在流量上被证明是其中最好的：没有哪个能比它快出持平带以上" in zh


@pytest.mark.parametrize("objective", ["throughput", "goodput"])
def test_the_best_fixed_arm_under_the_slo_is_the_smallest_k_shown_within_the_band(tmp_path, objective):
    """K >= 4 fail the SLO; of K = 0..3, K=3 leads by 0.5 % and K=2 is shown within the tie band
    of it on the traffic (three rounds): the answer is K=2, as the best fixed K's rule gives.
    Before (a traffic-weighted point estimate), it was the leader K=3."""
    analysis = analyse(slo_sweep(tmp_path, objective, rounds=3, model=_k2_beside_k3, tpot_ms=_k4_up_fail))
    answer = slo_answer(analysis)
    assert answer is not None and answer.single is not None and analysis.verdicts is not None
    single = answer.single
    assert single.candidates == ["K=0", "K=1", "K=2", "K=3"] and single.fastest == "K=4"
    assert single.arm == "K=2"  # before: K=3, the leader by its point estimate
    assert (single.leader, single.status) == ("K=3", "decided")
    # Its gains are the objective's paired verdicts at the choices' family level, weighted.
    paired = answer.goodput if objective == "goodput" else analysis.verdicts
    assert paired is not None
    over_k3 = combine_ratios([(w, r) for (s, c), w in single.weights.items()
                              if (r := family_ratio(paired, s, c, "K=2", "K=3", len(KS))) is not None])
    assert single.gains["K=3"] == over_k3
    assert over_k3 is not None and over_k3.low is not None and analysis.band.floor <= over_k3.low < 1.0
    best = answer.to_json()["best_fixed"]
    assert (best["arm"], best["leader"], best["status"]) == ("K=2", "K=3", "decided")
    assert set(best["gain_over"]) == {"K=0", "K=1", "K=3"}
    en = render_report(analysis.run, "en", charts=[])
    assert ("- **Best fixed arm under the SLO**: `K=2`, the smallest K shown within the tie band of "
            "the leader, `K=3` (the fastest arm without the SLO, `K=4`, is not shown to meet it "
            "everywhere)") in en
    assert "  - `K=2` is the smallest K shown within the tie band of the leader, `K=3`, on the traffic" in en
    zh = render_report(analysis.run, "zh", charts=[])
    assert "- **SLO 约束下最好的固定配置**：`K=2`，被证明处于领先者 `K=3` 持平带内的最小 K" in zh


@pytest.mark.parametrize("objective", ["throughput", "goodput"])
def test_the_best_fixed_arm_under_the_slo_not_shown_best_is_named_as_the_leader_only(tmp_path, objective):
    """The same arms with two rounds: K=3 leads K=2 by +0.4 % and the interval at the family
    level is wide, so neither is shown best. The answer names K=3 as the leader and says that K=2
    may still beat it; before, K=3 was the best fixed arm with nothing said."""
    analysis = analyse(slo_sweep(tmp_path, objective, model=_k2_beside_k3, tpot_ms=_k4_up_fail))
    answer = slo_answer(analysis)
    assert answer is not None and answer.single is not None
    single = answer.single
    en = render_report(analysis.run, "en", charts=[])
    assert "- **Best fixed arm under the SLO**: `K=3` (the fastest arm" not in en  # before
    assert ("- **Best fixed arm under the SLO**: none is shown best; the leader is `K=3`, and `K=2` "
            "may still beat it by more than the tie band") in en
    assert ("- **Best fixed arm under the SLO**: no fixed arm is shown best; the leader is `K=3` "
            "(shown to meet it in every cell the traffic weighs; also meeting it everywhere: `K=0`, "
            "`K=1`, `K=2`), and `K=2` may still beat it by more than the tie band") in en
    zh = render_report(analysis.run, "zh", charts=[])
    assert "没有哪个被证明最好；领先的是 `K=3`，`K=2` 仍可能比它快出持平带以上" in zh
    assert (single.arm, single.leader, single.status) == ("K=3", "K=3", "unsure")
    over_k2 = single.gains["K=2"]
    assert over_k2.low is not None and over_k2.low < analysis.band.floor
    assert single.behind == ["K=2"]
    best = answer.to_json()["best_fixed"]
    assert (best["arm"], best["leader"], best["status"]) == ("K=3", "K=3", "unsure")


# -- the weights of the cells: one home with the best fixed K (schedule.run_weights) --------------

RUNNING_BATCH_TRAFFIC = "\n[traffic]\nscenarios = { chat = 1.0 }\nrunning_batch = { 4 = 1.0 }\n"


def _sixteenth(k: int, scenario: str, c: int) -> float:
    """The server's running batch: a sixteenth of the client's concurrency (c=64 holds 4)."""
    return c / 16


@pytest.mark.parametrize("objective", ["throughput", "goodput"])
def test_the_best_fixed_arm_under_the_slo_weighs_cells_by_the_measured_running_batch(tmp_path, objective):
    """A `running_batch` traffic histogram (all of it at batch 4) and a server whose running batch
    is c/16: the batch-4 cell is chat c=64, where K=2 is fastest; chat c=4 (batch 1) is where
    the client's concurrency is 4, and there K=7 is. K >= 6 fail the TPOT limit. The best fixed
    arm under the SLO weighs the cells as the best fixed K does (the cells' measured running
    batches: schedule.run_weights), so it is K=2, the best fixed K's own answer. Before, it
    weighed them by the client's concurrency (all weight on chat c=4) and answered K=5."""
    analysis = analyse(slo_sweep(tmp_path, objective, rounds=3, tpot_ms=_k6_up_fail,
                                 traffic=RUNNING_BATCH_TRAFFIC, running=_sixteenth))
    answer, deploy = slo_answer(analysis), deploy_answer(analysis)
    assert answer is not None and answer.single is not None
    assert deploy is not None and deploy.single is not None
    assert deploy.points[("chat", 64)][0] == 4.0 and deploy.points[("chat", 4)][0] == 1.0
    assert {key: w for key, w in deploy.weights.items() if w > 0} == {("chat", 64): 1.0}
    assert answer.single.weights == deploy.weights  # the same cells, the same weights
    assert answer.single.candidates == [f"K={k}" for k in range(6)]
    assert (deploy.single.k, deploy.single.status) == (2, "decided")
    assert (answer.single.arm, answer.single.status) == ("K=2", "decided")  # before: K=5
    assert answer.to_json()["best_fixed"]["traffic_keyed_on"] == "running_batch"


def test_with_thin_batch_readings_both_best_fixed_answers_lay_the_traffic_on_concurrency(tmp_path):
    """The same run with every measurement reading the batch twice (fewer than
    MIN_RUNNING_SAMPLES): the schedule's rule keys every cell on its client concurrency, and
    the best fixed arm under the SLO follows it (chat c=4 weighs, K=5), saying so."""
    analysis = analyse(slo_sweep(tmp_path, "throughput", rounds=3, tpot_ms=_k6_up_fail,
                                 traffic=RUNNING_BATCH_TRAFFIC, running=_sixteenth,
                                 readings=lambda k, scenario, c: 2))
    answer, deploy = slo_answer(analysis), deploy_answer(analysis)
    assert answer is not None and answer.single is not None and deploy is not None
    assert {key: w for key, w in deploy.weights.items() if w > 0} == {("chat", 4): 1.0}
    assert answer.single.weights == deploy.weights
    assert answer.single.arm == "K=5"
    assert answer.to_json()["best_fixed"]["traffic_keyed_on"] == "client_concurrency"


def _k6_up_fail(k: int) -> float:
    """TPOT of every request: K >= 6 miss the 50 ms limit everywhere, K <= 5 meet it by far."""
    return 60.0 if k >= 6 else 5.0
