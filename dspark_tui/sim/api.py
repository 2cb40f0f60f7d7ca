"""The OpenAI-compatible HTTP surface, shaped like vLLM's responses byte for byte where it matters.

Streaming chunks are assembled from precomputed JSON fragments: a chunk costs a few string
joins, not a json.dumps of a nested dict, which is what keeps 128 streams cheap.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from dspark_tui.sim import tokenizer as toy_tokenizer
from dspark_tui.sim.config import ServeConfig
from dspark_tui.sim.content import prompt_text
from dspark_tui.sim.engine import LiveEngine
from dspark_tui.sim.greedy import OutputText, greedy_output, is_greedy
from dspark_tui.sim.http_metrics import CountRequests, http_requests_counter
from dspark_tui.sim.logs import log
from dspark_tui.sim.scheduler import SimRequest
from dspark_tui.sim.text import count_message_tokens, count_text_tokens

VLLM_VERSION = "0.33.0"
DEFAULT_COMPLETION_MAX_TOKENS = 16
# How often a waiting non-streaming request checks whether its client went away.
DISCONNECT_POLL_S = 0.5


class BadRequest(Exception):
    """A client mistake: answered with a 400 (or the given status) OpenAI-style error body."""

    def __init__(self, message: str, status: int = 400, kind: str = "BadRequestError") -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind


def error_response(message: str, status: int, kind: str) -> JSONResponse:
    body = {"error": {"message": message, "type": kind, "param": None, "code": status}}
    return JSONResponse(body, status_code=status)


@dataclass
class Generation:
    """A validated request: how many prompt tokens, how many to generate, how to answer."""

    chat: bool
    prompt_tokens: int
    max_tokens: int
    stream: bool
    include_usage: bool
    ignore_eos: bool
    model: str
    greedy_output: OutputText | None = None  # temperature 0: the answer the prompt determines
    return_token_ids: bool = False


class OutOfVocabulary(BadRequest):
    """A prompt id beyond `--vocab-size`: vLLM's words; streamed, vLLM says it inside the stream
    (HTTP 200, one `data: {"error": ...}` chunk, then `[DONE]`), else HTTP 400."""

    def __init__(self, token_id: int) -> None:
        super().__init__(f"Token id {token_id} is out of vocabulary")


def streamed_error(exc: BadRequest) -> AsyncIterator[str]:
    """vLLM's in-stream error: the headers went out, so the error is a chunk of its own."""
    body = {"error": {"message": str(exc), "type": exc.kind, "param": None, "code": exc.status}}

    async def chunks() -> AsyncIterator[str]:
        yield f"data: {json.dumps(body)}\n\n"
        yield "data: [DONE]\n\n"

    return chunks()


class StreamCut(Exception):
    """Raised inside a streamed answer: the server closes the connection mid-stream."""


class SimApi:
    def __init__(self, config: ServeConfig, engine: LiveEngine,
                 on_request_done: Callable[[], None]) -> None:
        self.config = config
        self.engine = engine
        self.on_request_done = on_request_done
        self.created = int(time.time())
        self.rng = random.Random(config.seed + 1)
        self.model_json = json.dumps(config.model_name)
        self.streams = 0

    def app(self) -> Starlette:
        routes = [
            Route("/v1/completions", self.completions, methods=["POST"]),
            Route("/v1/chat/completions", self.chat_completions, methods=["POST"]),
            Route("/v1/models", self.models, methods=["GET"]),
            Route("/health", self.health, methods=["GET"]),
            Route("/ping", self.health, methods=["GET", "POST"]),
            Route("/version", self.version, methods=["GET"]),
            Route("/metrics", self.metrics, methods=["GET"]),
            Route("/tokenize", self.tokenize, methods=["POST"]),
            Route("/detokenize", self.detokenize, methods=["POST"]),
        ]
        counter = http_requests_counter(self.engine.metrics.registry)
        handlers = frozenset(route.path for route in routes)
        return Starlette(routes=routes, exception_handlers={HTTPException: self._http_error},
                         middleware=[Middleware(CountRequests, counter=counter, handlers=handlers)])

    async def _http_error(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        kind = "NotFoundError" if exc.status_code == 404 else "BadRequestError"
        detail = f"{exc.detail}: {request.method} {request.url.path}"
        return error_response(detail, exc.status_code, kind)

    # -- simple routes -------------------------------------------------------------------

    async def health(self, request: Request) -> Response:
        return Response(status_code=200)

    async def version(self, request: Request) -> Response:
        return JSONResponse({"version": VLLM_VERSION})

    async def models(self, request: Request) -> Response:
        cards: list[dict[str, object]] = [{
            "id": name,
            "object": "model",
            "created": self.created,
            "owned_by": "vllm",
            "root": self.config.model,
            "parent": None,
            "max_model_len": self.config.engine.max_model_len,
            "permission": [],
        } for name in self.config.served_names]
        return JSONResponse({"object": "list", "data": cards})

    async def metrics(self, request: Request) -> Response:
        return Response(generate_latest(self.engine.metrics.registry),
                        media_type=CONTENT_TYPE_LATEST)

    # -- tokenization (vLLM's request and response shapes; the toy tokenizer of tokenizer.py) --

    async def tokenize(self, request: Request) -> Response:
        try:
            body = await self._json_body(request)
            self._check_model(body)
            prompt = body.get("prompt")
            if not isinstance(prompt, str):
                raise BadRequest("prompt must be a string (the simulator tokenizes completions "
                                 "prompts, not chat messages)")
            special = body.get("add_special_tokens", True)
            if not isinstance(special, bool):
                raise BadRequest("add_special_tokens must be a boolean")
        except BadRequest as exc:
            return error_response(str(exc), exc.status, exc.kind)
        tokens = toy_tokenizer.encode(prompt, add_special_tokens=special)
        strs = ([toy_tokenizer.decode_one(t) for t in tokens] if body.get("return_token_strs")
                else None)
        return JSONResponse({"count": len(tokens), "max_model_len": self.config.engine.max_model_len,
                             "tokens": tokens, "token_strs": strs})

    async def detokenize(self, request: Request) -> Response:
        try:
            body = await self._json_body(request)
            self._check_model(body)
            tokens = body.get("tokens")
            if not isinstance(tokens, list) or not all(
                    isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in tokens):
                raise BadRequest("tokens must be a list of token ids (non-negative integers)")
            self._check_vocabulary(tokens)
        except BadRequest as exc:
            return error_response(str(exc), exc.status, exc.kind)
        return JSONResponse({"prompt": toy_tokenizer.decode(tokens)})

    def _check_model(self, body: dict[str, object]) -> None:
        model = body.get("model")
        if model is not None and model not in self.config.model_names:
            raise BadRequest(f"The model `{model}` does not exist.", 404, "NotFoundError")

    # -- generation ----------------------------------------------------------------------

    async def completions(self, request: Request) -> Response:
        return await self._generate(request, chat=False)

    async def chat_completions(self, request: Request) -> Response:
        return await self._generate(request, chat=True)

    async def _generate(self, request: Request, chat: bool) -> Response:
        try:
            body = await self._json_body(request)
            generation = self._validate(body, chat)
        except OutOfVocabulary as exc:
            if body.get("stream") is True:
                return StreamingResponse(streamed_error(exc), media_type="text/event-stream")
            return error_response(str(exc), exc.status, exc.kind)
        except BadRequest as exc:
            return error_response(str(exc), exc.status, exc.kind)
        if self.config.faults.echo_key_401 and generation.stream:
            return error_response("Incorrect API key provided: "
                                  + request.headers.get("authorization", "(none)"),
                                  401, "AuthenticationError")
        eos_at = self._draw_eos(generation)
        sim_request = SimRequest(self._request_id(chat), generation.prompt_tokens,
                                 generation.max_tokens, eos_at=eos_at,
                                 acceptance=self.config.content.acceptance_of(prompt_text(body, chat)))
        sink = self.engine.submit(sim_request)
        if generation.stream:
            return StreamingResponse(self._stream(sim_request, sink, generation),
                                     media_type="text/event-stream")
        try:
            while sink.finish_reason is None:
                try:
                    await asyncio.wait_for(sink.ready.wait(), DISCONNECT_POLL_S)
                except TimeoutError:
                    if await request.is_disconnected():
                        return Response(status_code=499)
                sink.ready.clear()
        finally:
            if sink.finish_reason is None:
                self.engine.abort(sim_request)
        self.on_request_done()
        return JSONResponse(self._full_response(sim_request, generation))

    async def _json_body(self, request: Request) -> dict[str, object]:
        raw = await request.body()
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise BadRequest(f"Invalid JSON body: {exc}") from None
        if not isinstance(body, dict):
            raise BadRequest("Request body must be a JSON object")
        return body

    def _validate(self, body: dict[str, object], chat: bool) -> Generation:
        model = body.get("model")
        if model is not None and model not in self.config.model_names:
            raise BadRequest(f"The model `{model}` does not exist.", 404, "NotFoundError")
        prompt_tokens = self._chat_prompt(body) if chat else self._completion_prompt(body)
        max_tokens = body.get("max_completion_tokens") if chat else None
        if max_tokens is None:
            max_tokens = body.get("max_tokens")
        limit = self.config.engine.max_model_len
        if max_tokens is None:
            max_tokens = (max(1, limit - prompt_tokens) if chat
                          else DEFAULT_COMPLETION_MAX_TOKENS)
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise BadRequest(f"max_tokens must be an integer >= 1, got {max_tokens!r}")
        if prompt_tokens + max_tokens > limit:
            raise BadRequest(
                f"This model's maximum context length is {limit} tokens. However, you requested "
                f"{prompt_tokens + max_tokens} tokens ({prompt_tokens} in the messages, "
                f"{max_tokens} in the completion). Please reduce the length of the messages or "
                "completion.")
        n = body.get("n", 1)
        if n != 1:
            raise BadRequest("the simulator supports n=1 only")
        stream = body.get("stream", False)
        if not isinstance(stream, bool):
            raise BadRequest("stream must be a boolean")
        options = body.get("stream_options") or {}
        if not isinstance(options, dict):
            raise BadRequest("stream_options must be an object")
        if options and not stream:
            raise BadRequest("Stream options can only be defined when `stream=True`.")
        return Generation(chat=chat, prompt_tokens=prompt_tokens, max_tokens=max_tokens,
                          stream=stream, include_usage=bool(options.get("include_usage")),
                          ignore_eos=bool(body.get("ignore_eos", False)),
                          model=self.config.model_name,
                          greedy_output=self._greedy_output(body, chat),
                          return_token_ids=body.get("return_token_ids") is True)

    def _greedy_output(self, body: dict[str, object], chat: bool) -> OutputText | None:
        if not is_greedy(body.get("temperature")):
            return None
        return greedy_output(body.get("messages") if chat else body.get("prompt"),
                             spec_tokens=self.config.engine.spec_tokens,
                             diverge_after=self.config.faults.greedy_diverge_after)

    def _completion_prompt(self, body: dict[str, object]) -> int:
        prompt = body.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], (str, list)):
            prompt = prompt[0]
        if isinstance(prompt, str):
            return max(1, count_text_tokens(prompt))
        if (isinstance(prompt, list) and prompt
                and all(isinstance(t, int) and not isinstance(t, bool) for t in prompt)):
            self._check_vocabulary(prompt)
            return len(prompt)
        if prompt is None:
            raise BadRequest("Field required: prompt")
        raise BadRequest("prompt must be a string or a non-empty list of token ids "
                         "(one prompt per request)")

    def _check_vocabulary(self, ids: list[int]) -> None:
        """vLLM's check of a prompt's ids against the tokenizer (`max_token_id`)."""
        size = self.config.vocab_size
        if size is not None and ids and (top := max(ids)) >= size:
            raise OutOfVocabulary(top)

    def _chat_prompt(self, body: dict[str, object]) -> int:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequest("Field required: messages (a non-empty list)")
        contents = []
        for message in messages:
            if not isinstance(message, dict) or "role" not in message:
                raise BadRequest("each message must be an object with a role")
            content = message.get("content") or ""
            if isinstance(content, list):
                content = " ".join(str(part.get("text", "")) for part in content
                                   if isinstance(part, dict))
            contents.append(str(content))
        return count_message_tokens(contents)

    def _draw_eos(self, generation: Generation) -> int | None:
        """Where the simulated model would emit EOS, unless the client asked to ignore it."""
        mean = self.config.eos_mean_tokens
        if generation.ignore_eos or mean <= 0:
            return None
        # A greedy answer ends where its prompt says, like its words; a sampled one anywhere.
        rng = (random.Random(generation.greedy_output.start)
               if generation.greedy_output is not None else self.rng)
        return max(1, round(rng.expovariate(1.0 / mean)))

    def _request_id(self, chat: bool) -> str:
        return ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex

    # -- responses -----------------------------------------------------------------------

    def _usage(self, request: SimRequest) -> dict[str, object]:
        return {"prompt_tokens": request.prompt_tokens,
                "total_tokens": request.prompt_tokens + request.generated,
                "completion_tokens": request.generated,
                "prompt_tokens_details": None}

    def _full_response(self, request: SimRequest, generation: Generation) -> dict[str, object]:
        output = self._output(request, generation)
        text = output.text(0, request.generated)
        reason = request.finish_reason
        if generation.chat:
            choice: dict[str, object] = {
                "index": 0, "logprobs": None, "finish_reason": reason, "stop_reason": None,
                "message": {"role": "assistant", "content": text, "reasoning_content": None,
                            "tool_calls": []},
            }
            kind = "chat.completion"
        else:
            choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": reason,
                      "stop_reason": None, "prompt_logprobs": None}
            kind = "text_completion"
        if generation.return_token_ids:  # vLLM >= 0.10.2; the simulator keeps no prompt ids
            choice["prompt_token_ids"] = None
            choice["token_ids"] = output.ids(0, request.generated)
        return {"id": request.request_id, "object": kind, "created": int(time.time()),
                "model": generation.model, "choices": [choice], "usage": self._usage(request)}

    def _output(self, request: SimRequest, generation: Generation) -> OutputText:
        if generation.greedy_output is not None:
            return generation.greedy_output
        return OutputText(hash(request.request_id) & 0xFFFF)

    async def _stream(self, request: SimRequest, sink: object,
                      generation: Generation) -> AsyncIterator[str]:
        from dspark_tui.sim.engine import TokenSink

        assert isinstance(sink, TokenSink)
        created = int(time.time())
        kind = "chat.completion.chunk" if generation.chat else "text_completion"
        head = (f'data: {{"id":"{request.request_id}","object":"{kind}","created":{created},'
                f'"model":{self.model_json},"choices":[{{"index":0,')
        if generation.chat:
            yield (head + '"delta":{"role":"assistant","content":""},"logprobs":null,'
                   '"finish_reason":null}]}\n\n')
        output = self._output(request, generation)
        cursor = 0
        finished = False
        self.streams += 1
        every = self.config.faults.cut_stream_every
        cut = every is not None and every > 0 and self.streams % every == 0
        try:
            while True:
                await sink.ready.wait()
                count = sink.take()
                reason = sink.finish_reason
                text = output.text(cursor, count)
                cursor += count
                finish = "null" if reason is None else f'"{reason}"'
                if generation.chat:
                    yield (f'{head}"delta":{{"content":"{text}"}},"logprobs":null,'
                           f'"finish_reason":{finish}}}]}}\n\n')
                else:
                    yield (f'{head}"text":"{text}","logprobs":null,"finish_reason":{finish},'
                           f'"stop_reason":null}}],"usage":null}}\n\n')
                if cut:
                    log("WARNING", "api_server.py", f"{request.request_id}: stream cut (simulated)")
                    raise StreamCut(request.request_id)  # the server drops the connection
                if reason is not None:
                    break
            if generation.include_usage:
                usage = json.dumps(self._usage(request), separators=(",", ":"))
                yield (f'data: {{"id":"{request.request_id}","object":"{kind}",'
                       f'"created":{created},"model":{self.model_json},"choices":[],'
                       f'"usage":{usage}}}\n\n')
            yield "data: [DONE]\n\n"
            finished = True
        finally:
            if not finished:
                self.engine.abort(request)
        self.on_request_done()
