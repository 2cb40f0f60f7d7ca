"""Every summary and findings sentence of the demo, K-sweep, categories and verify reports,
read back and checked against analysis.json (issue 22): band counts and leans, comparison
counts and sessions, margins and intervals, the schedule's unsure cells, the fixed K, the
verification's cells, outliers' neighbours, the lists and the recommendation rows.

The runs are real: the shipped simulator plans, run once on this box and kept as run.json and
cells (tests/data/demo_runs); the reports are rendered from them by the code under test."""

from __future__ import annotations

import json
import math
import re

import pytest

from dspark_tui.report.markdown import render_report
from dspark_tui.report.outputs import analysis_json
from dspark_tui.results import load_run
from tests.conftest import REPO

RUNS = REPO / "tests" / "data" / "demo_runs"
NAMES = {"demo": "demo_20261202-164649", "k_sweep": "demo_k_sweep_20261202-163434",
         "categories": "demo_categories_20261202-164218",
         "verify": "demo_k_sweep_verify_20261202-165744"}
BANDS = {"single": (1, 1), "low": (2, 32), "mid": (33, 64), "high": (65, math.inf)}
PCT = r"(-?\d+\.\d+)%"


class Facts:
    """analysis.json of one run, asked the questions the sentences answer."""

    def __init__(self, document: dict) -> None:
        self.doc = document
        self.arms: list[str] = document["arms"]
        self.pairs = document["pairs"]
        self.means = {(c["scenario"], c["concurrency"], c["arm"]): c["mean"] for c in document["cells"]}

    def cells(self) -> list[tuple[str, int]]:
        return sorted({(p["scenario"], p["concurrency"]) for p in self.pairs})

    def same_k(self) -> list[tuple[str, int]]:
        """A --verify rerun's cells where the schedule runs the fixed K throughout (A-vs-A)."""
        found = (self.doc.get("verification") or {}).get("same_k_cells", [])
        return [(c["scenario"], c["concurrency"]) for c in found]

    def pair(self, scenario: str, c: int, x: str, y: str) -> dict:
        (found,) = [p for p in self.pairs if p["scenario"] == scenario and p["concurrency"] == c
                    and {p["a"], p["b"]} == {x, y}]
        return found

    def top_two(self, scenario: str, c: int) -> tuple[str, str]:
        ranked = sorted((a for a in self.arms if (scenario, c, a) in self.means),
                        key=lambda a: -self.means[(scenario, c, a)])
        return ranked[0], ranked[1]

    def comparison(self, scenario: str, c: int) -> dict:
        """The winner table's comparison of a cell: its two fastest arms by the means."""
        return self.pair(scenario, c, *self.top_two(scenario, c))

    @staticmethod
    def leader(pair: dict) -> tuple[str, float, float, float]:
        """(leader, margin, interval low, interval high) as the report states a pair."""
        if pair["ratio"] >= 1.0:
            return pair["b"], pair["ratio"] - 1, pair["ci_low"] - 1, pair["ci_high"] - 1
        return pair["a"], 1 / pair["ratio"] - 1, 1 / pair["ci_high"] - 1, 1 / pair["ci_low"] - 1


@pytest.fixture(scope="module", params=list(NAMES))
def report(request) -> tuple[str, str, Facts]:
    run = load_run(RUNS / NAMES[request.param])
    return request.param, render_report(run, lang="en"), Facts(json.loads(analysis_json(run)))


def _section(text: str, heading: str) -> str:
    if heading not in text:
        return ""
    return text.split(heading, 1)[1].split("\n---\n", 1)[0]


def _summary(text: str) -> list[str]:
    return [ln for ln in _section(text, "## Summary").splitlines() if ln.startswith("- ")]


def _in_band(band: str, c: int) -> bool:
    low, high = BANDS[band]
    return low <= c <= high


def _band_of_label(label: str) -> tuple[int, float]:
    """`c=1`, `c=4~16`, `c≥128` → the concurrency range it names."""
    if label.startswith("c≥"):
        return int(label[2:]), math.inf
    low, _, high = label[2:].partition("~")
    return int(low), float(high or low)


def test_the_how_sure_line_counts_the_comparisons_and_sessions(report):
    _, text, facts = report
    (line,) = [ln for ln in _summary(text) if ln.startswith("- How sure:")]
    m = re.search(r"of (\d+) comparisons, (\d+) are wins and (\d+) ties .*, (\d+) unsure.* over "
                  r"([\d–]+) server sessions per arm", line)
    assert m, line
    # A --verify rerun's A-vs-A cells are no comparison of a choice: a clause counts them apart.
    same_k = facts.same_k()
    verdicts = [facts.comparison(s, c)["verdict"] for s, c in facts.cells() if (s, c) not in same_k]
    assert int(m[1]) == len(verdicts)
    assert (int(m[2]), int(m[3]), int(m[4])) == (verdicts.count("wins"), verdicts.count("tie"),
                                                 verdicts.count("unsure"))
    apart = re.search(r"Counted apart: (\d+) A-vs-A check\(s\) .*\), (\d+) shown different, "
                      r"(\d+) tie\(s\), (\d+) unsure", line)
    assert bool(apart) == bool(same_k), line
    if apart:
        aside = [facts.comparison(s, c)["verdict"] for s, c in same_k]
        assert [int(x) for x in apart.groups()] == [len(aside), aside.count("wins"),
                                                    aside.count("tie"), aside.count("unsure")]
    sessions = sorted({p["n"] for p in facts.pairs if p["verdict"] != "single"})
    stated = [int(x) for x in m[5].split("–")]
    assert stated == ([sessions[0]] if len(sessions) == 1 else [sessions[0], sessions[-1]]), line


def test_each_band_line_counts_the_bands_cells_and_their_lean(report):
    name, text, facts = report
    lines = [ln for ln in _summary(text) if re.match(r"- \*\*c[=≥]", ln)]
    if name in ("k_sweep", "categories"):
        assert not lines  # a K sweep answers with its schedule
        return
    assert lines
    same_k = facts.same_k()
    assert bool(same_k) == (name == "verify")  # the demo's c = 1 runs K=6 in both arms
    for line in lines:
        label = re.match(r"- \*\*(c[=≥][\d~]+)\*\*", line)[1]
        low, high = _band_of_label(label)
        apart = [(s, c) for s, c in same_k if low <= c <= high]
        named = re.findall(r"(\S+) c=(\d+) [+-]\d+\.\d%", line.split("A-vs-A", 1)[1]) \
            if "A-vs-A" in line else []
        assert [(s, int(c)) for s, c in named] == apart, line  # counted apart, each named
        cells = [(s, c) for s, c in facts.cells() if low <= c <= high and (s, c) not in apart]
        if not cells:
            assert "same K as the fixed arm" in line, line
            continue
        pairs = [facts.comparison(s, c) for s, c in cells]
        decided = [p for p in pairs if p["verdict"] in ("wins", "tie")]
        unsure = [p for p in pairs if p["verdict"] == "unsure"]
        if "not decided" in line:
            m = re.search(r"(\d+) of (\d+) cells decided", line)
            assert m and (int(m[1]), int(m[2])) == (len(decided), len(cells)), line
            assert len(decided) * 2 <= len(cells) or "wins" not in line
            lean: dict[str, list[float]] = {}
            for p in unsure:
                leader, margin, _, _ = Facts.leader(p)
                lean.setdefault(leader, []).append(margin)
            for arm, margins in lean.items():
                m = re.search(rf"to `{re.escape(arm)}` in (\d+) \(by ([\d.]+)%(?:–([\d.]+)%)?\)", line)
                assert m and int(m[1]) == len(margins), (line, arm)
                assert float(m[2]) == pytest.approx(min(margins) * 100, abs=0.051)
                assert float(m[3] or m[2]) == pytest.approx(max(margins) * 100, abs=0.051)
        else:
            m = re.search(r"`([^`]+)` \(wins (\d+) of (\d+) decided cells", line)
            assert m, line
            wins = [p for p in decided if p["verdict"] == "wins" and p["winner"] == m[1]]
            assert (int(m[2]), int(m[3])) == (len(wins), len(decided))
            assert len(wins) * 2 > len(cells), line  # an arm only when it wins most of the band


def test_the_unsure_list_states_each_cells_margin_and_interval(report):
    _, text, facts = report
    section = _section(text, "## Unsure cells")
    items = [ln for ln in section.splitlines() if ln.startswith("- `")]
    same_k = facts.same_k()
    unsure = [(s, c) for s, c in facts.cells() if facts.comparison(s, c)["verdict"] == "unsure"]
    assert len(items) == len([cell for cell in unsure if cell not in same_k])
    aside = [cell for cell in unsure if cell in same_k]  # one line after the items, no rounds asked
    (line,) = [ln for ln in section.splitlines() if "A-vs-A checks" in ln] if aside else [""]
    assert re.findall(r"(\S+) c=(\d+) [+-]\d+\.\d%", line) == [(s, str(c)) for s, c in aside], line
    for item in items:
        m = re.match(rf"- `([^`]+)` c=(\d+): `([^`]+)` leads by {PCT} \(interval "
                     rf"([+-]\d+\.\d)% … ([+-]\d+\.\d)%\); (.*)$", item)
        assert m, item
        pair = facts.comparison(m[1], int(m[2]))
        leader, margin, low, high = Facts.leader(pair)
        assert m[3] == leader
        assert float(m[4]) == pytest.approx(margin * 100, abs=0.051)
        assert float(m[5]) == pytest.approx(low * 100, abs=0.051)
        assert float(m[6]) == pytest.approx(high * 100, abs=0.051)
        if "near the band's edge" in m[7]:
            band = facts.doc["settings"]["tie_band"]
            assert abs(margin - band) <= band, item  # 11.1 % is not "near" a 2 % band
        if "more round(s)" in m[7]:
            assert pair["rounds_to_settle"] == int(re.search(r"about (\d+)", m[7])[1])


def test_the_schedule_line_names_its_unsure_cells(report):
    name, text, facts = report
    lines = [ln for ln in _summary(text) if ln.startswith(("- Not decided:", "- Decided:"))]
    if name not in ("k_sweep", "categories"):
        assert not lines
        return
    (line,) = lines
    m = re.search(r"(\d+) of (\d+) cells' choices are unsure \(([^)]*)\)", line)
    assert m, line
    assert int(m[2]) == len(facts.cells())
    named = m[3].split(", ")
    assert len(named) == int(m[1]) == len(set(named))
    for cell in named:
        scenario, c = cell.split(" c=")
        assert (scenario, int(c)) in facts.cells()


def test_the_fixed_k_is_never_shown_behind_another_k(report):
    """Issue 22: "best fixed K: K=2" with K=2 16.9 % behind K=3 at every concurrency."""
    name, text, facts = report
    lines = [ln for ln in _summary(text) if "fixed K" in ln and "K=" in ln]
    if name not in ("k_sweep", "categories"):
        return
    (line,) = lines
    k = re.search(r"(?:leader is |: )K=(\d+)", line)[1]
    arm = f"K={k}"
    for other in facts.arms:
        if other == arm:
            continue
        behind = [p for s, c in facts.cells() if (p := facts.pair(s, c, arm, other))["verdict"] == "wins"
                  and p["winner"] == other]
        assert len(behind) * 2 <= len(facts.cells()), (line, other, behind)
    if "no fixed K is shown best" in line:
        assert "leader is" in line


def test_the_verify_summary_says_whether_the_schedule_verified(report):
    name, text, facts = report
    first = _summary(text)[0]
    if name != "verify":
        assert "schedule of `" not in first
        return
    assert re.match(r"- \*\*(Verified|Not verified|Not confirmed|Refuted)", first), first
    beaten = re.search(r"K=(\d+) beats it at (.*)\.$", first)
    fixed = f"K={beaten[1]}" if beaten else "K=6"
    fixed_wins = [(s, c) for s, c in facts.cells()
                  if (p := facts.pair(s, c, "schedule", fixed))["verdict"] == "wins"
                  and p["winner"] != "schedule"]
    named = [] if beaten is None else [tuple(x.split(" c=")) for x in beaten[2].split(", ")]
    assert [(s, int(c)) for s, c in named] == fixed_wins


def test_findings_name_true_neighbours_and_counts_that_hold(report):
    _, text, facts = report
    findings = _section(text, "## Key findings")
    assert findings
    for m in re.finditer(r"`([^`]+) c=(\d+)`: .* while (.*?); ([\d.]+) \(ln ratio\)", findings):
        scenario, c = m[1], int(m[2])
        measured = sorted({cc for s, cc in facts.cells() if s == scenario})
        i = measured.index(c)
        neighbours = [int(x) for x in re.findall(r"c=(\d+) is", m[3])]
        assert neighbours == [measured[i - 1], measured[i + 1]], m[0]
    if "wins in every concurrency band" in findings:
        arm = re.search(r"`([^`]+)` wins in every concurrency band", findings)[1]
        for band in BANDS:
            pairs = [facts.comparison(s, c) for s, c in facts.cells() if _in_band(band, c)]
            if pairs:
                won = [p for p in pairs if p["verdict"] == "wins" and p["winner"] == arm]
                assert len(won) * 2 > len(pairs), band
    scenario_row = r"\| ([^|(]+?) (?:\([^)]*\) )?\| ([^|]+) \| wins (\d+)/(\d+) concurrencies"
    for m in re.finditer(scenario_row, findings):
        scenario = m[1].strip()
        total = [c for s, c in facts.cells() if s == scenario]
        assert int(m[3]) * 2 > len(total), m[0]  # a scenario's best wins most of its concurrencies


def test_lists_name_each_cell_once_and_recommendation_rows_never_disagree(report):
    _, text, facts = report
    for line in text.splitlines():
        if line.startswith(("1. Repeat", "2. Repeat", "3. Repeat", "4. Repeat")):
            cells = re.findall(r"`([^`]+)`", line)
            assert len(cells) == len(set(cells)), line
    advice = _section(text, "### Recommended setting")
    rows = [ln.split(" | ") for ln in advice.splitlines() if ln.startswith("| ") and "---" not in ln][1:]
    answers: dict[tuple[str, int], set[str]] = {}
    for row in rows:
        setting = row[1].strip("* ")
        if not setting.isdigit() and "=" not in setting:
            continue  # either / depends / not decided
        label = row[0]
        m = re.search(r"\((c[=≥ ][^)]*)\)", label)
        if m:
            text_range = m[1].replace(" ", "")
            if text_range.startswith("c≤"):
                low, high = 1, float(text_range[2:])
            else:
                low, high = _band_of_label(text_range.replace("=", "=", 1))
            cells = [(s, c) for s, c in facts.cells() if low <= c <= high]
        else:
            scenarios = re.split(r"[,、] ", label.split(": ", 1)[1].rstrip("| "))
            cells = [(s, c) for s, c in facts.cells() if s in scenarios]
        for cell in cells:
            answers.setdefault(cell, set()).add(setting)
    assert all(len(v) == 1 for v in answers.values()), answers


def test_the_margin_note_states_the_margins_definition_where_the_means_differ(report):
    _, text, facts = report
    table = _section(text, "## Throughput winners")
    differs = False
    for s, c in facts.cells():
        pair = facts.comparison(s, c)
        leader, margin, _, _ = Facts.leader(pair)
        top, second = facts.top_two(s, c)
        by_means = facts.means[(s, c, top)] / facts.means[(s, c, second)] - 1
        if leader != top or f"{margin:.2%}" != f"{by_means:.2%}":
            differs = True
    assert ("Margin: the geometric mean over rounds of the paired per-round ratio" in table) == differs
