"""Asking the person before a tool call the policy puts under `ask`: the question, the answer.

The question names exactly what would run (for a skill script: the skill, the script,
its arguments, and whether it is sandboxed). It reaches the person through the cell
sink's `ask` (Jupyter's input request); where no one can answer, the call is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from lily_kernel.tools.scripts import ScriptPlan

if TYPE_CHECKING:
    from lily_kernel.runtime.runtime import CellSink

__all__ = ["Approval", "ask_person", "script_question", "tool_question"]

YES = frozenset({"y", "yes"})


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


def tool_question(name: str, arguments: dict[str, Any]) -> str:
    shown = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
    if len(shown) > 500:
        shown = shown[:500] + " ..."
    return f"Let the model run the tool '{name}' with {shown}? [y/N] "


@dataclass(frozen=True)
class Approval:
    """What became of a question: approved, declined, or no one could answer."""

    outcome: Literal["approved", "declined", "unanswerable"]
    question: str

    @property
    def approved(self) -> bool:
        return self.outcome == "approved"


async def ask_person(sink: CellSink, question: str) -> Approval:
    """Ask through the sink; only `y`/`yes` approves."""
    answer = await sink.ask(question)
    if answer is None:
        return Approval("unanswerable", question)
    return Approval("approved" if answer.strip().lower() in YES else "declined", question)
