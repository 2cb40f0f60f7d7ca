"""A lean closed-loop streaming client, for checking the simulator rather than benchmarking it.

Raw asyncio sockets and one keep-alive connection per worker: it costs a fraction of what a
full HTTP client does per chunk, so at 128 streams the client, not the server, stays idle.
Token counts come from the usage chunk, as exact as the server's own.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass
class LoadResult:
    requests: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0
    chunks: int = 0
    duration_s: float = 0.0

    @property
    def total_throughput(self) -> float:
        return (self.prompt_tokens + self.output_tokens) / self.duration_s


async def _read_response(reader: asyncio.StreamReader, result: LoadResult) -> None:
    status = await reader.readline()
    if b" 200 " not in status:
        raise RuntimeError(f"HTTP status {status!r}")
    while (await reader.readline()) not in (b"\r\n", b""):
        pass
    buffer = b""
    while True:
        size = int((await reader.readline()).strip(), 16)
        if size == 0:
            await reader.readline()
            break
        buffer += await reader.readexactly(size)
        await reader.readexactly(2)
        *events, buffer = buffer.split(b"\n\n")
        for event in events:
            result.chunks += 1
            if b'"choices":[]' in event:
                usage = json.loads(event[len(b"data: "):])["usage"]
                result.prompt_tokens += usage["prompt_tokens"]
                result.output_tokens += usage["completion_tokens"]
    result.requests += 1


async def _worker(url: str, queue: list[tuple[int, int]], result: LoadResult) -> None:
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        while queue:
            prompt, output = queue.pop()
            body = json.dumps({
                "prompt": [1000 + i % 5000 for i in range(prompt)], "max_tokens": output,
                "ignore_eos": True, "stream": True, "stream_options": {"include_usage": True},
            }).encode()
            writer.write(b"POST /v1/completions HTTP/1.1\r\nHost: sim\r\n"
                         b"Content-Type: application/json\r\nContent-Length: "
                         + str(len(body)).encode() + b"\r\n\r\n" + body)
            await writer.drain()
            await _read_response(reader, result)
    finally:
        writer.close()


async def run_closed_loop(url: str, lengths: list[tuple[int, int]], concurrency: int) -> LoadResult:
    """Serve every (prompt, output) pair with `concurrency` requests in flight; wall time."""
    queue = list(reversed(lengths))
    result = LoadResult()
    start = time.perf_counter()
    await asyncio.gather(*(_worker(url, queue, result) for _ in range(min(concurrency, len(lengths)))))
    result.duration_s = time.perf_counter() - start
    return result
