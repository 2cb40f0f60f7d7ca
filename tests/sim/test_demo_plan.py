"""The shipped demo plan's server command starts the simulator as each arm asks."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import httpx

import dspark_tui.plans
from dspark_tui.model import load_plan
from tests.conftest import free_port
from tests.sim._client import stream
from tests.simulator import stop_process_group, wait_ready

DEMO_PLAN = Path(dspark_tui.plans.__file__).parent / "demo.toml"


def test_demo_plan_command_serves_each_arms_spec_tokens(tmp_path):
    plan = load_plan(DEMO_PLAN)
    port = free_port()
    plan = plan.model_copy(update={"server": plan.server.model_copy(update={"port": port})})
    arm = next(a for a in plan.arms if str(a.vars.get("spec_tokens")) == "5")
    log_path = tmp_path / "server.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(plan.server_argv(arm), stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True,
                                env=dict(os.environ))
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(proc, url, 20, log_path)
        assert httpx.get(url + "/v1/models").json()["data"][0]["id"] == plan.served_model_name
        result = stream(url, "/v1/completions", {"model": plan.served_model_name, "prompt": "hi",
                                                 "max_tokens": 20, "stream": True})
        assert result.events[-1] == "[DONE]"
        metrics = httpx.get(url + "/metrics").text
        assert 'position="4"' in metrics and 'position="5"' not in metrics
        log_text = log_path.read_text()
        assert "Application startup complete." in log_text
        assert "Ignoring unknown arguments" not in log_text
    finally:
        stop_process_group(proc)
