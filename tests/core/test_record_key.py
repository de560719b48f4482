"""The record's pure parts: a turn's key and its parts, the paths written as tokens, the
notebook a front end names, the saved notebook's cells and which recorded turns are
still in it (record/key.py, record/notebook.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from lily_kernel.config import ModelConfig
from lily_kernel.persona import Persona, PersonaFile
from lily_kernel.record.key import (
    PathTokens,
    offered_tools,
    persona_digest,
    request_digest,
    turn_key,
    turn_parts,
)
from lily_kernel.record.notebook import (
    SavedCell,
    TurnCell,
    earlier_turns,
    notebook_from_cell,
    notebook_of,
    read_saved_cells,
    shown_path,
)
from lily_kernel.tools import ToolPolicy, default_registry

TOKENS = PathTokens.of(Path("/home/ana/proj"), [("workspace", "/home/ana/proj/skills"),
                                                ("user", "/home/ana/.lily/skills"),
                                                ("bundled", "/opt/lily/skills")], "/home/ana")
PERSONA = Persona("default", (PersonaFile("SOUL.md", "bundled", "/x/SOUL.md", "Be brief."),))


def parts(**changed: Any) -> dict[str, str]:
    given: dict[str, Any] = {
        "history": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
        "text": "What now?", "forced": None, "model": ModelConfig(model="openai/x"),
        "snapshot_digest": "d" * 64, "persona": PERSONA, "policy": ToolPolicy(),
        "registry": default_registry(), "tokens": TOKENS, "redact": lambda v: v}
    given.update(changed)
    persona, policy, registry = given.pop("persona"), given.pop("policy"), given.pop("registry")
    return turn_parts(**given, persona=persona_digest(persona.agent, [(f.name, f.content)
                                                                     for f in persona.files]),
                      tools=offered_tools((t.name, policy.decision_for(t)) for t in registry))


def test_each_part_of_a_turn_changes_its_key_and_only_its_part() -> None:
    base = parts()
    changes: dict[str, dict[str, Any]] = {
        "history": {"history": []},
        "request": {"text": "What else?"},
        "model": {"model": ModelConfig(model="openai/x", temperature=0.5)},
        "skills": {"snapshot_digest": "e" * 64},
        "persona": {"persona": Persona("default", (PersonaFile("SOUL.md", "bundled", "/x",
                                                               "Be long."),))},
        "tools": {"policy": ToolPolicy(deny=("write",))},
    }
    for name, change in changes.items():
        other = parts(**change)
        assert [k for k in base if base[k] != other[k]] == [name], name
        assert turn_key(other) != turn_key(base)
    assert parts(forced="plan")["request"] != base["request"]


def test_how_a_model_is_reached_or_shown_is_not_part_of_the_key() -> None:
    reached = ModelConfig(model="openai/x", api_base="http://127.0.0.1:1/v1", stream=False,
                          retries=0, request_timeout=5, footer=False)
    assert parts(model=reached) == parts()
    # Asked first or allowed, a tool is one the model may call.
    assert parts(policy=ToolPolicy(ask=("write",))) == parts()
    assert parts(text="  What now?\n") == parts()


def test_paths_that_differ_between_machines_are_tokens_in_the_key() -> None:
    elsewhere = PathTokens.of(Path("/ci/checkout"), [("user", "/root/.lily/skills"),
                                                     ("bundled", "/venv/lily/skills")], "/root")
    here = parts(history=[{"role": "tool", "content": "/home/ana/proj/skills/x/SKILL.md and "
                                                      "/opt/lily/skills/y"}])
    there = parts(tokens=elsewhere, history=[{"role": "tool", "content":
                                              "/ci/checkout/skills/x/SKILL.md and "
                                              "/venv/lily/skills/y"}])
    assert here["history"] == there["history"]
    message = {"role": "user", "content": "read /home/ana/proj/notes.md, ~ is /home/ana"}
    kept = TOKENS.tokens(message)
    assert kept["content"] == "read «lily:workspace»/notes.md, ~ is «lily:home»"
    assert TOKENS.paths(kept) == message
    assert elsewhere.paths(kept)["content"] == "read /ci/checkout/notes.md, ~ is /root"


def test_a_secret_is_redacted_before_it_is_digested() -> None:
    hidden = parts(text="key sk-abc", redact=lambda v: json.loads(
        json.dumps(v).replace("sk-abc", "[REDACTED]")))
    assert hidden["request"] == parts(text="key [REDACTED]")["request"]
    digest = request_digest([{"role": "user", "content": "x"}], None, TOKENS, lambda v: v)
    assert digest != request_digest([{"role": "user", "content": "x"}], {"type": "object"},
                                    TOKENS, lambda v: v)


def test_the_notebook_a_front_end_names(tmp_path: Path) -> None:
    (tmp_path / "nb.ipynb").write_text("{}")
    assert notebook_of({}, tmp_path) is None
    assert notebook_of({"JPY_SESSION_NAME": str(tmp_path / "nb.ipynb")}, tmp_path) == \
        tmp_path / "nb.ipynb"
    # An older server's path from its root: the file is found in the workspace.
    assert notebook_of({"JPY_SESSION_NAME": "work/nb.ipynb"}, tmp_path) == tmp_path / "nb.ipynb"
    assert notebook_of({"LILY_NOTEBOOK": "other.ipynb", "JPY_SESSION_NAME": "nb.ipynb"},
                       tmp_path) == tmp_path / "other.ipynb"
    assert notebook_from_cell("vscode-notebook-cell:/home/ana/my%20nb.ipynb#W1sZmlsZQ%3D%3D") \
        == Path("/home/ana/my nb.ipynb")
    assert notebook_from_cell("vscode-notebook-cell:/c%3A/Users/ana/nb.ipynb#W0") == \
        Path("c:/Users/ana/nb.ipynb")
    assert notebook_from_cell("8f2e7c1a-3b9d-4e5f") is None and notebook_from_cell(None) is None
    assert shown_path(tmp_path / "sub" / "nb.ipynb", tmp_path) == "sub/nb.ipynb"
    assert shown_path(Path("/elsewhere/nb.ipynb"), tmp_path) == "/elsewhere/nb.ipynb"


def test_the_saved_cells_are_read_safely(tmp_path: Path) -> None:
    nb = tmp_path / "nb.ipynb"
    nb.write_text(json.dumps({"cells": [
        {"cell_type": "markdown", "id": "m", "source": "# Title"},
        {"cell_type": "code", "id": "a", "source": ["What is ", "2+2?"]},
        {"cell_type": "code", "source": "no id"}]}))
    assert read_saved_cells(nb) == [SavedCell("a", "What is 2+2?"), SavedCell(None, "no id")]
    nb.write_text("{ not json")
    assert read_saved_cells(nb) == f"{nb} is not a notebook (not JSON)"
    fifo = tmp_path / "fifo.ipynb"
    os.mkfifo(fifo)
    assert read_saved_cells(fifo) == f"{fifo} is not a file"  # never opened: it would block
    assert "cannot be read" in str(read_saved_cells(tmp_path / "gone.ipynb"))
    # Swapped by sandboxed code for a link to a notebook of the person's elsewhere.
    elsewhere = tmp_path / "home" / "private.ipynb"
    elsewhere.parent.mkdir()
    elsewhere.write_text(json.dumps({"cells": [{"cell_type": "code", "source": "secret"}]}))
    link = tmp_path / "linked.ipynb"
    link.symlink_to(elsewhere)
    assert read_saved_cells(link) == f"{link} is not a file"


CELLS = [SavedCell("a", "one"), SavedCell("b", "two"), SavedCell("c", "three")]


def test_the_live_notebook_decides_which_turns_exist() -> None:
    turns = [TurnCell("a", "one"), TurnCell("b", "two"), TurnCell("c", "three")]
    # A new cell (not saved yet): every turn still in the notebook is earlier.
    assert earlier_turns(turns, CELLS, "new", "four") == ([0, 1, 2], [])
    # The second cell deleted and saved: its turn is left out, and named by the caller.
    assert earlier_turns(turns, [CELLS[0], CELLS[2]], "new", "four") == ([0, 2], [1])
    # Edited and saved: the cell says something else now.
    assert earlier_turns(turns, [CELLS[0], SavedCell("b", "TWO"), CELLS[2]], "new", "x") == \
        ([0, 2], [1])
    # The third cell run again: only the turns above it.
    assert earlier_turns(turns, CELLS, "c", "three") == ([0, 1], [])
    # Without ids (nbclient, VS Code's cell URIs), by code, in order.
    bare = [TurnCell(None, "one"), TurnCell(None, "two"), TurnCell(None, "three")]
    assert earlier_turns(bare, CELLS, None, "three") == ([0, 1], [])
    assert earlier_turns(bare, CELLS, None, "") == ([0, 1, 2], [])
    twice = [TurnCell(None, "go"), TurnCell(None, "go")]
    assert earlier_turns(twice, [SavedCell(None, "go"), SavedCell(None, "go")], None, "x") \
        == ([0, 1], [])
