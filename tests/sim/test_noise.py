"""The noise model: off means the noise-free model, on it has the CVs its flags promise,
and the live server draws from the same distribution as the model-time `noise.measure`."""

from __future__ import annotations

import asyncio
import math
import re
from dataclasses import replace

import numpy as np
import pytest

from dspark_tui.sim.config import ModelConfig, NoiseParams
from dspark_tui.sim.loadgen import run_closed_loop
from dspark_tui.sim.noise import SessionNoise, measure, new_session
from dspark_tui.sim.virtual import VirtualResult, sample_lengths, simulate_closed_loop
from tests.simulator import refusal_line, running_sim

# The demo plan's cells (scenario lengths, concurrency, prompts), K=3.
DEMO_CELLS = [(512, 256, 1, 8), (512, 256, 16, 64), (512, 1024, 1, 4), (1024, 256, 64, 128),
              (1024, 256, 128, 256)]


def _cell(input_len: int, output_len: int, concurrency: int, prompts: int, k: int = 3,
          seed: int = 1) -> VirtualResult:
    lengths = sample_lengths(input_len, output_len, prompts, 0.0, seed=1)
    return simulate_closed_loop(ModelConfig(spec_tokens=k), lengths, concurrency, seed=seed)


def _cv(values: np.ndarray, axis: int = 0) -> np.ndarray:
    return values.std(axis=axis, ddof=1) / values.mean(axis=axis)


def test_all_switches_at_zero_change_nothing():
    cell = _cell(512, 256, 16, 64)
    session = new_session(NoiseParams(), seed=3)
    for _ in range(3):
        assert measure(cell, session, gap_s=10).total_throughput == cell.total_throughput
    assert not NoiseParams().enabled
    assert NoiseParams(hiccup_prob=0.5).enabled is False  # a stall of 0 s is no stall


def test_work_adds_up_whatever_the_pieces():
    params = NoiseParams(noise_cv=0.2, session_cv=0.1, hiccup_prob=0.5, hiccup_s=0.3,
                         drift_time_s=1.0)
    whole, pieces = new_session(params, seed=11), new_session(params, seed=11)
    whole.work(20.0)
    for _ in range(2000):
        pieces.work(0.01)
    assert pieces.hiccups == whole.hiccups > 0
    assert pieces.clock == pytest.approx(whole.clock, rel=1e-9)


def test_a_noisy_closed_loop_lasts_what_measure_says():
    """The live engine's path (noise inside each step) and model time (noise over a cached
    noise-free result) are one model: same seed, same duration."""
    params = NoiseParams(noise_cv=0.1, session_cv=0.05, hiccup_prob=0.2, hiccup_s=0.5,
                         drift_time_s=0.5)
    lengths = sample_lengths(512, 256, 64, 0.0, seed=1)
    config = ModelConfig(spec_tokens=5)
    stepped = simulate_closed_loop(config, lengths, 16, seed=2, noise=new_session(params, 5))
    cached = simulate_closed_loop(config, lengths, 16, seed=2)
    assert stepped.duration_s != pytest.approx(cached.duration_s, rel=1e-3)
    modelled = measure(cached, new_session(params, 5))
    assert modelled.duration_s == pytest.approx(stepped.duration_s, rel=1e-9)
    assert (stepped.completed, stepped.drafts, stepped.accepted) == (
        cached.completed, cached.drafts, cached.accepted)


def _repeats(params: NoiseParams, cells: list[VirtualResult], sessions: int, repeats: int,
             gap_s: float) -> np.ndarray:
    """Total tok/s, shape (sessions, repeats, cells): each session passes over the cells."""
    values = np.empty((sessions, repeats, len(cells)))
    for s in range(sessions):
        session = new_session(params, seed=s)
        for r in range(repeats):
            for c, cell in enumerate(cells):
                values[s, r, c] = measure(cell, session, gap_s=gap_s).total_throughput
    return values


def test_within_session_cv_is_noise_cv_and_between_sessions_is_session_cv():
    short = _cell(512, 256, 16, 64)  # 1.5 modelled s, much shorter than the drift time
    params = NoiseParams(noise_cv=0.05, drift_time_s=20.0)
    within = _cv(_repeats(params, [short], 300, 5, gap_s=200.0)[:, :, 0], axis=1)
    assert math.sqrt(np.mean(within**2)) == pytest.approx(0.05, rel=0.08)

    params = NoiseParams(session_cv=0.04)
    means = _repeats(params, [short], 600, 2, gap_s=1.0).mean(axis=(1, 2))
    assert _cv(means) == pytest.approx(0.04, rel=0.1)


def test_demo_sized_cells_get_about_noise_cv_with_the_default_drift_time():
    cells = [_cell(*shape) for shape in DEMO_CELLS]
    values = _repeats(NoiseParams(noise_cv=0.03, session_cv=0.02), cells, 200, 4, gap_s=0.3)
    within = np.sqrt(np.mean(_cv(values, axis=1) ** 2, axis=0))
    assert all(0.8 * 0.03 <= cv <= 1.1 * 0.03 for cv in within), within


def test_hiccups_come_at_their_rate_and_last_their_length():
    session = new_session(NoiseParams(hiccup_prob=0.1, hiccup_s=2.0), seed=4)
    duration = session.work(2000.0)
    assert 150 <= session.hiccups <= 250  # Poisson(200): +-7 sd
    assert duration == pytest.approx(2000.0 + 2.0 * session.hiccups)


def test_without_a_seed_every_session_differs():
    params = NoiseParams(session_cv=0.02)
    offsets = {new_session(params).offset for _ in range(5)}
    assert len(offsets) == 5
    assert new_session(params, 7).offset == new_session(params, 7).offset


def _live_throughputs(repeats: int, *args: str) -> tuple[list[float], str]:
    lengths = [(64, 256)] * 16
    with running_sim(*args, spec_tokens=3, speed=2) as sim:
        asyncio.run(run_closed_loop(sim.url, [(16, 16)] * 2, 2))
        values = [asyncio.run(run_closed_loop(sim.url, lengths, 8)).total_throughput
                  for _ in range(repeats)]
        return values, sim.log_text()


def test_live_cv_across_repeats_matches_model_time():
    """Same flags, same distribution: the live CV over 20 back-to-back repeats of a small cell
    is a plausible draw from model time's distribution of that CV (2000 sessions)."""
    flags = ("--noise-cv", "0.2", "--noise-time-s", "0.5")
    live, log = _live_throughputs(20, *flags)
    assert re.search(r"Simulated noise \(fresh entropy\): noise_cv=0.2", log)
    cell = simulate_closed_loop(ModelConfig(spec_tokens=3), [(64, 256)] * 16, 8)
    params = NoiseParams(noise_cv=0.2, drift_time_s=0.5)
    # back to back: the client's turnaround between repeats is a few ms of wall time
    model = _cv(_repeats(params, [cell], 2000, 20, gap_s=0.02)[:, :, 0], axis=1)
    low, high = np.quantile(model, [0.001, 0.999])  # about 0.5 and 1.6 times the typical CV
    live_cv = float(_cv(np.array(live)))
    assert low <= live_cv <= high, (live_cv, low, high)


def test_live_without_noise_flags_has_no_noise():
    with running_sim("--seed", "3") as sim:
        assert "Simulated noise" not in sim.log_text()


def test_session_noise_is_a_plain_object_of_its_params():
    session = SessionNoise(replace(NoiseParams(), noise_cv=0.1), np.random.default_rng(0))
    before = session.multiplier()
    session.idle(1000.0)
    assert session.multiplier() != before and session.clock == 1000.0


def _offset_logged(log: str) -> float:
    match = re.search(r"this start: step cost x([0-9.]+)", log)
    assert match, log[-2000:]
    return float(match.group(1))


def test_each_start_draws_its_own_offset_unless_seeded():
    flags = ("--session-cv", "0.05")
    offsets = []
    for _ in range(2):
        with running_sim(*flags) as sim:
            offsets.append(_offset_logged(sim.log_text()))
    assert offsets[0] != offsets[1]
    with running_sim(*flags, "--noise-seed", "7") as sim:
        log = sim.log_text()
    assert "Simulated noise (seed 7)" in log
    # the live server's session is the model-time API's session of the same seed
    assert _offset_logged(log) == round(new_session(NoiseParams(session_cv=0.05), 7).offset, 4)


@pytest.mark.parametrize(("flags", "message"), [
    (("--noise-cv", "-0.1"), "--noise-cv must be >= 0"),
    (("--session-cv", "2"), "fractions"),
    (("--hiccup-prob", "0.1"), "go together"),
    (("--hiccup-s", "3"), "go together"),
    (("--noise-cv", "0.03", "--noise-time-s", "0"), "--noise-time-s must be > 0"),
])
def test_bad_noise_flags_are_one_line_and_exit_2(flags, message):
    line = refusal_line(*flags)
    assert message in line, line


def test_measure_over_acceptance_seeds_adds_their_variation():
    seeds = [_cell(512, 256, 1, 8, seed=s) for s in range(4)]
    session = new_session(NoiseParams(), seed=1)
    seen = {measure(seeds, session).total_throughput for _ in range(40)}
    assert seen == {cell.total_throughput for cell in seeds}
