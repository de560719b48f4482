"""The conversational path (a model turn). Until a model is configured it explains how."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lily_kernel.errors import ModelNotConfiguredError

if TYPE_CHECKING:
    from lily_kernel.prompting import ModelRequest
    from lily_kernel.runtime.runtime import CellSink, LilyRuntime

__all__ = ["NO_MODEL_MESSAGE", "converse"]

NO_MODEL_MESSAGE = (
    "Error: no model configured. Set LILY_MODEL to a litellm model name "
    "(e.g. openai/gpt-4o-mini) and the provider's key variable (e.g. OPENAI_API_KEY) "
    "before starting Jupyter, or add `model: openai/gpt-4o-mini` to lily.yaml in the "
    "notebook's folder; then restart the kernel. Commands (/help) work without a model."
)


async def converse(
    runtime: LilyRuntime, text: str, request: ModelRequest | None, sink: CellSink
) -> None:
    if runtime.session.model_config.model is None:
        raise ModelNotConfiguredError(NO_MODEL_MESSAGE)
    raise ModelNotConfiguredError(NO_MODEL_MESSAGE)
