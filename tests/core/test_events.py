"""The event log's declarations: each kind's fields, used by every emit site and by replay."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest

from lily_kernel import events
from lily_kernel.errors import ModelFault
from lily_kernel.events import KINDS, Command, EventLog, ModelCall, ToolCalled
from lily_kernel.validation import ShapeError, build

PACKAGE = Path(events.__file__).resolve().parents[1]


def _sites() -> tuple[list[tuple[str, int, str, set[str]]], list[str]]:
    """Every event built in lily_kernel (a call of a declared kind: file, line, kind,
    the keywords it is given), and every `emit(...)` given anything but a bare name or
    such a call."""
    classes = {cls.__name__ for cls in KINDS.values()}
    built, odd = [], []
    for file in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(file.read_text())):
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Name) and node.func.id in classes:
                keywords = {k.arg for k in node.keywords if k.arg is not None}
                built.append((file.name, node.lineno, node.func.id, keywords))
            elif isinstance(node.func, ast.Attribute) and node.func.attr == "emit" and node.args:
                given = node.args[0]
                if not (isinstance(given, ast.Name) or (
                        isinstance(given, ast.Call) and isinstance(given.func, ast.Name)
                        and given.func.id in classes)):
                    odd.append(f"{file.name}:{node.lineno}")
    return built, odd


def test_every_emit_site_passes_only_fields_its_kind_declares() -> None:
    classes = {cls.__name__: cls for cls in KINDS.values()}
    sites, odd = _sites()
    assert len(sites) >= 15  # the sites are really found (session, commands, turns, tools)
    assert odd == [], "an emit site that builds its event some other way"
    for file, line, name, keywords in sites:
        declared = {f.name for f in dataclasses.fields(classes[name])}
        assert keywords <= declared, f"{file}:{line}: {sorted(keywords - declared)} undeclared"


def test_a_field_a_kind_does_not_declare_cannot_be_emitted(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "s.jsonl", "s")
    with pytest.raises(TypeError):
        log.emit(Command(name="skills", argument="", ok=True, colour="red"))  # type: ignore[call-arg]
    assert not (tmp_path / "s.jsonl").exists()


def test_replay_reads_an_event_back_through_its_declaration(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "s.jsonl", "s")
    call = ToolCalled(name="read", caller="model", allowed=True, step=1,
                    arguments={"path": "a.txt"}, result="text")
    log.emit(call)
    log.close()
    line = json.loads((tmp_path / "s.jsonl").read_text())
    assert line["event"] == "tool_call"
    assert build(ToolCalled, line["data"]) == call


def test_an_outcome_is_read_back_as_its_type(tmp_path: Path) -> None:
    """Outcomes are typed (a Literal, or the deciding layer's enum): written as their
    value, read back as the same type, and a value no Lily writes is refused."""
    log = EventLog(tmp_path / "s.jsonl", "s")
    call = ModelCall(model="m", step=1, outcome=ModelFault.RATE_LIMIT, latency_ms=1.0,
                     context_window=None, supports_tools=True,
                     error={"kind": "rate_limit", "message": "slow down"})
    log.emit(call)
    log.close()
    data = json.loads((tmp_path / "s.jsonl").read_text())["data"]
    assert data["outcome"] == "rate_limit"
    read = build(ModelCall, data)
    assert read == call and read.outcome is ModelFault.RATE_LIMIT
    assert build(ModelCall, {**data, "outcome": "cancelled"}).outcome == "cancelled"
    with pytest.raises(ShapeError, match="expected one of 'ok', 'cancelled', 'error', 'auth'"):
        build(ModelCall, {**data, "outcome": "sort of"})


def test_every_declared_field_can_be_checked() -> None:
    """The one checker of untrusted mappings (validation.py) knows the type of every
    field an event kind declares: replay checks every event with it."""
    import lily_kernel.runtime.runtime  # noqa: F401  (declares no kind; imports those that do)
    from lily_kernel.validation import check_fields

    for kind in KINDS.values():
        check_fields(kind, {})  # raises TypeError for a type it cannot check


def test_every_kind_has_a_unique_name() -> None:
    names = [cls.event for cls in KINDS.values()]
    assert len(names) == len(set(names)) and "" not in names
    assert set(events.EVENT_KINDS) <= set(KINDS)
