"""A completions server that refuses fields it does not know, as OpenAI's API does, and answers a
prompt with the same text every time (its words reversed). Standard library only.

    python strict_completions.py --port 8123
"""

from __future__ import annotations

import argparse
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

KNOWN = {"model", "prompt", "max_tokens", "temperature", "stream"}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self._send(200 if self.path == "/health" else 404, {})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        unknown = sorted(set(body) - KNOWN)
        if unknown:
            self._send(400, {"error": {"message": "Unrecognized request argument supplied: "
                                       + ", ".join(unknown)}})
            return
        text = " ".join(reversed(str(body["prompt"]).split()))
        self._send(200, {"choices": [{"index": 0, "text": text, "finish_reason": "stop"}]})

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    port = parser.parse_args().port
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
