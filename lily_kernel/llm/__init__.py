"""The model seam: the ChatModel interface, its litellm implementation (lazy), a scripted one.

`lily_kernel.llm.litellm_model` is not imported here: importing it must wait for the
first conversational cell.
"""

from lily_kernel.config import ModelConfig
from lily_kernel.llm.base import ChatModel, ChatRequest, ChatResponse, ToolCall, Usage
from lily_kernel.llm.scripted import ScriptedModel

__all__ = ["ChatModel", "ChatRequest", "ChatResponse", "ScriptedModel", "ToolCall", "Usage",
           "create_model", "uses_litellm", "warm_up"]


def create_model(config: ModelConfig) -> ChatModel:
    """The real model for a configuration (imports litellm now, on first use)."""
    from lily_kernel.llm.litellm_model import LiteLLMModel

    return LiteLLMModel(config)


def uses_litellm(config: ModelConfig) -> bool:
    """Whether this configuration's model is reached through litellm (a remote one)."""
    return config.model is not None


def warm_up(config: ModelConfig) -> None:
    """Import what the first call of `create_model(config)` needs: litellm, and the
    OpenAI client's chat resources that its first request would otherwise import."""
    if uses_litellm(config):
        from lily_kernel.llm.litellm_model import warm_up_imports

        warm_up_imports()
