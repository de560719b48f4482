"""The real ChatModel: litellm, imported on first use, with bounded retries.

litellm costs ~3 s and ~165 MB to import, so nothing imports this module before the
first conversational cell. Before the import, the environment is set so litellm
neither fetches its price list over the network nor loads `.env` files.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import random
from collections.abc import Callable
from typing import Any

from lily_kernel.config import LITELLM_KEYS, ModelConfig
from lily_kernel.errors import ModelError, ModelFault
from lily_kernel.llm.base import ChatRequest, ChatResponse, ToolCall, Usage
from lily_kernel.llm.faults import TRANSIENT_KINDS, model_error, secret_values

__all__ = ["LITELLM_FAULTS", "BadResponseError", "IncompleteStreamError", "LiteLLMModel",
           "import_litellm"]

# litellm's exception classes, by name, in the order they are tried (subclasses first).
# Looked up by name because litellm exposes them only on `litellm.exceptions`; a test
# fails if the pinned litellm lacks one, so a rename cannot fall through silently.
LITELLM_FAULTS: tuple[tuple[str, ModelFault], ...] = (
    ("ContextWindowExceededError", ModelFault.CONTEXT_WINDOW),
    ("AuthenticationError", ModelFault.AUTH),
    ("PermissionDeniedError", ModelFault.AUTH),
    ("RateLimitError", ModelFault.RATE_LIMIT),
    ("MidStreamFallbackError", ModelFault.BAD_RESPONSE),
    ("APIResponseValidationError", ModelFault.BAD_RESPONSE),
    ("APIConnectionError", ModelFault.CONNECTION),
    ("NotFoundError", ModelFault.NOT_FOUND),
    ("BadRequestError", ModelFault.BAD_REQUEST),
    ("UnprocessableEntityError", ModelFault.BAD_REQUEST),
    ("InternalServerError", ModelFault.SERVER),
    ("ServiceUnavailableError", ModelFault.SERVER),
    ("BadGatewayError", ModelFault.SERVER),
)
# Where a provider fault comes from: exceptions raised by these packages' code (or of
# their classes) are translated into ModelError; anything else is a bug in Lily and
# keeps its own type and traceback.
PROVIDER_PACKAGES = frozenset({"litellm", "openai", "httpx", "httpcore", "anyio", "aiohttp"})


def import_litellm() -> Any:
    """Import litellm with its network and .env behaviour switched off."""
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    os.environ["LITELLM_MODE"] = "PRODUCTION"
    import litellm

    litellm.suppress_debug_info = True
    litellm.set_verbose = False  # type: ignore[attr-defined]
    litellm.telemetry = False
    return litellm


def warm_up_imports() -> None:
    """Import litellm and what its first OpenAI-compatible request imports lazily: the
    OpenAI client's chat resources, the async transport's backend, and the tokenizer
    litellm's cost bookkeeping loads (~0.7 s on the first call otherwise)."""
    import importlib

    import_litellm()
    for name in ("openai.resources.chat", "anyio._backends._asyncio",
                 "litellm.litellm_core_utils.default_encoding", "litellm.llms.litellm_proxy"):
        importlib.import_module(name)


class BadResponseError(Exception):
    """The provider's answer cannot be used; the message (Lily's words) says why."""


class IncompleteStreamError(BadResponseError):
    """The provider's stream ended without a finish reason; the message says why."""


_NOT_A_COMPLETION = "Empty or invalid response from LLM endpoint"


def _stream_problem(response: Any, answered: bool) -> str:
    """What an unfinished stream was: another kind of body, no answer, or cut short."""
    http = getattr(getattr(response, "completion_stream", None), "response", None)
    content_type = str(getattr(http, "headers", {}).get("content-type", ""))
    if content_type and "text/event-stream" not in content_type:
        kind = content_type.split(";")[0].strip()
        what = "an HTML page" if "html" in kind else f"an {kind} body"
        return (f"the provider answered with {what} (HTTP {getattr(http, 'status_code', '?')}) instead of a "
                "stream of answer chunks; check LILY_API_BASE / api_base")
    if not answered:
        return ("the provider's stream ended without any answer (no choices, no finish "
                "reason)")
    return "the stream ended before the answer was finished"


def _top_package(name: str | None) -> str:
    return (name or "").split(".")[0]


def from_provider(exc: BaseException) -> bool:
    """Whether `exc` is the provider's fault (raised by the provider stack, by the
    network, or found wrong in its answer), not a bug in Lily."""
    if isinstance(exc, (BadResponseError, ConnectionError, TimeoutError)):
        return True
    if _top_package(type(exc).__module__) in PROVIDER_PACKAGES:
        return True
    frame = exc.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next  # the innermost frame: where it was raised
    return frame is not None and _top_package(
        frame.tb_frame.f_globals.get("__name__")) in PROVIDER_PACKAGES


def _causes(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _fault_kind(litellm: Any, exc: BaseException) -> ModelFault:
    """Which fault an exception from litellm is.

    litellm wraps transport failures in other classes (a refused connection arrives as
    InternalServerError "Connection error."), so the cause chain is read first.
    """
    import httpx
    import openai

    if isinstance(exc, BadResponseError):
        return ModelFault.BAD_RESPONSE
    status = getattr(exc, "status_code", None)
    # The HTTP status decides first: a 401 whose body says `invalid_request_error` is
    # still a rejected key, and litellm wraps a 403 in its generic APIError.
    if status in (401, 403):
        return ModelFault.AUTH
    # litellm's own verdict on a 200 that is no completion (an HTML page, say), which
    # it reports with a made-up 500: retrying would get the same page.
    if _NOT_A_COMPLETION in str(exc):
        return ModelFault.BAD_RESPONSE
    causes = _causes(exc)
    timeouts = (openai.APITimeoutError, httpx.TimeoutException, TimeoutError)
    if any(isinstance(c, timeouts) for c in causes):
        return ModelFault.TIMEOUT
    connection = (openai.APIConnectionError, httpx.TransportError, ConnectionError, OSError)
    if any(isinstance(c, json.JSONDecodeError) for c in causes):
        return ModelFault.BAD_RESPONSE
    if any(isinstance(c, connection) for c in causes[1:]) or type(exc) is openai.APIConnectionError:
        return ModelFault.CONNECTION
    # A bare OpenAIError is raised by the client before any request (e.g. no key).
    client_side = [c for c in causes if type(c) is openai.OpenAIError]
    if client_side:
        text = str(client_side[0]).lower()
        auth = "credential" in text or "api_key" in text
        return ModelFault.AUTH if auth else ModelFault.BAD_REQUEST
    for name, kind in LITELLM_FAULTS:
        if isinstance(exc, getattr(litellm.exceptions, name)):
            return kind
    if isinstance(status, int) and status >= 500:
        return ModelFault.SERVER
    return ModelFault.BAD_RESPONSE


class LiteLLMModel:
    """Calls `litellm.acompletion`; streams when the config says so."""

    def __init__(self, config: ModelConfig, litellm: Any | None = None) -> None:
        assert config.model is not None
        self.name = config.model
        self.config = config
        self._litellm = litellm or import_litellm()
        info = self._model_info()
        # As configured (`tool_calls`), else what litellm knows of the model; one it does
        # not know is taken to call tools (OpenAI-compatible servers mostly do) and to
        # have no known window.
        known = bool(info.get("supports_function_calling", True)) if info else True
        self.supports_tools = known if config.tool_calls is None else config.tool_calls
        window = info.get("max_input_tokens") if info else None
        self.context_window: int | None = config.context_window or (
            window if isinstance(window, int) and window > 0 else None)

    def _model_info(self) -> dict[str, Any]:
        try:
            info = self._litellm.get_model_info(self.config.model)
        except Exception:  # noqa: BLE001 - litellm raises several kinds for "unknown"
            return {}
        return dict(info) if info else {}

    async def complete(self, request: ChatRequest, on_text: Callable[[str], None]) -> ChatResponse:
        """One call, retried on transient faults before any text has been shown."""
        attempts = self.config.retries + 1
        for attempt in range(1, attempts + 1):
            shown: list[str] = []

            def record(delta: str) -> None:
                shown.append(delta)  # noqa: B023 - used within this attempt only
                on_text(delta)

            try:
                return await self._call(request, record)
            except ModelError:
                raise
            except (asyncio.CancelledError, KeyboardInterrupt):
                raise
            except Exception as exc:
                if not from_provider(exc):
                    raise  # a bug in Lily: its own type and traceback
                kind = _fault_kind(self._litellm, exc)
                # Text already streamed to the person cannot be taken back: no retry then.
                if kind in TRANSIENT_KINDS and attempt < attempts and not shown:
                    await asyncio.sleep(self.config.retry_backoff * 2 ** (attempt - 1)
                                        * (1 + random.random() / 4))
                    continue
                raise model_error(kind, str(exc), secret_values(), attempt,
                                  by_provider=not isinstance(exc, BadResponseError)) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _kwargs(self, request: ChatRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.config.model,
            "messages": request.messages,
            "timeout": self.config.request_timeout,
            "max_retries": 0,  # retries are ours, counted and backed off above
            "stream": self.config.stream,
        }
        if request.tools:
            kwargs["tools"] = request.tools
        if request.json_schema is not None:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "declaration", "schema": request.json_schema},
            }
        if self.config.stream:
            kwargs["stream_options"] = {"include_usage": True}
        for key in LITELLM_KEYS:  # the model keys litellm takes as they are
            value = getattr(self.config, key)
            if value is not None:
                kwargs[key] = value
        if request.max_tokens is not None:
            kwargs["max_tokens"] = request.max_tokens
        return kwargs

    async def _call(self, request: ChatRequest, on_text: Callable[[str], None]) -> ChatResponse:
        litellm = self._litellm
        response = await litellm.acompletion(**self._kwargs(request))
        if not self.config.stream:
            return self._priced(_to_response(
                response, getattr(response.choices[0], "finish_reason", None)
                if response.choices else None), response)
        chunks = []
        answered = False
        async for chunk in response:
            chunks.append(chunk)
            delta = chunk.choices[0].delta if chunk.choices else None
            if delta is not None and (delta.content or getattr(delta, "tool_calls", None)):
                answered = True
            if delta is not None and delta.content:
                on_text(delta.content)
        # litellm reports "stop" even for a stream cut short; the wrapper keeps whether
        # the provider really sent a finish reason (pinned litellm; tested over HTTP).
        received = getattr(response, "received_finish_reason", "unknown")
        if received is None:
            raise IncompleteStreamError(_stream_problem(response, answered))
        built = litellm.stream_chunk_builder(chunks, messages=request.messages)
        return self._priced(_to_response(built, received), built)

    def _priced(self, result: ChatResponse, raw: Any) -> ChatResponse:
        """The response with its cost, where litellm knows the model's prices."""
        try:
            cost = float(self._litellm.completion_cost(completion_response=raw,
                                                       model=self.config.model))
        except Exception:  # noqa: BLE001 - no price known for this model
            return result
        return dataclasses.replace(result, cost=cost)


def _to_response(response: Any, finish_reason: str | None) -> ChatResponse:
    if response is None or not getattr(response, "choices", None):
        raise BadResponseError("the response has no choices")
    message = response.choices[0].message
    calls = tuple(
        ToolCall(id=c.id or f"call_{i}", name=c.function.name or "",
                 arguments=c.function.arguments or "")
        for i, c in enumerate(message.tool_calls or ())
    )
    usage = getattr(response, "usage", None)
    return ChatResponse(
        text=message.content or "",
        tool_calls=calls,
        usage=Usage(getattr(usage, "prompt_tokens", 0) or 0,
                    getattr(usage, "completion_tokens", 0) or 0),
        finish_reason=finish_reason,
    )
