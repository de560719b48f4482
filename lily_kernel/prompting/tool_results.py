"""What the model reads of a tool call: the tool's result, or why there is none.

The one wording of refusals and failures for the model (people see the same facts in
the notebook's notices and the log's `error`, worded by the runtime).
"""

from __future__ import annotations

from typing import Literal

__all__ = ["bad_arguments_text", "declined_reason", "tool_result_text", "unanswerable_reason"]


def tool_result_text(status: Literal["ran", "refused", "failed"], text: str) -> str:
    """A tool call's result as the model reads it."""
    if status == "refused":
        return f"Refused: {text}."
    if status == "failed":
        return f"Error: {text}"
    return text


def bad_arguments_text(problem: str) -> str:
    """Arguments that are not a JSON object (the call never reached its tool)."""
    return f"Error: the arguments are not a JSON object ({problem})."


def declined_reason(action: str) -> str:
    return f"the person declined: {action} was not run"


def unanswerable_reason(action: str, tool: str) -> str:
    """Why a call that needs the person's yes is refused where no one can answer."""
    return (f"{action} needs the person's approval (tools.ask in lily.yaml), and no one can "
            "answer here: this notebook runs without input requests (nbclient, papermill, "
            f"`lily run`, or a frontend without stdin). To allow it without asking, name "
            f"{tool} in tools.allow instead")
