"""Code from a model that cannot call tools: the first fenced python block of its answer,
run as the `python` tool runs the code of a model that calls it.

The block goes through the session's one gate (runtime/tool_gate.py) as a call of
`python` by the model: asked by default, full auto honoured, in the sandboxed kernel,
a `tool_call` and a `code_run` event, and on Run All run again from the record as any
recorded call is. The model then answers once more from the output (or from why it did
not run); that answer's code runs no more (one block a request: a small model's second
block is seldom better than its first, and each one costs the person a question). The
words are prompting/code_blocks.py's, the notice display/'s.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from lily_kernel.display import Notice
from lily_kernel.display.messages import CODE_NOT_RUN_NOTICE
from lily_kernel.prompting.code_blocks import (
    FencedCode,
    code_result_message,
    first_python_block,
)
from lily_kernel.runtime.sink import CellSink
from lily_kernel.runtime.tool_gate import ToolGate
from lily_kernel.tools import ActiveSkill, SkillSelector
from lily_kernel.tools.python import PYTHON, python_reply

__all__ = ["AnswerCode"]


@dataclass
class AnswerCode:
    """One turn's code from answers: the first block runs, none after it."""

    gate: ToolGate
    sink: CellSink
    ran: bool = False

    def take(self, text: str, *, finished: bool) -> FencedCode | None:
        """The answer `text`'s python block that runs: its first, the first time a turn
        has one; None when nothing runs (no block, or a block after the turn's one, which
        the person is told did not run). `finished`: the answer ended of its own accord
        (not at its token limit): a block it left open runs too."""
        block = first_python_block(text, open_end=finished)
        if block is None:
            return None
        if self.ran:
            self.sink.show(Notice(CODE_NOT_RUN_NOTICE))
            return None
        self.ran = True
        return block

    async def run(self, block: FencedCode, *, offered: list[str], step: int,
                  skill: ActiveSkill | None, skills: SkillSelector | None) -> dict[str, Any]:
        """`block` through the gate, shown where it runs; the message the model reads
        next. What ran, its error included, is output; refused (declined, no one to
        answer) or not started (no sandbox), the model reads why it did not run."""
        outcome, result = await self.gate.model_run(
            self.sink, PYTHON, json.dumps({"code": block.code}), offered=offered, step=step,
            skill=skill, skills=skills)
        return code_result_message(result, ran=python_reply(outcome) is not None)
