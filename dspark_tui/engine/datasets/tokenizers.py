"""Tokenizing prompts with the server's own tokenizer, or a local one when it has none.

vLLM serves `POST /tokenize` ({"prompt", "add_special_tokens"} -> {"count", "max_model_len",
"tokens"}) and `POST /detokenize` ({"tokens"} -> {"prompt"}); the simulator serves both with
its toy tokenizer. A server without them (404/405) falls back to Hugging Face `transformers`
loading the plan's model path (the optional `[text]` extra).
"""

from __future__ import annotations

import asyncio
from array import array
from typing import Any, Protocol

import httpx

from dspark_tui.engine.datasets.files import DatasetError

_TIMEOUT_S = 60.0
_MISSING_ROUTE = (404, 405)


class Tokenizer(Protocol):
    label: str  # said in run.json: which tokenizer cut the prompts

    async def encode(self, text: str) -> list[int]:
        """With the model's special tokens, as `tokenizer.encode` adds them by default."""
        ...

    async def decode(self, ids: list[int]) -> str: ...

    async def special_count(self) -> int:
        """How many special tokens encoding adds (sglang's `num_special_tokens_to_add`)."""
        ...

    async def aclose(self) -> None: ...


class NoTokenizeRoute(Exception):
    """The server has no /tokenize (or /detokenize)."""


class ServerTokenizer:
    def __init__(self, base_url: str, model: str, headers: dict[str, str]) -> None:
        self.label = "server /tokenize"
        self.model = model
        self.client = httpx.AsyncClient(base_url=base_url.rstrip("/"), headers=headers,
                                        timeout=_TIMEOUT_S)

    async def _post(self, route: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            resp = await self.client.post(route, json={"model": self.model, **body})
        except httpx.HTTPError as exc:
            raise DatasetError(f"{route}: {type(exc).__name__}: {exc}") from None
        if resp.status_code in _MISSING_ROUTE and not _is_api_error(resp):
            raise NoTokenizeRoute(route)
        if resp.status_code != 200:
            raise DatasetError(f"{route}: HTTP {resp.status_code}: {' '.join(resp.text.split())[:200]}")
        data = resp.json()
        if not isinstance(data, dict):
            raise DatasetError(f"{route}: answered {type(data).__name__}, not an object")
        return data

    async def encode(self, text: str) -> list[int]:
        data = await self._post("/tokenize", {"prompt": text, "add_special_tokens": True})
        tokens = data.get("tokens")
        if not isinstance(tokens, list):
            raise DatasetError("/tokenize: the answer has no `tokens` list")
        return tokens

    async def decode(self, ids: list[int]) -> str:
        data = await self._post("/detokenize", {"tokens": ids})
        prompt = data.get("prompt")
        if not isinstance(prompt, str):
            raise DatasetError("/detokenize: the answer has no `prompt` text")
        return prompt

    async def special_count(self) -> int:
        return len(await self.encode(""))

    async def aclose(self) -> None:
        await self.client.aclose()


def _is_api_error(resp: httpx.Response) -> bool:
    """An OpenAI-style error (a model the server does not serve) rather than a missing route."""
    try:
        body = resp.json()
    except ValueError:
        return False
    return isinstance(body, dict) and ("error" in body or body.get("object") == "error")


class LocalTokenizer:
    """transformers' AutoTokenizer; its calls run in a thread, off the runner's loop."""

    def __init__(self, path: str) -> None:
        try:
            from transformers import AutoTokenizer  # optional: the [text] extra
        except ImportError:
            raise DatasetError(
                "the server has no /tokenize and transformers is not installed: "
                "pip install 'dspark-tui[text]' (or use a server that serves /tokenize)") from None
        try:
            self._tok = AutoTokenizer.from_pretrained(path)
        except Exception as exc:  # transformers raises many kinds; each is one line for the user
            raise DatasetError(f"cannot load a tokenizer from {path}: {type(exc).__name__}: "
                               f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
        self.label = f"transformers {path}"

    async def encode(self, text: str) -> list[int]:
        return list(await asyncio.to_thread(self._tok.encode, text))

    async def decode(self, ids: list[int]) -> str:
        return str(await asyncio.to_thread(self._tok.decode, ids))

    async def special_count(self) -> int:
        return int(self._tok.num_special_tokens_to_add())

    async def aclose(self) -> None:
        return None


class RememberingTokenizer:
    """A tokenizer that encodes each text once per preparation. The prompt sets of a run draw
    from one file in one shuffled order (one seed), so each set's first conversations are the
    other sets' too: the demo plan's five `random` sets asked /tokenize 518 times where 258
    texts were distinct (bench/prompt_prep.py). The ids are kept as 64-bit arrays, not lists of
    Python ints (a large ShareGPT file's turns)."""

    def __init__(self, inner: Tokenizer) -> None:
        self.inner = inner
        self.label = inner.label
        self._ids: dict[str, array[int]] = {}
        self._special: int | None = None

    async def encode(self, text: str) -> list[int]:
        kept = self._ids.get(text)
        if kept is not None:
            return kept.tolist()
        ids = await self.inner.encode(text)
        self._ids[text] = array("q", ids)
        return ids

    async def decode(self, ids: list[int]) -> str:
        return await self.inner.decode(ids)

    async def special_count(self) -> int:
        if self._special is None:
            self._special = await self.inner.special_count()
        return self._special

    async def aclose(self) -> None:
        await self.inner.aclose()


async def open_tokenizer(base_url: str, model: str, headers: dict[str, str],
                         local_path: str) -> Tokenizer:
    """The server's tokenizer when it serves /tokenize and /detokenize, else a local one."""
    server = ServerTokenizer(base_url, model, headers)
    try:
        ids = await server.encode("a")
        await server.decode(ids)
        return server
    except NoTokenizeRoute:
        await server.aclose()
    except BaseException:
        await server.aclose()
        raise
    return await asyncio.to_thread(LocalTokenizer, local_path)
