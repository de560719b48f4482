"""How a tool call is put to the person for approval: the question's wording.

The question names exactly what would run: for a skill script the skill, the script,
its arguments and whether it is sandboxed; for any other tool its name and arguments.
"""

from __future__ import annotations

import json
from typing import Any

from lily_kernel.tools.context import Question
from lily_kernel.tools.sandbox import ScriptPlan

__all__ = ["call_question", "script_question"]


def _arguments(arguments: tuple[str, ...]) -> str:
    if not arguments:
        return "no arguments"
    return "arguments " + json.dumps(list(arguments), ensure_ascii=False)


def script_question(plan: ScriptPlan) -> str:
    """`Run scripts/fill.py of skill 'pdf' with arguments ["a.pdf"]? [y/N]`, and when
    there is no sandbox, say so before the question mark."""
    where = ("" if plan.sandboxed else
             f" NOT sandboxed ({plan.sandbox_note}): it runs with your permissions, "
             "network and files.")
    return (f"Run {plan.script} of skill '{plan.skill}' with {_arguments(plan.arguments)}?"
            f"{where} [y/N] ")


def call_question(name: str, arguments: dict[str, Any]) -> Question:
    """The question for a tool with no question of its own: its name and arguments."""
    shown = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
    if len(shown) > 500:
        shown = shown[:500] + " ..."
    return Question(f"Let the model run the tool '{name}' with {shown}? [y/N] ",
                    f"the call of '{name}'")
