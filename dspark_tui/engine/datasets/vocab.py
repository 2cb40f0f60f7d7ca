"""The served model's vocabulary size, which `random-ids` prompts are drawn from.

sglang.bench_serving draws `random-ids` offsets from `tokenizer.vocab_size`; a fixed 32,000 sends
ids a smaller vocabulary refuses (vLLM: "Token id 23751 is out of vocabulary", issue 21) and
draws other ids than sglang for a larger one. In order:

1. the model's files, when the plan's model is a local directory: `tokenizer.json`'s model
   vocabulary (`len(model.vocab)`, what transformers' `vocab_size` says without added tokens:
   sglang's number), else `config.json`'s `vocab_size` (or its `text_config`'s);
2. the server, by bisection: a one-token completion of the prompt `[id]` is accepted below the
   bound and refused above it (vLLM checks every prompt id against its tokenizer's largest); the
   bound found is the first id refused. Probing the route the cells use means the bound is the
   one their requests meet, whatever `/detokenize` does with an unknown id. A server that takes
   the largest id probed (2**31 - 1) has no bound (the simulator without `--vocab-size`);
3. else `DEFAULT_VOCAB_SIZE` (32,000), said as such.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

from dspark_tui.engine.datasets.prompts import DEFAULT_VOCAB_SIZE
from dspark_tui.model import Plan
from dspark_tui.results.manifest import VocabularyRecord

_TIMEOUT_S = 60.0
_NO_BOUND_ID = 2**31 - 1
_FIRST_BOUND = 1024
_LARGEST_BOUND = 2**24  # 16.7 M ids: above every tokenizer in use; beyond it, no answer
Probe = Callable[[int], Awaitable[bool | None]]  # True: accepted, False: refused, None: unsure


def vocab_from_files(model_path: str) -> VocabularyRecord | None:
    """From a local model directory's tokenizer.json, else its config.json; None without one."""
    root = Path(model_path).expanduser()
    if not root.is_dir():
        return None
    size = _tokenizer_json_size(root / "tokenizer.json")
    if size is not None:
        return VocabularyRecord(size=size, source="tokenizer.json", detail=str(root / "tokenizer.json"))
    size = _config_json_size(root / "config.json")
    if size is not None:
        return VocabularyRecord(size=size, source="config.json", detail=str(root / "config.json"))
    return None


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _tokenizer_json_size(path: Path) -> int | None:
    data = _read_json(path)
    model = data.get("model") if isinstance(data, dict) else None
    vocab = model.get("vocab") if isinstance(model, dict) else None
    # BPE, WordPiece and WordLevel keep a {piece: id} map; Unigram a [[piece, score], ...] list.
    if isinstance(vocab, dict | list) and len(vocab) > 0:
        return len(vocab)
    return None


def _config_json_size(path: Path) -> int | None:
    data = _read_json(path)
    if not isinstance(data, dict):
        return None
    for table in (data, data.get("text_config")):
        size = table.get("vocab_size") if isinstance(table, dict) else None
        if isinstance(size, int) and not isinstance(size, bool) and size > 0:
            return size
    return None


async def vocab_by_bisection(probe: Probe) -> tuple[int | None, int]:
    """The first id the server refuses, and the probes it took; None: no bound, or no answer."""
    probes = 0

    async def ask(token_id: int) -> bool | None:
        nonlocal probes
        probes += 1
        return await probe(token_id)

    if await ask(_NO_BOUND_ID) is not False:
        return None, probes  # takes anything (no bound), or the probe itself fails
    if await ask(1) is not True:
        return None, probes  # refuses even a small id: prompts of ids are not taken at all
    lo, hi = 1, _FIRST_BOUND  # lo accepted; hi is probed next
    while True:
        answer = await ask(hi)
        if answer is None:
            return None, probes
        if not answer:
            break
        lo, hi = hi, hi * 2
        if hi > _LARGEST_BOUND:
            return None, probes
    while hi - lo > 1:  # lo accepted, hi refused
        mid = (lo + hi) // 2
        answer = await ask(mid)
        if answer is None:
            return None, probes
        lo, hi = (mid, hi) if answer else (lo, mid)
    return hi, probes


async def vocab_from_server(base_url: str, model: str, headers: dict[str, str]) -> VocabularyRecord | None:
    """The server's bound on prompt ids, by bisection on one-token completions."""
    async with httpx.AsyncClient(base_url=base_url.rstrip("/"), headers=headers,
                                 timeout=_TIMEOUT_S) as client:

        async def probe(token_id: int) -> bool | None:
            body = {"model": model, "prompt": [token_id], "max_tokens": 1, "temperature": 0.0}
            try:
                resp = await client.post("/v1/completions", json=body)
            except httpx.HTTPError:
                return None
            if resp.status_code == 200:
                return True
            return False if resp.status_code == 400 and "vocab" in resp.text.lower() else None

        size, probes = await vocab_by_bisection(probe)
    if size is None:
        return None
    return VocabularyRecord(size=size, source="server",
                            detail=f"first id refused by /v1/completions, {probes} probes")


async def model_vocabulary(model_path: str, base_url: str, model: str,
                           headers: dict[str, str]) -> VocabularyRecord:
    """The files' size, else the server's, else the default (said so)."""
    found = vocab_from_files(model_path)
    if found is None:
        found = await vocab_from_server(base_url, model, headers)
    if found is None:
        return VocabularyRecord(size=DEFAULT_VOCAB_SIZE, source="default",
                                detail="no tokenizer files and no bound from the server")
    return found


def vocabulary_line(record: VocabularyRecord) -> str:
    """One line for the run's notices: `random-ids: vocabulary 4,096 (server: …)`."""
    where = {"tokenizer.json": f"from {record.detail}", "config.json": f"from {record.detail}",
             "server": f"from the server ({record.detail})",
             "default": f"the default ({record.detail})"}.get(record.source, record.source)
    return f"random-ids: token ids drawn below {record.size:,}, {where}"


def draws_random_ids(plan: Plan) -> bool:
    """Whether this client draws token ids: a native `random-ids` cell, or a warmup (whose
    prompts are `random-ids` unless the native client prepared a text set for every scenario)."""
    native = plan.bench.driver == "native"
    datasets = {plan.dataset_of(scenario)[0] for scenario in plan.scenarios}
    if native and "random-ids" in datasets:
        return True
    return plan.bench.warmup_requests > 0 and (not native or "random-ids" in datasets)
