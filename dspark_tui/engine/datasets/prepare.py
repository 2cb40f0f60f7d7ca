"""Prompts prepared once per run and kept in its directory: every arm, round and resume sends
the same ones.

`prompts/{scenario}__n{count}.jsonl` (one file per scenario and prompt count, since sglang's
draws depend on the count): a header line, then one line a prompt (`text`, `token_ids`,
`prompt_len`, `output_len`, `category`). run.json's `prompt_sets` records each file with the
dataset, its path and SHA-256, the category (a category-pure scenario's set holds only that
category's lines of its jsonl file), the seed, the tokenizer and the file's own SHA-256.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from dspark_tui.engine.datasets.files import (
    DatasetError,
    PromptLine,
    category_lines,
    read_prompt_lines,
    read_sharegpt_pairs,
    shipped_prompts_path,
)
from dspark_tui.engine.datasets.prompts import PromptSpec
from dspark_tui.engine.datasets.sampling import (
    TextPrompt,
    jsonl_prompts,
    random_prompts,
    sharegpt_prompts,
)
from dspark_tui.engine.datasets.tokenizers import RememberingTokenizer, Tokenizer, open_tokenizer
from dspark_tui.model import CellSpec, Plan
from dspark_tui.model.naming import safe_name
from dspark_tui.results.atomic import atomic_write_bytes
from dspark_tui.results.manifest import PromptSetRecord

FORMAT = "dspark-tui prompts"
VERSION = 1
PROMPTS_DIR = "prompts"


@dataclass(frozen=True)
class PromptSetKey:
    """What one prompt file holds: a scenario's prompts for one prompt count."""

    scenario: str
    count: int
    dataset: str
    dataset_path: str | None
    input_len: int
    output_len: int
    range_ratio: float
    category: str | None = None

    @property
    def relpath(self) -> str:
        return f"{PROMPTS_DIR}/{safe_name(self.scenario)}__n{self.count}.jsonl"


def set_key(cell: CellSpec) -> PromptSetKey:
    return PromptSetKey(cell.key.scenario, cell.num_prompts, cell.dataset, cell.dataset_path,
                        cell.input_len, cell.output_len, cell.range_ratio, cell.category)


def source_path(key: PromptSetKey) -> Path:
    return Path(key.dataset_path) if key.dataset_path else shipped_prompts_path()


def needs_preparing(plan: Plan) -> list[PromptSetKey]:
    """The prompt sets the native client will read (text datasets only), in plan order."""
    if plan.bench.driver != "native":
        return []
    keys: dict[PromptSetKey, None] = {}
    for cell in plan.cells():
        if cell.dataset != "random-ids":
            keys.setdefault(set_key(cell))
    return list(keys)


def dataset_problems(plan: Plan) -> list[str]:
    """Before a run, before any server starts: every dataset file the plan names is there and
    parses as its dataset reads it (and holds each category a scenario asks for); one line each.
    Found after the first server was ready, a bad file cost a server start (minutes on a GPU)."""
    seen: set[tuple[str, str, str | None]] = set()
    problems = []
    for scenario in plan.scenarios:
        dataset, path = plan.dataset_of(scenario)
        if dataset == "random-ids" or (not path and not scenario.category):
            continue
        where = (dataset, path or str(shipped_prompts_path()), scenario.category)
        if where in seen:
            continue
        seen.add(where)
        if path and not Path(path).exists():
            problems.append(f"{path}: no such dataset file (scenario {scenario.name}, {dataset}; "
                            "README, Datasets, says how to get ShareGPT onto this box)")
            continue
        problem = _parse_problem(dataset == "jsonl", where[1], scenario.category, _stamp(where[1]))
        if problem is not None:
            problems.append(f"{problem} (scenario {scenario.name}, {dataset})")
    return problems


@functools.cache
def _parse_problem(jsonl: bool, path: str, category: str | None,
                   stamp: tuple[int, int]) -> str | None:
    """Why the file does not read as its dataset, or None; once per file version and process
    (preflight runs twice before a run starts; a ShareGPT file is hundreds of MB)."""
    try:
        if jsonl:
            lines = read_prompt_lines(path)
            if category:
                category_lines(lines, category, path)
        else:
            read_sharegpt_pairs(path)
    except DatasetError as exc:
        return str(exc)
    return None


def _stamp(path: str) -> tuple[int, int]:
    try:
        found = os.stat(path)
    except OSError:
        return (0, 0)
    return (found.st_mtime_ns, found.st_size)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


async def prepare_prompt_sets(plan: Plan, run_dir: Path, base_url: str, headers: dict[str, str],
                              known: Iterable[PromptSetRecord] = ()) -> list[PromptSetRecord]:
    """Write every prompt set the plan needs and its run directory lacks; return the records of
    all of them (those already there are kept as they are, so a resume never re-draws)."""
    return await prepare_keys(needs_preparing(plan), plan.bench.seed, run_dir, base_url,
                              plan.served_model_name, headers, plan.model, known)


async def prepare_keys(keys: list[PromptSetKey], seed: int, run_dir: Path, base_url: str,
                       model: str, headers: dict[str, str], local_tokenizer: str,
                       known: Iterable[PromptSetRecord] = ()) -> list[PromptSetRecord]:
    """prepare_prompt_sets for given sets (`set_key(cell)`), e.g. a benchmark's own cells."""
    records = {r.file: r for r in known}
    missing = [k for k in keys if not (run_dir / k.relpath).is_file()]
    for key in keys:
        if key not in missing and key.relpath not in records:  # written, then the runner died
            records[key.relpath] = _record_of_file(run_dir, key)
    if missing:
        # Each text encoded once for all the sets (they share the file's shuffled order).
        tokenizer = RememberingTokenizer(await open_tokenizer(base_url, model, headers, local_tokenizer))
        try:
            sources = _Sources()
            for key in missing:
                records[key.relpath] = await _prepare_one(key, seed, tokenizer, run_dir, sources)
        finally:
            await tokenizer.aclose()
    return [records[k.relpath] for k in keys if k.relpath in records]


class _Sources:
    """Each dataset file read and hashed once per preparation, however many sets it feeds."""

    def __init__(self) -> None:
        self.pairs: dict[Path, list[tuple[str, str]]] = {}
        self.lines: dict[Path, list[PromptLine]] = {}
        self.hashes: dict[Path, str] = {}

    def sharegpt(self, path: Path) -> list[tuple[str, str]]:
        if path not in self.pairs:
            self.pairs[path] = read_sharegpt_pairs(path)
        return self.pairs[path]

    def prompt_lines(self, path: Path) -> list[PromptLine]:
        if path not in self.lines:
            self.lines[path] = read_prompt_lines(path)
        return self.lines[path]

    def sha256(self, path: Path) -> str:
        if path not in self.hashes:
            self.hashes[path] = sha256_of(path)
        return self.hashes[path]


async def _prepare_one(key: PromptSetKey, seed: int, tokenizer: Tokenizer, run_dir: Path,
                       sources: _Sources) -> PromptSetRecord:
    started = time.perf_counter()
    source = source_path(key)
    try:
        if key.dataset == "jsonl":
            lines = await asyncio.to_thread(sources.prompt_lines, source)
            if key.category is not None:
                lines = category_lines(lines, key.category, source)
            prompts = await jsonl_prompts(lines, key.output_len,
                                          key.range_ratio, key.count, seed, tokenizer)
        elif key.dataset == "random":
            pairs = await asyncio.to_thread(sources.sharegpt, source)  # ShareGPT: 600+ MB
            prompts = await random_prompts(pairs, key.input_len,
                                           key.output_len, key.range_ratio, key.count, seed,
                                           tokenizer)
        else:
            pairs = await asyncio.to_thread(sources.sharegpt, source)
            prompts = await sharegpt_prompts(pairs, key.count, seed, tokenizer)
    except DatasetError as exc:
        message = str(exc)
        raise DatasetError(message if message.startswith(str(source))
                           else f"{source}: {message}") from None
    digest = await asyncio.to_thread(sources.sha256, source)
    header = {"format": FORMAT, "version": VERSION, "scenario": key.scenario,
              "dataset": key.dataset, "dataset_path": str(source), "source_sha256": digest,
              "seed": seed, "count": key.count, "input_len": key.input_len,
              "output_len": key.output_len, "range_ratio": key.range_ratio,
              "tokenizer": tokenizer.label, "category": key.category}
    data = _encode(header, prompts)
    atomic_write_bytes(run_dir / key.relpath, data)
    return PromptSetRecord(
        file=key.relpath, scenario=key.scenario, count=key.count, dataset=key.dataset,
        dataset_path=str(source), source_sha256=digest, seed=seed,
        tokenizer=tokenizer.label, sha256=hashlib.sha256(data).hexdigest(), category=key.category,
        prepare_s=round(time.perf_counter() - started, 3),
    )


def _record_of_file(run_dir: Path, key: PromptSetKey) -> PromptSetRecord:
    path = run_dir / key.relpath
    data = path.read_bytes()
    try:
        header = json.loads(data.split(b"\n", 1)[0])
        return PromptSetRecord(
            file=key.relpath, scenario=key.scenario, count=key.count, dataset=header["dataset"],
            dataset_path=header["dataset_path"], source_sha256=header["source_sha256"],
            seed=header["seed"], tokenizer=header.get("tokenizer", ""),
            sha256=hashlib.sha256(data).hexdigest(), category=header.get("category"))
    except (ValueError, KeyError, TypeError) as exc:
        raise DatasetError(f"{path}: unreadable prompt file header ({exc}); delete it to draw "
                           "the prompts again") from None


def peer_records(plan: Plan) -> list[PromptSetRecord]:
    """For the sglang driver, which draws its own prompts: what it was given (file and seed)."""
    if plan.bench.driver == "native":
        return []
    records = []
    hashes: dict[str, str] = {}
    for scenario in plan.scenarios:
        dataset, path = plan.dataset_of(scenario)
        if dataset == "random-ids" or not path or not Path(path).is_file():
            continue
        if path not in hashes:
            hashes[path] = sha256_of(Path(path))
        for count in sorted({scenario.prompts_for(c) for c in scenario.concurrencies}):
            records.append(PromptSetRecord(file=None, scenario=scenario.name, count=count,
                                           dataset=dataset, dataset_path=path,
                                           source_sha256=hashes[path], seed=plan.bench.seed,
                                           tokenizer=f"sglang.bench_serving ({plan.model})"))
    return records


def _encode(header: dict[str, object], prompts: list[TextPrompt]) -> bytes:
    lines = [json.dumps(header, ensure_ascii=False)]
    for i, p in enumerate(prompts):
        row: dict[str, object] = {"i": i, "prompt_len": p.prompt_len, "output_len": p.output_len}
        if p.category is not None:
            row["category"] = p.category
        row["text"] = p.text
        row["token_ids"] = p.token_ids
        lines.append(json.dumps(row, ensure_ascii=False, separators=(",", ":")))
    return ("\n".join(lines) + "\n").encode()


def load_prompt_set(run_dir: Path, cell: CellSpec) -> list[PromptSpec]:
    """The cell's prepared prompts, checked against the cell they were drawn for."""
    key = set_key(cell)
    path = run_dir / key.relpath
    try:
        raw_lines = path.read_bytes().splitlines()
    except FileNotFoundError:
        raise DatasetError(f"{path}: the prompts of {cell.key.scenario} were not prepared") from None
    try:
        header = json.loads(raw_lines[0])
        rows = [json.loads(line) for line in raw_lines[1:] if line.strip()]
        expected = {"format": FORMAT, "dataset": key.dataset, "count": key.count,
                    "category": key.category}
        wrong = next((k for k, v in expected.items() if header.get(k) != v), None)
        if wrong is not None:
            raise DatasetError(f"{path}: {wrong} is {header.get(wrong)!r}, this cell needs "
                               f"{expected[wrong]!r}")
        prompts = [PromptSpec(token_ids=row["token_ids"], output_len=int(row["output_len"]),
                              text=row["text"], prompt_len=int(row["prompt_len"]),
                              category=row.get("category"))
                   for row in rows]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise DatasetError(f"{path}: unreadable prompt file ({type(exc).__name__}: {exc})") from None
    if len(prompts) != key.count:
        raise DatasetError(f"{path}: holds {len(prompts)} prompts, the cell needs {key.count}")
    return prompts
