"""Prompting: pure assembly of what the model reads: the system context, the per-turn
request, a skill's SKILL.md, tool results and refusals. Every model-facing string is here."""

from lily_kernel.prompting.network_policy import network_refusals_text
from lily_kernel.prompting.request import EMPTY_REQUEST_TEXT, ModelRequest, build_model_request
from lily_kernel.prompting.skill_text import (
    SKILL_FILES_NOTE,
    declared_skill_message,
    loaded_skill_text,
    selection_refusal,
    skill_body,
)
from lily_kernel.prompting.system import Catalog, build_catalog, build_system_prompt
from lily_kernel.prompting.tool_results import (
    declined_reason,
    not_json_reason,
    policy_reason,
    tool_result_text,
    unanswerable_reason,
)

__all__ = [
    "EMPTY_REQUEST_TEXT",
    "SKILL_FILES_NOTE",
    "Catalog",
    "ModelRequest",
    "build_catalog",
    "build_model_request",
    "build_system_prompt",
    "declared_skill_message",
    "declined_reason",
    "loaded_skill_text",
    "network_refusals_text",
    "not_json_reason",
    "policy_reason",
    "selection_refusal",
    "skill_body",
    "tool_result_text",
    "unanswerable_reason",
]
