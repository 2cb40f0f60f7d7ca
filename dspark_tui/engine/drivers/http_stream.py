"""A minimal HTTP/1.1 client for one thing: POST a JSON body, read a streamed response.

Why not httpx here: the benchmark client shares the machine with what it measures, and per
request httpx spent ~2.3 ms of CPU (pool bookkeeping, h11's pure-Python chunk parsing, a failed
`import sniffio` on every lock) where sglang's aiohttp client spends ~1 ms. This keeps one
keep-alive connection per concurrency slot and de-chunks with asyncio's StreamReader, which
brings the client under the peer's CPU per token (numbers in bench/client_vs_sglang.py).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncGenerator
from urllib.parse import urlsplit

_HEADER_LIMIT = 64 * 1024
_ERROR_BODY_LIMIT = 4096


class HttpError(Exception):
    """The server answered with a status other than 200; str() is status and body start."""


class StreamConnection:
    """One connection to `base_url`, reused across requests; reopened after any failure."""

    def __init__(self, base_url: str, headers: dict[str, str], connect_timeout_s: float = 30.0,
                 tls: ssl.SSLContext | None = None) -> None:  # fmt: skip
        parts = urlsplit(base_url)
        self.host = parts.hostname or "127.0.0.1"
        self.secure = parts.scheme == "https"
        self.port = parts.port or (443 if self.secure else 80)
        self.prefix = parts.path.rstrip("/")
        self.tls = (tls or ssl.create_default_context()) if self.secure else None
        self.connect_timeout_s = connect_timeout_s
        host_header = self.host if parts.port is None else f"{self.host}:{self.port}"
        lines = [f"Host: {host_header}", "Content-Type: application/json", "Accept: */*"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        self._fixed_headers = ("\r\n".join(lines) + "\r\n").encode("latin-1")
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self._reader is not None and self._writer is not None and not self._reader.at_eof():
            return self._reader, self._writer
        await self.close()
        async with asyncio.timeout(self.connect_timeout_s):
            reader, writer = await asyncio.open_connection(
                self.host, self.port, ssl=self.tls, limit=_HEADER_LIMIT
            )
        self._reader, self._writer = reader, writer
        return reader, writer

    async def close(self) -> None:
        """Close without waiting: the transport finishes on its own, and a cancelled caller
        is never held up (or made to swallow its cancellation) here."""
        writer, self._reader, self._writer = self._writer, None, None
        if writer is not None:
            writer.close()

    async def post_stream(self, path: str, body: bytes) -> AsyncGenerator[bytes, None]:
        """Yield the response body as it arrives (de-chunked). Raises HttpError on non-200.

        Any exception leaves the connection closed, so the next request starts clean.
        """
        reuse = False
        try:
            reader, writer = await self._connect()
            head = (
                f"POST {self.prefix}{path} HTTP/1.1\r\nContent-Length: {len(body)}\r\n".encode()
                + self._fixed_headers
                + b"\r\n"
            )
            writer.write(head + body)
            status, headers = await _read_head(reader)
            chunked = headers.get("transfer-encoding", "").lower() == "chunked"
            length = int(headers.get("content-length", "-1"))
            keep_alive = headers.get("connection", "").lower() != "close"
            if status != 200:
                text = await _read_limited(reader, chunked, length)
                raise HttpError(f"HTTP {status}: {' '.join(text.split())[:300]}")
            if chunked:
                while True:
                    size_line = await reader.readuntil(b"\r\n")
                    size = int(size_line.split(b";", 1)[0], 16)
                    if size == 0:
                        await reader.readuntil(b"\r\n")  # end of (empty) trailers
                        break
                    data = await reader.readexactly(size + 2)
                    yield data[:-2]
            elif length >= 0:
                yield await reader.readexactly(length)
            else:
                keep_alive = False
                while data := await reader.read(65536):
                    yield data
            reuse = keep_alive
        finally:
            if not reuse:
                await self.close()


async def _read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    raw = await reader.readuntil(b"\r\n\r\n")
    lines = raw.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/"):
        raise HttpError(f"not an HTTP response: {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers


async def _read_limited(reader: asyncio.StreamReader, chunked: bool, length: int) -> str:
    """The start of an error body, for the one-line reason."""
    data = b""
    try:
        if chunked:
            while len(data) < _ERROR_BODY_LIMIT:
                size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0], 16)
                if size == 0:
                    break
                data += (await reader.readexactly(size + 2))[:-2]
        elif length >= 0:
            data = await reader.readexactly(min(length, _ERROR_BODY_LIMIT))
        else:
            data = await reader.read(_ERROR_BODY_LIMIT)
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError, OSError):
        pass
    return data.decode("utf-8", "replace")
