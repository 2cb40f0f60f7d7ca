"""Rounds on several nodes (issue 15 item 3, docs/statistics.md "Rounds on several nodes"): the
node is the block, so a round's arms are paired only when they ran on one node; the node check
flags round effects that differ between nodes; the report says so. Pure functions on
measurement lists built in code."""

from __future__ import annotations

import json
import math

import pytest

from dspark_tui.analysis.analysis import analyse
from dspark_tui.analysis.verdicts import Settings, analyse_measurements
from dspark_tui.report.certainty import how_sure, node_warnings
from dspark_tui.report.words import Texts
from dspark_tui.results import RunStore, load_run
from tests.report.builders import manifest
from tests.report.node_builders import GOLDEN, golden, grid_run, verdict_json

ARMS = ["a", "b"]


def alternating(arm: str, rnd: int, cell: tuple[str, int]) -> str:
    """parallel = 2: odd rounds on node n1, even rounds on n2, both arms of a round on its node."""
    return "n1" if rnd % 2 else "n2"


def test_runs_without_nodes_give_exactly_the_verdicts_of_before():
    """The golden was written by the code before measurements carried nodes; every key it has
    must come out the same, the new keys say one node and nothing unpaired."""
    before = json.loads(GOLDEN.read_text(encoding="utf-8"))
    now = json.loads(json.dumps(golden()))
    for case, parts in before.items():
        for part, rows in parts.items():
            assert len(now[case][part]) == len(rows), (case, part)
            for old, new in zip(rows, now[case][part], strict=True):
                assert {key: new[key] for key in old} == old, (case, part)
        for noise in now[case]["noise"]:
            assert (noise["nodes"], noise["unpaired_rounds"], noise["node_check"]) == (1, 0, None)


def test_one_named_node_is_the_same_as_no_node():
    plain = grid_run(3, seed=1)
    named = grid_run(3, seed=1, node_of=lambda arm, rnd, cell: "n1")
    assert verdict_json(analyse_measurements(named, ARMS, Settings(rounds=3))) == \
        verdict_json(analyse_measurements(plain, ARMS, Settings(rounds=3)))


def test_a_round_whose_arms_ran_on_different_nodes_is_not_paired():
    def restarted(arm, rnd, cell):  # round 3's b session came back on another node
        return "n9" if (rnd, arm) == (3, "b") else alternating(arm, rnd, cell)

    data = grid_run(4, seed=3, node_of=restarted)
    verdicts = analyse_measurements(data, ARMS, Settings(rounds=4))
    assert {(p.n, p.unpaired_rounds) for p in verdicts.pairs} == {(3, 1)}
    (noise,) = verdicts.noise
    assert (noise.rounds, noise.unpaired_rounds, noise.unpaired_cells, noise.nodes) == (3, 1, 5, 2)
    assert verdicts.unpaired_rounds == 1 and verdicts.nodes == ["n1", "n2", "n9"]
    # Exactly the verdicts of the same run without round 3.
    without = analyse_measurements([m for m in data if m.round != 3], ARMS, Settings(rounds=4))
    for got, expected in zip(verdicts.pairs, without.pairs, strict=True):
        assert (got.ratio, got.ci_low, got.ci_high, got.verdict) == \
            pytest.approx((expected.ratio, expected.ci_low, expected.ci_high, expected.verdict))
    data_json = verdicts.to_json()
    assert data_json["unpaired_rounds"] == 1 and data_json["pairs"][0]["unpaired_rounds"] == 1


def test_a_session_moved_mid_round_leaves_only_its_later_cells_unpaired():
    def crashed(arm, rnd, cell):  # b crashed after chat c=8 in round 2 and came back on n9
        late = cell in (("chat", 64), ("long", 1), ("long", 32))
        return "n9" if (rnd, arm) == (2, "b") and late else alternating(arm, rnd, cell)

    verdicts = analyse_measurements(grid_run(4, seed=3, node_of=crashed), ARMS, Settings(rounds=4))
    assert {p.key: p.n for p in verdicts.pairs} == {("chat", 1): 4, ("chat", 8): 4, ("chat", 64): 3,
                                                    ("long", 1): 3, ("long", 32): 3}
    assert (verdicts.noise[0].unpaired_rounds, verdicts.noise[0].unpaired_cells) == (1, 3)


def test_arms_always_on_different_nodes_are_never_compared():
    data = grid_run(3, seed=2, node_of=lambda arm, rnd, cell: f"node-{arm}")
    verdicts = analyse_measurements(data, ARMS, Settings(rounds=3))
    assert verdicts.pairs == [] and verdicts.unpaired_rounds == 3


def test_a_node_main_effect_cancels_in_the_paired_ratio():
    """Node n2 is 30 % faster for both arms: ratio, interval and verdict are as without it."""
    flat = analyse_measurements(grid_run(6, seed=8, node_of=alternating), ARMS, Settings(rounds=6))
    fast = analyse_measurements(grid_run(6, seed=8, node_of=alternating, node_speed={"n2": 1.3}),
                                ARMS, Settings(rounds=6))
    for a, b in zip(flat.pairs, fast.pairs, strict=True):
        assert (b.ratio, b.ci_low, b.ci_high) == pytest.approx((a.ratio, a.ci_low, a.ci_high), rel=1e-9)
        assert b.verdict == a.verdict
    assert fast.noise[0].node_check.p == pytest.approx(flat.noise[0].node_check.p, rel=1e-6)


def flag_rate(seeds: int, rounds: int = 8, **run: object) -> float:
    flags = 0
    for seed in range(seeds):
        data = grid_run(rounds, seed=1000 + seed, node_of=alternating, true={}, **run)
        check = analyse_measurements(data, ARMS, Settings(rounds=rounds)).noise[0].node_check
        assert check is not None and (check.df_between, check.df_within) == (1, rounds - 2)
        flags += check.p < 0.05
    return flags / seeds


def test_the_node_check_flags_a_to_a_noise_at_its_nominal_rate():
    """A-vs-A over 8 rounds on two nodes (4 each), node n2 30 % faster for both arms: no node x
    arm interaction, so the F test should flag about 5 % of 200 seeds. Tolerance, fixed before
    looking: the central 99.9 % binomial interval of Binomial(200, 0.05), 2 to 21 flags."""
    rate = flag_rate(200, node_speed={"n2": 1.3})
    assert 2 / 200 <= rate <= 21 / 200, rate


def test_the_node_check_flags_a_strong_node_by_arm_interaction():
    """b is 6 % faster than a on node n2 only (about four paired session sds): fixed before
    looking, at least 90 % of 100 seeds flagged."""
    assert flag_rate(100, interaction={"n2": 0.06}) >= 0.90


def test_the_node_check_needs_two_nodes_with_two_rounds_each():
    def own_node(arm, rnd, cell):  # every round on its own node: the node is in the session term
        return f"n{rnd}"

    verdicts = analyse_measurements(grid_run(4, seed=1, node_of=own_node), ARMS, Settings(rounds=4))
    assert verdicts.noise[0].node_check is None and verdicts.noise[0].nodes == 4


def loaded(tmp_path, data, rounds: int):
    m = manifest({"a": 3, "b": 5}, {"chat": (512, 256, [1, 8, 64]), "long": (4096, 512, [1, 32])})
    m.plan["bench"].update({"rounds": rounds, "adaptive_rounds": 0})
    RunStore(tmp_path).write_manifest(m)
    run = load_run(tmp_path)
    run.measurements = data
    run.cells = {c.key: c for c in data}
    return run


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_how_sure_line_says_nodes_unpaired_rounds_and_the_node_warning(tmp_path, lang):
    def restarted(arm, rnd, cell):
        return "n9" if (rnd, arm) == (7, "b") else alternating(arm, rnd, cell)

    data = grid_run(8, seed=4, node_of=restarted, interaction={"n2": 0.08})
    analysis = analyse(loaded(tmp_path, data, rounds=8))
    t = Texts(lang)
    line = how_sure(analysis, t)
    (warning,) = node_warnings(analysis, t)
    check = analysis.verdicts.noise[0].node_check
    assert (check.nodes, check.rounds) == (2, 7) and check.p < 0.05
    p = "< 0.001" if check.p < 0.001 else f"= {check.p:.3f}"
    spread = f"{math.expm1(check.spread):.1%}"
    assert 0.05 < check.spread < 0.11  # the 8 % interaction planted on n2, in its noise
    if lang == "en":
        assert line.endswith(" Rounds ran on 3 nodes, both arms of each round on one node and "
                             "paired within it (rounds left unpaired, arms on different nodes: 1); "
                             "the intervals are for these 3 nodes.")
        assert warning == ("- Caveat: the ratio `b` / `a` differs between nodes (their means by "
                           f"up to {spread}; F test of the round effects on 2 nodes, p {p}); a "
                           "node may be unlike the others. "
                           "The verdicts stand, for these nodes together.")
    else:
        assert line.endswith("各轮分布在 3 个节点上，每轮的各配置都在同一节点上测量、在节点内配对"
                             "（配置不在同一节点、未配对的轮次：1）；区间针对的是这 3 个节点。")
        assert warning == (f"- 注意：`b` / `a` 的比值在节点之间不同（节点均值最多相差 {spread}；"
                           "2 个节点的轮次效应 F 检验，"
                           f"p {p}），可能有节点与其他节点不一样；判定不变，只对这些节点整体成立。")
    from dspark_tui.report.markdown import render_report

    report = render_report(analysis.run, lang=lang)
    assert line in report and warning in report
    assert report.index(line) < report.index(warning)


def test_runs_on_one_machine_keep_the_how_sure_line_of_before(tmp_path):
    analysis = analyse(loaded(tmp_path, grid_run(3, seed=1), rounds=3))
    t = Texts("en")
    line = how_sure(analysis, t)
    verdicts = analysis.winners["verdict"].tolist()
    assert line == t("summary_sure", wins=verdicts.count("wins"), ties=verdicts.count("tie"),
                     unsure=verdicts.count("unsure"), total=5, band="2", below=t("summary_below"),
                     level=f"{analysis.verdicts.settings.level * 100:.1f}", rounds=3)
    assert node_warnings(analysis, t) == []
    assert json.loads(json.dumps(analysis.verdicts.to_json()))["nodes"] == [None]



@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_report_header_names_each_node_and_the_rounds_it_served(tmp_path, lang):
    from dspark_tui.report.markdown import render_report

    def restarted(arm, rnd, cell):
        return "n9" if (rnd, arm) == (3, "b") else alternating(arm, rnd, cell)

    report = render_report(loaded(tmp_path, grid_run(4, seed=3, node_of=restarted), rounds=4),
                           lang=lang)
    expected = {"en": "- Nodes: `n1` (rounds 1, 3), `n2` (rounds 2, 4), `n9` (rounds 3)",
                "zh": "- 节点：`n1`（第 1, 3 轮）、`n2`（第 2, 4 轮）、`n9`（第 3 轮）"}[lang]
    assert expected in report.splitlines()
    one_box = render_report(loaded(tmp_path / "one", grid_run(2, seed=1), rounds=2), lang=lang)
    assert "Nodes:" not in one_box and "节点：" not in one_box


def test_an_arm_without_a_node_is_paired_by_round_as_before(tmp_path):
    """A url arm (its server something else runs: no node) against a Slurm arm (node07): the
    two are on different machines in every round by nature, compared by round as before nodes
    existed — not left unpaired, which gave such a plan no verdict at all — and the how-sure
    line does not claim rounds on several nodes."""
    plain = grid_run(4, seed=2)
    mixed = grid_run(4, seed=2, node_of=lambda arm, rnd, cell: None if arm == "a" else "node07")
    settings = Settings(rounds=4)
    assert verdict_json(analyse_measurements(mixed, ARMS, settings))["pairs"] == \
        verdict_json(analyse_measurements(plain, ARMS, settings))["pairs"]
    verdicts = analyse_measurements(mixed, ARMS, settings)
    assert verdicts.unpaired_rounds == 0 and not verdicts.several_nodes
    analysis = analyse(loaded(tmp_path, mixed, rounds=4))
    assert "Rounds ran on" not in how_sure(analysis, Texts("en"))


def test_the_node_check_flags_pairs_by_holms_rule_across_the_pairs():
    """Three pairs tested together at 5 %: p = 0.004 (< 0.05/3), 0.02 (< 0.05/2) and 0.04
    (< 0.05/1) are all flagged; with 0.03 the smallest, none is (0.03 >= 0.05/3): the step-down
    stops at its first failure."""
    from types import SimpleNamespace

    from dspark_tui.analysis.verdicts import PairNoise, RunVerdicts
    from dspark_tui.stats.paired import NodeCheck

    def verdicts(*ps: float) -> SimpleNamespace:
        noise = [PairNoise(a, b, 0.01, 0.01, 6.0, 8, 3, None, nodes=2,
                           node_check=NodeCheck(9.0, 1, 6, p, 2, 8, 0.05))
                 for (a, b), p in zip([("a", "b"), ("a", "c"), ("b", "c")], ps, strict=True)]
        return SimpleNamespace(verdicts=RunVerdicts(Settings(), ["a", "b", "c"], noise=noise))

    def flagged(*ps: float) -> list[str]:
        lines = node_warnings(verdicts(*ps), Texts("en"))  # type: ignore[arg-type]
        return [line.split("`")[3] + "/" + line.split("`")[1] for line in lines]

    assert flagged(0.02, 0.004, 0.04) == ["a/b", "a/c", "b/c"]  # in the pairs' order
    assert flagged(0.03, 0.2, 0.04) == []
    assert flagged(0.2, 0.01, 0.3) == ["a/c"]
