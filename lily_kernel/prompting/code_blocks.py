"""Code from a model that cannot call tools: the offer of one fenced ```python block in
what it reads, the block read back from its answer, and the run's result as it reads it.

The pattern of smolagents' code agents, cut to one step: the rules (in the system
context) and a short worked example (as turns before the conversation: a small model
copies the shape of an exchange far more readily than it follows a rule) offer the
block; Lily runs the first python block of the answer through the `python` tool's gate
and gives the model its output for one more answer, which runs nothing. Pure: messages
and text in, messages and a `FencedCode` out. The fence is read as CommonMark reads it
(markdown-it-py, the renderer of the person's view), so the block that runs is the block
the person saw as code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CODE_LANGUAGES",
    "CODE_RULES",
    "FencedCode",
    "code_result_message",
    "first_python_block",
    "offer_code",
    "without_block",
]

# A fence's first word that makes it Python (compared lower-case).
CODE_LANGUAGES = frozenset({"python", "py", "python3", "ipython"})

CODE_RULES = """\
# Running code

- You can run Python code: write one fenced ```python block that prints what you need. \
Lily runs the first such block of your answer (the person may be asked first) and gives \
you its output; then you answer from that output.
- Use code for arithmetic, unit conversions, dates and data files; never compute them \
in your head.
- The code runs in a sandbox: the network reaches only hosts the person allows (a \
refusal says so); the working directory holds the person's files."""

_RAN = "Output of your code:\n```text\n{result}\n```\nAnswer my question from this output, \
in words. No more code will run."
_NOT_RAN = "Your code did not run: {result}\nAnswer my question without running code."

# The worked example: a question answered in words (without it the embedded model
# answered "what is a notebook?" with the example's sum), one exchange that runs code and
# answers from its output, then a request answered with the block alone. Output worded as
# a real run's (prompting/runs.py). Chosen on the embedded model: benchmarks/code_answers.py.
_EXAMPLE: tuple[tuple[str, str], ...] = (
    ("user", "Hi! What is a notebook?"),
    ("assistant", "Hello! A notebook is a document of cells that mixes text, code and its "
                  "results."),
    ("user", "What is 12 * 34?"),
    ("assistant", "```python\nprint(12 * 34)\n```"),
    ("user", _RAN.format(result="[ran]\n408")),
    ("assistant", "12 * 34 = 408."),
    ("user", "How many days are there from 1 Jan 2024 to 1 Mar 2024?"),
    ("assistant", "```python\nfrom datetime import date\n"
                  "print((date(2024, 3, 1) - date(2024, 1, 1)).days)\n```"),
    ("user", _RAN.format(result="[ran]\n60")),
    ("assistant", "There are 60 days from 1 January to 1 March 2024."),
)


def offer_code(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """`messages` (the system context first) as a model offered the code block reads
    them: the rules after the system context, the worked example right after it."""
    if not messages or messages[0].get("role") != "system":
        raise ValueError("the messages start with the system context")
    system = str(messages[0].get("content") or "").rstrip("\n")
    rules = {"role": "system", "content": f"{system}\n\n{CODE_RULES}\n" if system
             else f"{CODE_RULES}\n"}
    example = [{"role": role, "content": text} for role, text in _EXAMPLE]
    return [rules, *example, *messages[1:]]


def code_result_message(result: str, ran: bool) -> dict[str, Any]:
    """What the model reads after its block: the run's result (`result`, as the
    `python` tool gives it) and that it now answers in words; or why it did not run."""
    if ran:
        return {"role": "user", "content": _RAN.format(result=result.rstrip("\n"))}
    return {"role": "user", "content": _NOT_RAN.format(result=result.strip())}


@dataclass(frozen=True)
class FencedCode:
    """A python block of an answer: its code (without the newline before the closing
    fence), and the lines it spans (`start` to `end`,
    the fences included, from 0, `end` excluded) of the answer split at newlines."""

    code: str
    start: int
    end: int


def _lines(text: str) -> list[str]:
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _closed(lines: list[str], start: int, end: int, markup: str) -> bool:
    """Whether the fence opened on line `start` is closed on line `end - 1` (CommonMark:
    the same character, at least as many; an unclosed fence runs to its container's
    end)."""
    if end - start < 2 or end > len(lines):
        return False
    last = lines[end - 1].strip()  # (a list item's indentation before it)
    return len(last) >= len(markup) and set(last) == {markup[0]}


def first_python_block(text: str, *, open_end: bool = False) -> FencedCode | None:
    """The first fenced block of `text` whose language is Python and whose code is not
    blank, as CommonMark reads it; None when there is none.

    Not taken: a block inside a quotation (`> ```python`: an example quoted, not code
    offered to run), a python fence inside another fence (it is that fence's text), an
    indented code block (no language), a blank block, and a fence left open, unless
    `open_end`: the answer ended of its own accord (small models often leave out the
    closing fence; CommonMark then runs the block to the end, and so it shows), not cut
    at its token limit, where the code is likely unfinished."""
    from markdown_it import MarkdownIt  # with the first answer to read, as for its view

    lines = _lines(text)
    quoted = 0
    for token in MarkdownIt("commonmark").parse("\n".join(lines)):
        if token.type == "blockquote_open":
            quoted += 1
        elif token.type == "blockquote_close":
            quoted -= 1
        elif token.type == "fence" and not quoted and token.map is not None:
            words = token.info.split()
            if not words or words[0].lower() not in CODE_LANGUAGES:
                continue
            start, end = token.map
            if token.content.strip() and (open_end or _closed(lines, start, end, token.markup)):
                return FencedCode(token.content.removesuffix("\n"), start, end)
    return None


def without_block(text: str, block: FencedCode) -> str:
    """`text` without the block's lines (the person sees its code where it runs)."""
    lines = _lines(text)
    return "\n".join([*lines[:block.start], *lines[block.end:]]).strip()
