"""What a skill needs to run (skills/needs.py) and when a chat cell is plainly Python
(commands/python.py): the two judgements behind #29's hints for a model that cannot
run code and for a person who typed code into a chat cell."""

from __future__ import annotations

import pytest

from lily_kernel.commands.python import looks_like_python
from lily_kernel.skills.fields import tool_names_of_entries
from lily_kernel.skills.frontmatter import parse_skill_document
from lily_kernel.skills.needs import execution_needs
from tests.support.corpus import CORPUS


@pytest.mark.parametrize(("body", "needs"), [
    ("Plot it:\n\n```python\nimport matplotlib\n```\n", ("python",)),
    ("```bash\npip install rdkit\n```\n\n```py\nfrom rdkit import Chem\n```", ("python", "shell")),
    ("~~~sh\nls -la\n~~~\n", ("shell",)),
    ("```\n$ git status --short\n```\n", ("shell",)),  # an unlabelled block, a command
    ("Run `python scripts/fill.py form.pdf` then `npm test -- --watch`.", ("python", "shell")),
    ("Use `git` wisely; prefer small commits.", ()),  # a program named, nothing to run
    ("```\nsrc/\n  main.py\n```\n", ()),  # a file layout
    ("```json\n{\"a\": 1}\n```\n", ()),
    ("Write a haiku about the sea.", ()),
])
def test_what_a_skill_shows_it_runs(body: str, needs: tuple[str, ...]) -> None:
    assert execution_needs(body) == needs


def test_what_a_skill_declares_it_runs() -> None:
    assert execution_needs("", requires_tools=("python", "read")) == ("python",)
    assert execution_needs("", narrowed=tool_names_of_entries(("Bash(git status:*)",))) == (
        "shell",)
    assert execution_needs("", narrowed=tool_names_of_entries(("Read", "Write"))) == ()


@pytest.mark.parametrize(("text", "python"), [
    ("import math\nprint(math.sqrt(2))", True),
    ("x = 3", True),
    ("df.describe()", True),
    ("for i in range(3):\n    print(i)", True),
    ("hello", False),  # a name: parses, and is a message
    ("42", False),
    ("what is the square root of 2?", False),
    ("Plot a sine wave", False),
    ("", False),
    ("a\x00b", False),  # not parseable at all
])
def test_a_cell_that_is_plainly_python(text: str, python: bool) -> None:
    assert looks_like_python(text) is python


def test_the_scientific_skills_run_code_as_the_issue_counted() -> None:
    """#29 counted 101 of K-Dense's 107 scientific skills running Python or commands;
    the reading here must find them too (a miss is a silent description). The 9 of them
    in tests/fixtures/corpus: 2 run nothing (a brainstorming guide, a cloud lab's)."""
    found = total = 0
    for path in sorted((CORPUS.root / "K-Dense-AI__claude-scientific-skills").glob("*/SKILL.md")):
        doc = parse_skill_document(path.read_bytes())
        narrowed = (tool_names_of_entries(doc.allowed_tools)
                    if doc.allowed_tools is not None else None)
        total += 1
        found += bool(execution_needs(doc.body, doc.frontmatter.requires_tools, narrowed))
    assert total == CORPUS.pick(107, 9)
    assert found >= CORPUS.pick(101, 7)
