"""The tool seam: a new tool that asks the person and logs an event of its own is one
module's worth of code and one registration, with no change to the runtime."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest

from lily_kernel.events import EventData
from lily_kernel.llm import ChatResponse, ScriptedModel, ToolCall, Usage
from lily_kernel.runtime import LilyRuntime
from lily_kernel.tools import Question, Tool, ToolContext, default_registry
from tests.support.sink import RecordingSink

# --- the new tool: what a newcomer writes (docs/architecture.md shows the same) -------


@dataclass(frozen=True, kw_only=True)
class Stamped(EventData):
    event: ClassVar[str] = "stamped"
    label: str


@dataclass(frozen=True)
class StampArgs:
    label: str
    """What to stamp."""


async def stamp(args: StampArgs, ctx: ToolContext) -> str:
    if not await ctx.ask(Question(f"Stamp {args.label!r}? [y/N] ", f"stamping {args.label!r}")):
        return "not stamped: the person said no"
    ctx.emit(Stamped(label=args.label))
    return f"stamped {args.label}"


def stamp_tool() -> Tool:
    return Tool("stamp", "Stamp a label, once the person agrees.", StampArgs, stamp)


# --- the session around it --------------------------------------------------------------


def turn(workspace: Path, environ: dict[str, str], person: RecordingSink) -> tuple[str, list[dict[str, Any]]]:
    """One chat turn in which the model calls `stamp`; what the model read of the call,
    and the session's events."""
    registry = default_registry()
    registry.register(stamp_tool())  # the one registration line
    runtime = LilyRuntime.start(workspace, {**environ, "LILY_MODEL": "scripted/test",
                                            "LILY_EVENT_LOG": "1"}, registry=registry,
                                session_id="seam")
    model = ScriptedModel(
        ChatResponse("", (ToolCall("s1", "stamp", json.dumps({"label": "draft"})),), Usage(5, 3)),
        ChatResponse("done", usage=Usage(5, 3)))
    runtime.model = model
    asyncio.run(runtime.run_cell("stamp the draft", person))
    runtime.close()
    log = workspace / ".lily" / "sessions" / "seam.jsonl"
    events = [json.loads(line) for line in log.read_text().splitlines()]
    result = model.requests[1].messages[-1]
    assert result["tool_call_id"] == "s1"
    return result["content"], events


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["event"] for e in events]


def test_a_new_tool_asks_and_logs_its_own_event(workspace: Path, environ: dict[str, str]) -> None:
    person = RecordingSink("y")
    result, events = turn(workspace, environ, person)
    assert result == "stamped draft"
    assert person.questions == ["Stamp 'draft'? [y/N] "]
    assert "Tool stamp: ran" in person.notices
    approval = next(e["data"] for e in events if e["event"] == "approval")
    assert approval == {"tool": "stamp", "question": "Stamp 'draft'? [y/N] ",
                        "outcome": "approved"}
    assert next(e["data"] for e in events if e["event"] == "stamped") == {"label": "draft"}
    # In the order it happened: asked, stamped, then the call itself recorded.
    order = [k for k in kinds(events) if k in ("approval", "stamped", "tool_call")]
    assert order == ["approval", "stamped", "tool_call"]


def test_its_question_declined_or_unanswerable_stamps_nothing(
        workspace: Path, environ: dict[str, str]) -> None:
    result, events = turn(workspace, environ, RecordingSink("n"))
    assert result == "not stamped: the person said no"
    assert "stamped" not in kinds(events)
    unattended = workspace / "unattended"
    unattended.mkdir()
    result, events = turn(unattended, environ, RecordingSink(None))
    # The tool asks of its own accord: no setting would spare the question, so the
    # refusal names none.
    assert result == ("Refused: stamping 'draft' needs the person's approval, and no one can "
                      "answer here: this notebook runs without input requests (nbclient, "
                      "papermill, `lily run`, or a frontend without stdin).")
    assert "stamped" not in kinds(events)
    call = next(e["data"] for e in events if e["event"] == "tool_call")
    assert (call["name"], call["allowed"]) == ("stamp", False)


def test_the_policy_gates_the_new_tool_like_every_other(
        workspace: Path, environ: dict[str, str]) -> None:
    person = RecordingSink()
    result, events = turn(workspace, {**environ, "LILY_TOOLS_DENY": "stamp"}, person)
    assert result == "Refused: tool 'stamp' is not allowed by the tool policy."
    assert person.questions == [] and "stamped" not in kinds(events)


def test_under_tools_ask_the_policy_asks_first_and_says_how_to_allow_it(
        workspace: Path, environ: dict[str, str]) -> None:
    person = RecordingSink("y", "y")
    result, _ = turn(workspace, {**environ, "LILY_TOOLS_ASK": "stamp"}, person)
    assert result == "stamped draft"
    assert person.questions == ['Let the model run the tool "stamp"\n  label: "draft"\n'
                            "Allow it? [y/N] ", "Stamp 'draft'? [y/N] "]
    unattended = workspace / "unattended"
    unattended.mkdir()
    result, _ = turn(unattended, {**environ, "LILY_TOOLS_ASK": "stamp"}, RecordingSink(None))
    assert result.startswith("Refused: the call of 'stamp' needs the person's approval "
                             "(tools.ask in lily.yaml), and no one can answer here")
    assert result.endswith("To allow it without asking, name stamp in tools.allow instead.")


def test_a_tool_with_a_blocking_handler_is_refused_at_registration() -> None:
    def blocking_stamp(args: StampArgs, ctx: ToolContext) -> str:
        return "stamped"

    with pytest.raises(ValueError, match="must be async"):
        default_registry().register(
            Tool("stamp", "Stamp.", StampArgs, blocking_stamp))  # type: ignore[arg-type]
