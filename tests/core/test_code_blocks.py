"""prompting/code_blocks.py: the python block a model without tools offers to run, read
as CommonMark reads it (hostile answers included), and the words around it."""

from __future__ import annotations

import pytest

from lily_kernel.prompting.code_blocks import (
    CODE_RULES,
    FencedCode,
    code_result_message,
    first_python_block,
    offer_code,
    without_block,
)


def code(text: str) -> str | None:
    block = first_python_block(text)
    return block.code if block is not None else None


@pytest.mark.parametrize(("answer", "expected"), [
    ("Let me compute it.\n```python\nprint(17 * 23)\n```\nThat prints it.", "print(17 * 23)"),
    ("```py\nprint(1)\n```", "print(1)"),
    ("```python3\nprint(1)\n```", "print(1)"),
    ("```Python title=calc\nprint(1)\n```", "print(1)"),
    ("~~~python\nprint(1)\n~~~", "print(1)"),  # CommonMark's other fence
    ("```python\r\nprint(1)\r\n```\r\n", "print(1)"),
    ("1. Run this:\n   ```python\n   print(1)\n   ```\n", "print(1)"),  # in a list item
], ids=["python", "py", "python3", "info-words", "tildes", "crlf", "list-item"])
def test_the_python_block_is_found(answer: str, expected: str) -> None:
    assert code(answer) == expected


def test_of_several_blocks_the_first_python_one_runs() -> None:
    answer = ("```bash\nls\n```\n```python\nprint('first')\n```\n"
              "```python\nprint('second')\n```")
    assert code(answer) == "print('first')"


def test_a_longer_fence_holds_backticks_and_a_shorter_fence_inside() -> None:
    answer = "````python\nprint('```')\n```\nx = 1\n````\n"
    assert code(answer) == "print('```')\n```\nx = 1"


def test_an_empty_block_is_passed_over_for_the_next() -> None:
    assert code("```python\n```\n```python\n   \n```\n```python\nprint(3)\n```") == \
        "print(3)"
    assert code("```python\n\n```") is None


@pytest.mark.parametrize("answer", [
    "```python\nprint(1)\n",  # the answer was cut short: its code likely unfinished
    "Here:\n```python\nfor i in range(3):\n    print(i)",
    "```python\nprint(1)\n~~~\n",  # a tilde line does not close a backtick fence
    "````python\nprint(1)\n```\n",  # nor a shorter fence
], ids=["unclosed", "unclosed-after-text", "other-character", "shorter"])
def test_a_fence_left_open_does_not_run(answer: str) -> None:
    assert first_python_block(answer) is None


def test_a_fence_left_open_runs_to_the_end_of_an_answer_that_ended_of_itself() -> None:
    answer = "Here:\n```python\nfor i in range(3):\n    print(i)\n"
    block = first_python_block(answer, open_end=True)
    assert block == FencedCode("for i in range(3):\n    print(i)", 1, 4)
    assert without_block(answer, block) == "Here:"
    assert code("```python\n") is None and first_python_block("```python\n", open_end=True) \
        is None  # blank all the same
    # A closed block before it is still the first.
    assert first_python_block("```python\nprint(1)\n```\n```python\nprint(2)",
                              open_end=True) == FencedCode("print(1)", 0, 3)


@pytest.mark.parametrize("answer", [
    "As the docs show:\n> ```python\n> import os; os.remove('x')\n> ```\n",
    "An example answer:\n\n```markdown\n```python\nprint(1)\n```\n```\n",
    "Indented:\n\n    print(1)\n",
    "```bash\nrm -rf /\n```",
    "```\nprint(1)\n```",  # no language: not offered as Python
    "Inline ```python print(1)``` is not a block.",
    "",
], ids=["quoted", "inside-another-fence", "indented", "bash", "no-language", "inline",
        "empty"])
def test_what_is_not_a_python_block_does_not_run(answer: str) -> None:
    assert first_python_block(answer) is None


def test_the_answer_is_kept_without_its_block() -> None:
    answer = "I'll compute it.\n\n```python\nprint(17 * 23)\n```\n\nRunning it now."
    block = first_python_block(answer)
    assert block == FencedCode("print(17 * 23)", 2, 5)
    assert without_block(answer, block) == "I'll compute it.\n\n\nRunning it now."
    only = "```python\nprint(1)\n```"
    only_block = first_python_block(only)
    assert only_block is not None and without_block(only, only_block) == ""


def test_the_offer_follows_the_system_context_and_keeps_the_conversation() -> None:
    messages = [{"role": "system", "content": "# Persona\n\nBe brief.\n"},
                {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"},
                {"role": "user", "content": "What is 17 * 23?"}]
    offered = offer_code(messages)
    assert offered[0] == {"role": "system", "content": f"# Persona\n\nBe brief.\n\n{CODE_RULES}\n"}
    assert offered[-3:] == messages[1:]
    example = offered[1:-3]
    assert [m["role"] for m in example] == ["user", "assistant"] * 5
    # A question answered in words; the example's code is found as the model's is.
    assert code(example[1]["content"]) is None
    assert code(example[3]["content"]) == "print(12 * 34)"
    assert messages[0]["content"] == "# Persona\n\nBe brief.\n"  # not changed in place
    assert offer_code([{"role": "system", "content": ""}])[0]["content"] == f"{CODE_RULES}\n"
    with pytest.raises(ValueError):
        offer_code([{"role": "user", "content": "no system"}])


def test_the_model_reads_the_output_or_why_nothing_ran() -> None:
    ran = code_result_message("[ran]\n391\n", ran=True)
    assert ran["role"] == "user"
    assert ran["content"].startswith("Output of your code:\n```text\n[ran]\n391\n```")
    assert "No more code will run." in ran["content"]
    refused = code_result_message("Refused: the person declined running Python code.",
                                  ran=False)
    assert refused["content"].startswith(
        "Your code did not run: Refused: the person declined running Python code.")
    assert "without running code" in refused["content"]
