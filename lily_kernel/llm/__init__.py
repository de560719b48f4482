"""The model seam: the ChatModel interface, its litellm implementation (lazy), a scripted one.

`lily_kernel.llm.litellm_model` is not imported here: importing it must wait for the
first conversational cell.
"""

from lily_kernel.llm.base import ChatModel, ChatRequest, ChatResponse, ToolCall, Usage
from lily_kernel.llm.scripted import ScriptedModel
from lily_kernel.config import ModelConfig

__all__ = ["ChatModel", "ChatRequest", "ChatResponse", "ScriptedModel", "ToolCall", "Usage",
           "create_model"]


def create_model(config: ModelConfig) -> ChatModel:
    """The real model for a configuration (imports litellm now, on first use)."""
    from lily_kernel.llm.litellm_model import LiteLLMModel

    return LiteLLMModel(config)
