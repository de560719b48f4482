"""A loopback HTTP server speaking the OpenAI chat-completions API, with scripted replies.

Tests (and benchmarks) point litellm at it with `model="openai/<name>"` and
`api_base=server.base_url`. Every request body is recorded, so tests assert on what
the model was sent. Replies are scripted in order: text, tool calls, HTTP faults,
malformed or truncated streams, slow streams, bodies that are not JSON (or HTML with
status 200), replies without choices, and echoes of the caller's key (whole or without
its prefix). `default` answers any request nothing was scripted for. Standard library
only; binds 127.0.0.1.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["OpenAIServer", "Reply", "fresh_tokens", "tool_call"]


def tool_call(name: str, arguments: dict[str, Any], call_id: str | None = None) -> dict[str, Any]:
    return {"id": call_id or f"call_{name}", "name": name, "arguments": json.dumps(arguments)}


@dataclass
class Reply:
    """One scripted answer to one request."""

    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200  # non-200: an error response of that status
    error_message: str = "scripted failure"
    error_type: str | None = None
    error_code: str | None = None
    delay: float = 0.0  # before the response starts
    chunk_delay: float = 0.0  # between stream chunks
    pieces: int = 3  # how many chunks the text is split into when streaming
    malformed: bool = False  # a stream chunk that is not JSON
    truncate: bool = False  # stream stops mid-way without finish_reason or [DONE]
    empty: bool = False  # a 200 response with no choices at all (streamed: chunks without)
    body: str | None = None  # a raw body sent as is with `status` (malformed JSON, HTML)
    content_type: str = "application/json"  # of `body`
    echo_key_from: int | None = None  # append the caller's key from this index (4: no `sk-x`)
    usage: dict[str, int] = field(
        default_factory=lambda: {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    )


def fresh_tokens(text: str = "Answer") -> Callable[[dict[str, Any]], Reply]:
    """A `default` that answers every request anew: `<text> <token>`, the token fresh
    each time (a recorded answer given again can be told from a new one)."""
    count = itertools.count(1)

    def answer(body: dict[str, Any]) -> Reply:
        return Reply(text=f"{text} {next(count)}-{uuid.uuid4().hex[:8]}")

    return answer


class OpenAIServer:
    """Start with `with OpenAIServer() as server:`; script replies with `server.script(...)`.
    `default` answers what nothing was scripted for: a Reply, or a function of the
    request's body giving one (`fresh_tokens()`)."""

    def __init__(self, default: Reply | Callable[[dict[str, Any]], Reply] | None = None
                 ) -> None:
        self.default = default
        self.replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def __enter__(self) -> OpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    # --- request handling ------------------------------------------------------

    def _next(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            if self.replies:
                return self.replies.popleft()
        if isinstance(self.default, Reply):
            return self.default
        if self.default is not None:
            return self.default(body)
        return Reply(status=500, error_message="the test server has no scripted reply left")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                reply = server._next(body, {k.lower(): v for k, v in self.headers.items()})
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.echo_key_from is not None:
                    key = self.headers.get("Authorization", "").removeprefix("Bearer ")
                    echoed = key[reply.echo_key_from:]
                    reply = replace(reply, error_message=f"{reply.error_message} {echoed}",
                                    text=f"{reply.text} {echoed}" if reply.text else "")
                try:
                    if reply.body is not None:
                        self._raw(reply)
                    elif reply.status != 200:
                        self._error(reply)
                    elif body.get("stream"):
                        self._stream(body, reply)
                    else:
                        self._json(200, _completion(body, reply))
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client went away (an interrupt): nothing to do

            def _json(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _raw(self, reply: Reply) -> None:
                data = reply.body.encode() if reply.body is not None else b""
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _error(self, reply: Reply) -> None:
                self._json(reply.status, {"error": {
                    "message": reply.error_message, "type": reply.error_type,
                    "code": reply.error_code, "param": None}})

            def _stream(self, body: dict[str, Any], reply: Reply) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                chunks = _chunks(body, reply)
                for index, chunk in enumerate(chunks):
                    if reply.truncate and index == len(chunks) // 2:
                        self.wfile.flush()
                        return  # connection closes: no finish_reason, no [DONE]
                    if reply.malformed and index == 1:
                        self.wfile.write(b"data: {this is not json\n\n")
                        self.wfile.flush()
                        return
                    self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                    self.wfile.flush()
                    if reply.chunk_delay:
                        time.sleep(reply.chunk_delay)
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        return Handler


def _split(text: str, pieces: int) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _base(body: dict[str, Any]) -> dict[str, Any]:
    return {"id": "chatcmpl-test", "created": 1_700_000_000, "model": body.get("model", "test")}


def _completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    if reply.empty:
        return {**_base(body), "object": "chat.completion", "choices": [], "usage": reply.usage}
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": c["id"], "type": "function",
             "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in reply.tool_calls
        ]
    finish = "tool_calls" if reply.tool_calls else "stop"
    return {**_base(body), "object": "chat.completion", "usage": reply.usage,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}]}


def _chunks(body: dict[str, Any], reply: Reply) -> list[dict[str, Any]]:
    base = {**_base(body), "object": "chat.completion.chunk"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    if reply.empty:  # chunks that carry no choice at all, then the end of the stream
        return [{**base, "choices": []}, {**base, "choices": [], "usage": reply.usage}]
    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": piece}) for piece in _split(reply.text, reply.pieces)]
    for index, call in enumerate(reply.tool_calls):
        out.append(chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                          "function": {"name": call["name"], "arguments": ""}}]}))
        for piece in _split(call["arguments"], 2):
            out.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
    out.append(chunk({}, "tool_calls" if reply.tool_calls else "stop"))
    if (body.get("stream_options") or {}).get("include_usage"):
        out.append({**base, "choices": [], "usage": reply.usage})
    return out
