"""The model seam: the ChatModel interface, its litellm implementation (lazy), a scripted one.

`lily_kernel.llm.litellm_model` is not imported here: importing it must wait for the
first conversational cell; the seam's values (`base.py`) and the scripted model load with
their first use (a kernel starts, and answers a command, without either).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lily_kernel.config import ModelConfig
from lily_kernel.errors import ModelError, ModelFault
from lily_kernel.llm.local_files import local_model_file

if TYPE_CHECKING:  # loaded by __getattr__ below, with their first use
    from lily_kernel.llm.base import ChatModel, ChatRequest, ChatResponse, ToolCall, Usage
    from lily_kernel.llm.scripted import ScriptedModel

_MODULE_OF = {"ChatModel": "base", "ChatRequest": "base", "ChatResponse": "base",
              "ToolCall": "base", "Usage": "base", "ScriptedModel": "scripted"}

__all__ = ["ChatModel", "ChatRequest", "ChatResponse", "ScriptedModel", "ToolCall", "Usage",
           "create_model", "uses_litellm", "warm_up"]


def create_model(config: ModelConfig, prefix_cache: Path | None = None) -> ChatModel:
    """The real model for a configuration, loaded now (call it off the event loop):
    `local` or `local/<file.gguf>` runs in-process with llama.cpp, any other name goes
    through litellm (imported now, on first use). `prefix_cache`: where a local model
    keeps the state of system contexts it has read, across kernels."""
    assert config.model is not None
    try:
        file = local_model_file(config.model)
    except FileNotFoundError as exc:
        raise ModelError(ModelFault.LOCAL_MODEL, str(exc)) from None
    if file is not None:
        from lily_kernel.llm.local_model import LocalModel

        model = LocalModel(file, context_window=config.context_window,
                           temperature=config.temperature, max_tokens=config.max_tokens,
                           prefix_cache=prefix_cache, threads=config.local_threads)
        model.load()
        return model
    from lily_kernel.llm.litellm_model import LiteLLMModel

    return LiteLLMModel(config)


def uses_litellm(config: ModelConfig) -> bool:
    """Whether this configuration's model is reached through litellm (a remote one);
    a local one is loaded on the first chat cell and never warmed."""
    return config.model is not None and not config.is_local


def warm_up(config: ModelConfig) -> None:
    """Import what the first call of `create_model(config)` needs: litellm, and the
    OpenAI client's chat resources that its first request would otherwise import."""
    if uses_litellm(config):
        from lily_kernel.llm.litellm_model import warm_up_imports

        warm_up_imports()


def __getattr__(name: str) -> Any:
    """A name of the seam (`base.py`) or the scripted model, its module loaded now."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"lily_kernel.llm.{module}"), name)
