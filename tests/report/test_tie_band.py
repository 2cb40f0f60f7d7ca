"""One tie band (model/statistics.TieBand) from the run's settings, in every sentence and rule."""

from __future__ import annotations

import math
import re

import pytest

from dspark_tui.analysis.analysis import analyse
from dspark_tui.model.statistics import TieBand
from dspark_tui.report.markdown import render_report
from tests.report.test_verdicts import loaded


def test_a_five_percent_band_is_the_band_of_every_sentence(tmp_path):
    """With tie_band = 0.05 the how-sure line and the findings name the same band; before, the
    findings and recommendations said a fixed 2 % (frames.TIE_MARGIN) beside "±5%"."""
    text = render_report(loaded(tmp_path, rounds=3, tie_band=0.05), lang="en")
    assert "2 ties (the interval inside ±5%)" in text
    within = re.findall(r"cells within (\d+(?:\.\d+)?)%", text)
    within += re.findall(r"concurrencies within (\d+(?:\.\d+)?)%", text)
    assert within and set(within) == {"5"}, within
    assert "about even, 1/2 cells within 5%" in text


def test_the_default_band_keeps_the_two_percent_wording(tmp_path):
    text = render_report(loaded(tmp_path, rounds=3), lang="en")
    assert "(the interval inside ±2%)" in text
    assert set(re.findall(r"cells within (\d+)%", text)) == {"2"}


def test_a_lead_inside_the_band_reads_about_even(tmp_path):
    """long c=32 leads by 2.9 %: a lead with a 2 % band, about even with a 5 % one."""
    narrow = analyse(loaded(tmp_path / "a", rounds=3))
    wide = analyse(loaded(tmp_path / "b", rounds=3, tie_band=0.05))
    assert narrow.band == TieBand(0.02) and wide.band == TieBand(0.05)
    text = render_report(loaded(tmp_path / "c", rounds=3, tie_band=0.05), lang="en")
    assert "st=5 +20.2% at c=1, about even at c=64" in text


@pytest.mark.parametrize("fraction", [0.02, 0.05, 0.1])
def test_the_band_s_conventions_agree(fraction: float):
    band = TieBand(fraction)
    assert band.log_edge == math.log1p(fraction)
    assert band.floor == 1.0 - fraction and math.isclose(band.log_floor, math.log(1.0 - fraction))
    assert band.holds(fraction * 0.99) and not band.holds(fraction)
    assert band.within_log(band.log_edge * 0.99) and not band.within_log(-band.log_edge)
    assert band.percent == f"{fraction * 100:g}"
