"""What the model reads of a tool call: the tool's result, or why there is none.

The one wording of refusals and failures (people read the same reasons in the
notebook's notices and the log's `error`).
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "declined_reason",
    "not_json_reason",
    "policy_reason",
    "tool_result_text",
    "unanswerable_reason",
]

_POLICY = {
    "unknown": "unknown tool '{name}'",
    "denied": "tool '{name}' is not allowed by the tool policy",
    "owner_only": "tool '{name}' is owner-only: only the person can run it, with a command",
    "needs_skill": ("tool '{name}' works only while a skill is active (and its "
                    "allowed-tools and disallowed-tools permit it)"),
    "narrowed": "tool '{name}' is not available while the active skill narrows the tools",
}


def policy_reason(name: str, why: str) -> str:
    """Why the gate refused a call of `name` (`why`: a tools.policy.Refusal)."""
    return _POLICY[why].format(name=name)


def tool_result_text(status: Literal["ran", "refused", "failed"], text: str) -> str:
    """A tool call's result as the model reads it."""
    if status == "refused":
        return f"Refused: {text}."
    if status == "failed":
        return f"Error: {text}"
    return text


def not_json_reason(problem: str) -> str:
    """Arguments that are not a JSON object (the call never reached its tool)."""
    return f"the arguments are not a JSON object ({problem})."


def declined_reason(action: str) -> str:
    """The person said no (`action`: a noun phrase, `running the command "ls"`)."""
    return f"the person declined {action}"


_NOTEBOOK_UNATTENDED = ("this notebook runs without input requests (nbclient, papermill, "
                        "`lily run`, or a frontend without stdin)")


def unanswerable_reason(action: str, tool: str, why: str | None,
                        nobody: str | None = None) -> str:
    """Why a call that needs the person's yes is refused where no one can answer
    (`nobody`: why not, for a notebook by default), and how to allow it without asking
    where anything can (`why`: tools.policy.AskReason, None when the tool asks of its
    own accord)."""
    where = {"policy": " (tools.ask in lily.yaml)",
             "default": " (asked by default)",
             "untrusted": " (this folder is not trusted)",
             "call": ""}.get(why or "", "")
    reason = (f"{action} needs the person's approval{where}, and no one can answer here: "
              f"{nobody or _NOTEBOOK_UNATTENDED}")
    if why == "policy":
        reason += f". To allow it without asking, name {tool} in tools.allow instead"
    elif why == "default":
        reason += (f". To allow it without asking, name {tool} in tools.allow (LILY_TOOLS_ALLOW, "
                   "or a trusted lily.yaml), or turn on full auto (`/policy auto`, "
                   "LILY_POLICY=auto)")
    elif why == "untrusted":
        reason += ". To allow it without asking, trust the folder (`lily trust` in it)"
    return reason
