"""The native client against a scripted HTTP/1.1 server: framing edge cases a real simulator
does not produce (events split across chunks, CRLF lines, no chunking), keep-alive reuse,
torn streams and error bodies, and the Authorization header."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from dspark_tui.engine.drivers import CellError, DriverContext
from dspark_tui.engine.drivers.native import NativeDriver
from dspark_tui.model import BenchConfig, CellKey, CellSpec

TOKENS = 5


def sse_body(tokens: int = TOKENS, newline: bytes = b"\n") -> bytes:
    """What a vLLM completion stream looks like: text events, then usage, then [DONE]."""
    events = [{"choices": [{"text": "", "index": 0}]}]  # an empty first chunk does not count
    events += [{"choices": [{"text": f"t{i} ", "index": 0}], "usage": None} for i in range(tokens)]
    events.append({"choices": [], "usage": {"prompt_tokens": 8, "completion_tokens": tokens}})
    lines = [b"data: " + json.dumps(e).encode() for e in events] + [b"data: [DONE]"]
    return b"".join(line + newline + newline for line in lines)


@dataclass
class Wire:
    url: str
    connections: int = 0
    requests: list[tuple[dict[str, str], bytes]] = field(default_factory=list)


@asynccontextmanager
async def scripted_server(respond: Callable[[asyncio.StreamWriter], Awaitable[bool]]) -> AsyncIterator[Wire]:
    """An HTTP/1.1 server on loopback; `respond(writer)` writes one answer and returns whether
    the connection stays open for the next request."""
    wire = Wire(url="")

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        wire.connections += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                headers = {}
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    if name:
                        headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                wire.requests.append((headers, body))
                if not await respond(writer):
                    return
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    wire.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        yield wire
    finally:
        server.close()
        await server.wait_closed()


def chunked(parts: list[bytes]) -> bytes:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    return head + b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


def pieces(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def _ctx(url: str, tmp_path: Path, api_key: str | None = None) -> DriverContext:
    return DriverContext(
        base_url=url, host="127.0.0.1", port=int(url.rsplit(":", 1)[1]), served_model_name="m",
        model_path="m", bench=BenchConfig(driver="native", seed=3, cell_timeout_s=20, api_key=api_key),
        raw_dir=tmp_path / "raw",
    )  # fmt: skip


def _cell(concurrency: int, prompts: int) -> CellSpec:
    return CellSpec(key=CellKey(arm="a", scenario="wire", concurrency=concurrency), input_len=8,
                    output_len=TOKENS, range_ratio=1.0, num_prompts=prompts)  # fmt: skip


def _raw(tmp_path: Path, concurrency: int) -> list[dict[str, object]]:
    text = (tmp_path / "raw" / f"wire__c{concurrency}.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()[1:]]  # after the header


@pytest.mark.parametrize(
    ("name", "answer"),
    [
        ("events split across odd-sized chunks", chunked(pieces(sse_body(), 7))),
        ("one chunk holding every event", chunked([sse_body()])),
        ("CRLF line endings", chunked(pieces(sse_body(newline=b"\r\n"), 50))),
        (
            "Content-Length, not chunked",
            b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(sse_body()), sse_body()),
        ),
    ],
)
async def test_framing_does_not_change_the_numbers(tmp_path: Path, name: str, answer: bytes):
    async def respond(writer: asyncio.StreamWriter) -> bool:
        writer.write(answer)
        await writer.drain()
        return True

    async with scripted_server(respond) as wire:
        result = await NativeDriver().run(_cell(2, 6), _ctx(wire.url, tmp_path), lambda p: None)
    assert result.ok and result.metrics.completed == 6, name
    assert result.metrics.total_output_tokens == 6 * TOKENS
    for line in _raw(tmp_path, 2):
        assert line["usage_reported"] and line["output_tokens"] == TOKENS
        assert line["itl_n"] == TOKENS - 1
        assert 0 < line["ttft_s"] <= line["e2e_s"]  # type: ignore[operator]
    assert wire.connections <= 2  # kept alive and reused, never more than the concurrency


async def test_the_request_carries_the_payload_and_the_api_key(tmp_path: Path):
    async def respond(writer: asyncio.StreamWriter) -> bool:
        writer.write(chunked([sse_body()]))
        return True

    async with scripted_server(respond) as wire:
        await NativeDriver().run(_cell(1, 2), _ctx(wire.url, tmp_path, api_key="k-1"), lambda p: None)
    headers, body = wire.requests[0]
    assert headers["authorization"] == "Bearer k-1"
    assert headers["content-type"] == "application/json"
    payload = json.loads(body)
    assert payload["stream"] is True and payload["ignore_eos"] is True
    assert payload["stream_options"] == {"include_usage": True}
    assert payload["max_tokens"] == TOKENS and len(payload["prompt"]) == 8


async def test_a_torn_stream_is_a_failed_request_and_the_next_one_reconnects(tmp_path: Path):
    answered = 0

    async def respond(writer: asyncio.StreamWriter) -> bool:
        nonlocal answered
        answered += 1
        if answered == 2:  # the second request: a head and half a stream, then the socket closes
            whole = chunked(pieces(sse_body(), 40))
            writer.write(whole[: len(whole) // 2])
            await writer.drain()
            return False
        writer.write(chunked([sse_body()]))
        return True

    async with scripted_server(respond) as wire:
        result = await NativeDriver().run(_cell(1, 4), _ctx(wire.url, tmp_path), lambda p: None)
    assert result.metrics.completed == 3 and result.metrics.failed == 1
    errors = [line.get("error") for line in _raw(tmp_path, 1)]
    assert errors[1] == "RemoteProtocolError: the server closed the stream early"
    assert errors[0] is None and errors[2] is None and errors[3] is None
    assert wire.connections == 2


async def test_an_error_status_reports_the_start_of_its_body(tmp_path: Path):
    async def respond(writer: asyncio.StreamWriter) -> bool:
        body = b"model\n  overloaded " + b"x" * 5000
        writer.write(b"HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\n\r\n")
        writer.write(b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces(body, 1000)) + b"0\r\n\r\n")
        return True

    async with scripted_server(respond) as wire:
        with pytest.raises(CellError) as info:
            await NativeDriver().run(_cell(1, 2), _ctx(wire.url, tmp_path), lambda p: None)
    message = str(info.value)
    assert "first: HTTP 503: model overloaded xxx" in message
    assert "\n" not in message and len(message) < 400
