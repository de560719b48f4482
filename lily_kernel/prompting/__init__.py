"""Prompting: pure assembly of the system context and the per-turn model request."""

from lily_kernel.prompting.request import EMPTY_REQUEST_TEXT, ModelRequest, build_model_request
from lily_kernel.prompting.system import (
    LOAD_SKILL,
    SKILL_FILES_NOTE,
    Catalog,
    build_catalog,
    build_system_prompt,
    load_skill_tool,
)

__all__ = [
    "EMPTY_REQUEST_TEXT",
    "LOAD_SKILL",
    "SKILL_FILES_NOTE",
    "Catalog",
    "ModelRequest",
    "build_catalog",
    "build_model_request",
    "build_system_prompt",
    "load_skill_tool",
]
