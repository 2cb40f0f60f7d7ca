"""The server-kind seam (model/kinds/) and the upstream-vLLM arm form, without processes: the
vllm kind's flags and JSON, `[arms.speculative]` tables through `"{speculative}"`, what run.json
and the K analysis see of them, the schedule's serve command, and the one-line refusals."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from dspark_tui.analysis.layout import compared_values, manifest_k_values
from dspark_tui.analysis.schedule import (
    Schedule,
    existing_speculative_config,
    max_num_seqs_of,
    method_for,
    serve_command,
    speculative_config,
    without_port_flag,
)
from dspark_tui.engine.run.verify import Recommendation, verification_plan
from dspark_tui.engine.servers.scraper import parse_metrics
from dspark_tui.model import Plan, PlanError, parse_plan
from dspark_tui.model.kinds import DEFAULT_KIND, KINDS, server_kind
from dspark_tui.model.kinds.vllm import VLLM_METRICS, VllmKind, vllm_default_max_num_seqs
from dspark_tui.model.speculation import differs_beyond_speculation
from dspark_tui.results.manifest import manifest_for_plan

COMMAND = '["vllm", "serve", "{model}", "--port", "{port}", "--max-num-seqs", "64", "{speculative}"]'


def plan_text(arms: str, command: str = COMMAND, server: str = "") -> str:
    return f"""name = "upstream"
model = "tiny"

[server]
{server}command = {command}

{arms}
[[scenarios]]
name = "chat"
input_len = 64
output_len = 32
concurrencies = [1, 8]
"""


NGRAM_ARMS = """[[arms]]
name = "K=0"

[[arms]]
name = "ngram K=2"
[arms.speculative]
method = "ngram"
k = 2
prompt_lookup_max = 4
prompt_lookup_min = 2

[[arms]]
name = "ngram K=4"
speculative = { method = "ngram", num_speculative_tokens = 4, prompt_lookup_max = 4, prompt_lookup_min = 2 }
"""


def spec_json(argv: list[str]) -> dict[str, object] | None:
    """The JSON after --speculative-config, None when the flag is absent (asserted once)."""
    if "--speculative-config" not in argv:
        return None
    assert argv.count("--speculative-config") == 1
    return json.loads(argv[argv.index("--speculative-config") + 1])


def test_the_vllm_kind_is_the_default_and_says_its_flags():
    kind = server_kind(DEFAULT_KIND)
    assert isinstance(kind, VllmKind) and list(KINDS) == ["vllm"]
    assert kind.k_flags == ("--spec-tokens", "--num-speculative-tokens")
    assert kind.spec_config_flag == "--speculative-config"
    assert kind.k_keys == ("num_speculative_tokens", "num_speculative_tokens_per_batch_size")
    assert (kind.batch_limit_flag, kind.default_batch_limit) == ("--max-num-seqs", 256)
    assert kind.readiness.health_path == "/health"
    assert kind.readiness.completion_body("m") == {"model": "m", "prompt": "Hello", "max_tokens": 1,
                                                   "temperature": 0.0}
    # vLLM 0.32's own default, measured: 128 on CPU, 256 under 70 GiB, 1024 above.
    assert [vllm_default_max_num_seqs(g) for g in (None, 24, 80)] == [128, 256, 1024]
    with pytest.raises(KeyError, match="unknown server kind 'sglang' \\(known: vllm\\)"):
        server_kind("sglang")


def test_the_vllm_kind_spells_a_config_as_one_json_flag_and_k0_as_nothing():
    kind = VllmKind()
    config = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}
    assert kind.speculative_args(config) == [
        "--speculative-config", '{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":4}']
    # vLLM refuses "num_speculative_tokens": 0 and --spec-tokens 0: K = 0 is no flag at all.
    assert kind.speculative_args({"method": "ngram", "num_speculative_tokens": 0}) == []
    assert kind.speculative_args(None) == []
    scheduled = kind.schedule_config([[1, 8, 4], [9, 256, 0]], "mtp", {"method": "ngram",
                                     "num_speculative_tokens": 9, "prompt_lookup_max": 4})
    assert scheduled == {"method": "ngram", "prompt_lookup_max": 4, "num_speculative_tokens": 4,
                         "num_speculative_tokens_per_batch_size": [[1, 8, 4], [9, 256, 0]]}
    assert kind.schedule_config([[1, 256, 0]], "mtp") is None


def test_a_table_arm_becomes_speculative_config_and_an_arm_without_one_no_flag():
    plan = parse_plan(plan_text(NGRAM_ARMS), "plan.toml")
    argvs = {arm.name: plan.server_argv(arm) for arm in plan.arms}
    assert argvs["K=0"] == ["vllm", "serve", "tiny", "--port", "8000", "--max-num-seqs", "64"]
    assert spec_json(argvs["ngram K=2"]) == {"method": "ngram", "num_speculative_tokens": 2,
                                             "prompt_lookup_max": 4, "prompt_lookup_min": 2}
    assert argvs["ngram K=4"][:7] == argvs["K=0"]
    assert spec_json(argvs["ngram K=4"])["num_speculative_tokens"] == 4  # type: ignore[index]
    # A table with K = 0 is no speculation either.
    zero = parse_plan(plan_text('[[arms]]\nname = "z"\nspeculative = { method = "ngram", k = 0 }\n'))
    assert zero.server_argv(zero.arms[0]) == argvs["K=0"]


def test_run_json_and_the_k_analysis_see_the_table_k():
    plan = parse_plan(plan_text(NGRAM_ARMS))
    assert plan.compared_vars() == ["num_speculative_tokens"]
    manifest = manifest_for_plan(plan)
    assert [a.vars for a in manifest.arms] == [
        {"num_speculative_tokens": 0},
        {"num_speculative_tokens": 2, "speculative.method": "ngram",
         "speculative.prompt_lookup_max": 4, "speculative.prompt_lookup_min": 2},
        {"num_speculative_tokens": 4, "speculative.method": "ngram",
         "speculative.prompt_lookup_max": 4, "speculative.prompt_lookup_min": 2},
    ]
    assert compared_values(manifest, manifest.arm_names())[0] == "num_speculative_tokens"
    assert manifest_k_values(manifest) == {"K=0": 0, "ngram K=2": 2, "ngram K=4": 4}
    # Arms that differ in their method's keys too are no K sweep.
    other = plan_text(NGRAM_ARMS.replace("prompt_lookup_max = 4, ", "prompt_lookup_max = 5, "))
    assert parse_plan(other).compared_vars() == ["num_speculative_tokens",
                                                 "speculative.prompt_lookup_max"]
    assert manifest_k_values(manifest_for_plan(parse_plan(other))) is None


def test_the_shipped_k_sweep_is_a_sweep_of_tables_with_its_schedule_in_place():
    from dspark_tui.plans import resolve_plan

    plan, _ = resolve_plan("dspark-k-sweep")
    assert plan.uses_speculative_tables()
    assert manifest_k_values(manifest_for_plan(plan)) == {f"K={k}": k for k in range(8)}
    assert [spec_json(plan.server_argv(arm)) for arm in plan.arms[:2]] == [
        None, {"method": "dspark", "num_speculative_tokens": 1}]
    schedule = Schedule([[1, 16, 5], [17, 256, 2]], 256, "plan", "running_batch", 256)
    config = speculative_config(schedule, *method_for(plan)[:1], existing_speculative_config(plan))
    command = serve_command(plan, "num_speculative_tokens", config)
    assert command[-2:] == ["--speculative-config", json.dumps(config, separators=(",", ":"))]
    assert config is not None and config["method"] == "dspark"


def test_a_url_arm_of_a_table_plan_claims_no_k():
    arms = NGRAM_ARMS + '[[arms]]\nname = "theirs"\nurl = "http://10.0.0.5:8000"\n'
    plan = parse_plan(plan_text(arms))
    assert plan.arm_settings(plan.arm("theirs")) == {}
    assert manifest_k_values(manifest_for_plan(plan)) is None


def test_a_plan_without_the_new_keys_snapshots_as_before():
    text = plan_text('[[arms]]\nname = "st=3"\nvars = { k = 3 }\n',
                     command='["vllm", "serve", "{model}", "--spec-tokens", "{k}"]')
    snapshot = parse_plan(text).model_dump(mode="json")
    assert "kind" not in snapshot["server"] and "speculative" not in snapshot["arms"][0]
    tables = parse_plan(plan_text(NGRAM_ARMS))
    again = Plan.model_validate(tables.model_dump(mode="json"))
    assert [again.server_argv(a) for a in again.arms] == [tables.server_argv(a) for a in tables.arms]
    assert "speculative" not in tables.model_dump(mode="json")["arms"][0]


@pytest.mark.parametrize("text, key, message", [
    (plan_text(NGRAM_ARMS, server='kind = "sglang"\n'), "server.kind",
     "unknown server kind 'sglang' (known: vllm)"),
    (plan_text(NGRAM_ARMS, command='["vllm", "serve", "{model}"]'), "",
     'arms["ngram K=2"].speculative: server.command has no "{speculative}" argument'),
    (plan_text(NGRAM_ARMS, command='["vllm", "serve", "--x={speculative}"]'), "",
     "server.command[2]: {speculative} must be an argument of its own"),
    (plan_text(NGRAM_ARMS.replace("k = 2\n", "k = 2\nnum_speculative_tokens = 2\n")),
     'arms["ngram K=2"].speculative', "sets K twice (num_speculative_tokens and k)"),
    (plan_text(NGRAM_ARMS.replace("k = 2\n", "")), 'arms["ngram K=2"].speculative',
     "needs num_speculative_tokens (or k)"),
    (plan_text(NGRAM_ARMS.replace("k = 2\n", "k = -1\n")), 'arms["ngram K=2"].speculative.k',
     "greater than or equal to 0"),
    (plan_text('[[arms]]\nname = "a"\nvars = { speculative = 1 }\n'), "",
     'arms["a"].vars.speculative: the name is the speculative table\'s placeholder'),
], ids=["unknown-kind", "no-placeholder", "placeholder-inside", "k-twice", "no-k", "negative-k",
        "var-named-speculative"])
def test_a_bad_kind_or_table_is_one_line_naming_file_and_key(text: str, key: str, message: str):
    with pytest.raises(PlanError) as caught:
        parse_plan(text, "plan.toml")
    said = str(caught.value)
    assert "\n" not in said and said.startswith("plan.toml:"), said
    assert message in said and (not key or f": {key}: " in said), said


def test_the_scraper_reads_the_names_its_dialect_gives():
    page = ("sglang:num_running_reqs 5\nvllm:num_requests_running 7\n"
            "sglang:spec_accept_tokens_total 30\n")
    other = replace(VLLM_METRICS, counters={"sglang:spec_accept_tokens_total": "accepted_tokens"},
                    gauges={"sglang:num_running_reqs": "running"}, kv_usage=())
    assert parse_metrics(page, 0.0).gauges == {"running": 7.0}
    read = parse_metrics(page, 0.0, dialect=other)
    assert read.gauges == {"running": 5.0} and read.counters == {"accepted_tokens": 30.0}


def test_the_schedule_export_puts_its_config_where_the_arms_put_theirs():
    plan = parse_plan(plan_text(NGRAM_ARMS))
    assert existing_speculative_config(plan) == {"method": "ngram", "prompt_lookup_max": 4,
                                                 "prompt_lookup_min": 2}
    assert method_for(plan) == ("ngram", "plan")
    assert max_num_seqs_of(plan) == (64, "plan")
    schedule = Schedule([[1, 8, 4], [9, 64, 2]], 64, "plan", "running_batch", 8)
    config = speculative_config(schedule, "ngram", existing_speculative_config(plan), plan.kind)
    command = serve_command(plan, "num_speculative_tokens", config)
    assert command[:7] == ["vllm", "serve", "tiny", "--port", "8000", "--max-num-seqs", "64"]
    assert spec_json(command) == {"method": "ngram", "prompt_lookup_max": 4, "prompt_lookup_min": 2,
                                  "num_speculative_tokens": 4,
                                  "num_speculative_tokens_per_batch_size": [[1, 8, 4], [9, 64, 2]]}
    assert serve_command(plan, "num_speculative_tokens", None) == command[:7]
    # Without --max-num-seqs in the command: the kind's default.
    bare = parse_plan(plan_text(NGRAM_ARMS, command='["vllm", "serve", "{model}", "{speculative}"]'))
    assert max_num_seqs_of(bare) == (256, "vllm-default")


def test_greedy_pairs_k0_with_a_drafter_but_not_two_methods():
    arms = NGRAM_ARMS + ('[[arms]]\nname = "draft K=2"\nspeculative = { method = "draft_model", '
                         'k = 2, model = "tiny-draft" }\n')
    plan = parse_plan(plan_text(arms))
    assert not differs_beyond_speculation(plan, "K=0", "ngram K=4")
    assert not differs_beyond_speculation(plan, "ngram K=2", "ngram K=4")
    assert not differs_beyond_speculation(plan, "K=0", "draft K=2")
    assert differs_beyond_speculation(plan, "ngram K=2", "draft K=2")


def test_verifying_a_table_sweep_keeps_its_form_and_a_fixed_k0_has_no_flag(tmp_path):
    plan = parse_plan(plan_text(NGRAM_ARMS))
    config = {"method": "ngram", "prompt_lookup_max": 4, "num_speculative_tokens": 4,
              "num_speculative_tokens_per_batch_size": [[1, 8, 4], [9, 64, 0]]}
    for fixed_k, fixed in ((0, None), (2, {"method": "ngram", "prompt_lookup_max": 4,
                                           "num_speculative_tokens": 2})):
        recommendation = Recommendation(tmp_path, "sweep", "num_speculative_tokens", config,
                                        fixed_k, "running_batch")
        verifying = verification_plan(plan, recommendation)
        schedule_argv, fixed_argv = (verifying.server_argv(arm) for arm in verifying.arms[:2])
        assert spec_json(schedule_argv) == config
        assert spec_json(fixed_argv) == fixed
        assert fixed_argv[:7] == schedule_argv[:7] == plan.server_argv(plan.arms[0])


def test_a_picked_port_is_recorded_and_left_out_of_the_serve_command():
    """`port = 0`: the run picks a free port; run.json says so and the serve command to copy
    does not repeat a port that meant nothing to the user. A chosen port stays, and a snapshot
    without the record (an older run) reads as before."""
    from dspark_tui.engine.servers.ports import with_concrete_port

    chosen = parse_plan(plan_text(NGRAM_ARMS, server="port = 9123\n"))
    assert with_concrete_port(chosen) is chosen
    assert "port_picked" not in manifest_for_plan(chosen).plan["server"]
    picked = with_concrete_port(parse_plan(plan_text(NGRAM_ARMS, server="port = 0\n")))
    assert picked.server.port > 0 and picked.server.port_picked
    snapshot = manifest_for_plan(picked).plan
    assert snapshot["server"]["port_picked"] is True
    again = Plan.model_validate(snapshot)  # as the decision view reads run.json's plan
    config = {"method": "ngram", "num_speculative_tokens": 2}
    command = serve_command(again, "num_speculative_tokens", config)
    assert "--port" not in command and str(picked.server.port) not in command
    assert command[:3] == ["vllm", "serve", "tiny"] and "--max-num-seqs" in command
    assert serve_command(chosen, "num_speculative_tokens", config)[3:5] == ["--port", "9123"]
    del snapshot["server"]["port_picked"]  # an old run: the port as recorded
    old = serve_command(Plan.model_validate(snapshot), "num_speculative_tokens", config)
    assert old[3:5] == ["--port", str(picked.server.port)]
    assert without_port_flag(["x", "--port={port}", "--host", "{host}", "--port", "80"]) == [
        "x", "--host", "{host}", "--port", "80"]
    with pytest.raises(PlanError, match=r"port_picked: is recorded by a run"):
        parse_plan(plan_text(NGRAM_ARMS, server="port_picked = true\n"))
