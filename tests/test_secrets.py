"""model/secrets: what is masked in run.json, and what is scrubbed from a server's output."""

from __future__ import annotations

import pytest

from dspark_tui.model import Plan
from dspark_tui.model.secrets import (
    REDACTED,
    Scrubber,
    is_masked,
    is_secret_name,
    redact_argv,
    redact_env,
    scrub_argv,
    secret_values,
)
from dspark_tui.results.manifest import redacted_plan_snapshot


@pytest.mark.parametrize("name", [
    "--api-key", "--hf-token", "HF_TOKEN", "OPENAI_KEY", "HF_HUB_TOKEN_X", "VLLM_API_KEY",
    "DB_PASSWORD", "MYSQL_PASSWD", "AWS_SECRET_ACCESS_KEY", "GOOGLE_APPLICATION_CREDENTIALS",
    "Authorization", "PROXY_AUTH", "--token",
])
def test_secret_names(name: str):
    assert is_secret_name(name)


@pytest.mark.parametrize("name", [
    "--spec-tokens", "max_num_batched_tokens", "TOKENIZERS_PARALLELISM", "--tokenizer",
    "--return-tokens-as-token-ids", "--ssl-keyfile", "CUDA_VISIBLE_DEVICES", "--port",
    "--num-speculative-tokens",
])
def test_names_that_only_look_like_secrets(name: str):
    assert not is_secret_name(name)


def test_argv_masks_flag_values_pairs_and_url_passwords():
    argv = ["--api-key", "sk-1", "--hf-token=hf_2", "--return-tokens-as-token-ids", "--port", "8",
            "--header", "Authorization=Bearer sk-3", "--header", "Authorization: Bearer sk-4",
            "--db", "postgres://u:PW5@host/db", "--token", "t6"]
    assert redact_argv(argv) == [
        "--api-key", REDACTED, "--hf-token=" + REDACTED, "--return-tokens-as-token-ids",
        "--port", "8", "--header", "Authorization=" + REDACTED, "--header",
        "Authorization: " + REDACTED, "--db", "postgres://u:" + REDACTED + "@host/db",
        "--token", REDACTED]


def test_env_masks_secret_names_and_url_passwords_keeping_the_rest():
    env = {"OPENAI_KEY": "a", "HF_HUB_TOKEN_X": "b", "DB_URL": "postgres://u:PW@db:5432/x",
           "TOKENIZERS_PARALLELISM": "false", "PLAIN_URL": "http://host/x"}
    assert redact_env(env) == {"OPENAI_KEY": REDACTED, "HF_HUB_TOKEN_X": REDACTED,
                               "DB_URL": "postgres://u:***@db:5432/x",
                               "TOKENIZERS_PARALLELISM": "false", "PLAIN_URL": "http://host/x"}


@pytest.mark.parametrize(("value", "masked"), [
    (REDACTED, True), ("Authorization=***", True), ("postgres://u:***@h/d", True),
    ("a***b", False), ("postgres://u:pw@h/d", False), ("false", False),
    ("exec vllm serve m --api-key *** --port 1", True),
])
def test_is_masked_tells_what_a_resume_must_get_elsewhere(value: str, masked: bool):
    assert is_masked(value) is masked


def test_secret_values_are_what_masking_hides_of_8_characters_or_more():
    found = secret_values(
        argvs=[["--api-key", "sk-in-command-1", "--token", "short",
                "--header", "Authorization: Bearer sk-header-22"]],
        env={"HF_TOKEN": "hf_env_secret", "DB_URL": "mysql://root:hunter2222@db/x",
             "TOKENIZERS_PARALLELISM": "false-but-long"},
        keys=["sk-bench-key-3", None])
    assert {"sk-in-command-1", "hf_env_secret", "hunter2222", "sk-bench-key-3",
            "sk-header-22"} <= found
    assert "short" not in found and "false-but-long" not in found


def test_secret_values_look_inside_a_shell_command_line():
    found = secret_values(argvs=[["sh", "-c", "vllm serve m --api-key sk-inside-1 --port 8"],
                                 ["sh", "-c", "x --token", "not-a-secret-value"]])
    assert "sk-inside-1" in found and "not-a-secret-value" not in found
    assert scrub_argv(["sh", "-c", "vllm serve m --api-key sk-inside-1"], found) == [
        "sh", "-c", "vllm serve m --api-key ***"]


def test_scrubber_replaces_whole_tokens_only():
    scrubber = Scrubber(["hf_abcdefgh", "password1", "!weird-secret", "short"])
    text = (b'HF_TOKEN=hf_abcdefgh "password1" mypassword12 !weird-secret\n'
            b"hf_abcdefghij short --api-key password1\n")
    assert scrubber.scrub(text) == (b'HF_TOKEN=*** "***" mypassword12 ***\n'
                                    b"hf_abcdefghij short --api-key ***\n")


def test_scrubber_without_secrets_returns_the_text():
    assert not Scrubber(["short"])
    assert Scrubber([]).scrub(b"a line\n") == b"a line\n"


def test_run_json_snapshot_masks_extra_args_and_every_secret_env():
    plan = Plan.model_validate({
        "name": "p", "model": "m",
        "server": {"command": ["vllm", "serve", "--api-key", "sk-cmd-secret", "--port", "{port}"],
                   "env": {"OPENAI_KEY": "sk-openai-1", "DB_URL": "postgres://u:PWsecret1@h/d"}},
        "arms": [{"name": "a", "vars": {}}],
        "bench": {"api_key": "sk-bench-1",
                  "extra_args": ["--header", "Authorization=Bearer sk-extra-1"]},
        "scenarios": [{"name": "s", "input_len": 8, "output_len": 4, "concurrencies": [1],
                       "num_prompts": 1}],
    })
    text = str(redacted_plan_snapshot(plan))
    for secret in ("sk-cmd-secret", "sk-openai-1", "PWsecret1", "sk-bench-1", "sk-extra-1"):
        assert secret not in text
