"""`/new`, `/resume`, `/rerun`: the conversation across restarts (docs/sessions.md).

Each reads the session's record through the context (`ctx.conversations`: None where
the session keeps none) and returns the change to apply, or an intent (`AskAgain`) the
runtime carries out; the record itself is never touched here.
"""

from __future__ import annotations

from lily_kernel.commands.record import AskAgain, ConversationChange
from lily_kernel.commands.registry import CommandContext, CommandOutcome, CommandSpec, StateChange
from lily_kernel.commands.results import CommandResult
from lily_kernel.display import Fields, Table, Text
from lily_kernel.errors import CommandError

__all__ = ["conversation_commands"]

NO_RECORD = ("this session keeps no record of its conversations (the kernel's record is "
             "off here; see docs/sessions.md).")


async def _new(ctx: CommandContext, argument: str) -> CommandOutcome:
    if argument:
        raise CommandError("/new takes no argument.")
    return CommandOutcome(
        CommandResult("new", "A new conversation", (Text(
            "The model starts from nothing: the earlier turns stay in the notebook and in "
            "the record, and /resume takes a recorded conversation up again."),)),
        StateChange(conversation=ConversationChange("new")))


async def _resume(ctx: CommandContext, argument: str) -> CommandOutcome:
    book = ctx.conversations
    if book is None:
        raise CommandError(f"/resume: {NO_RECORD}")
    if not argument:
        found = book.conversations()
        rows = tuple((c.id, c.notebook or "(unknown)", c.when, str(c.turns), c.first)
                     for c in found)
        blocks = ((Table(("conversation", "notebook", "last turn", "turns", "first message"),
                         rows), Text("/resume <conversation> takes one up."))
                  if rows else (Text("No recorded conversation in this workspace yet."),))
        return CommandOutcome(CommandResult("resume", "Recorded conversations", blocks))
    taken = book.resume(argument)
    items = [("conversation", taken.source or argument), ("turns", str(len(taken.turns)))]
    if taken.left_out:
        items.append(("left out",
                      "; ".join(taken.left_out)))
    return CommandOutcome(
        CommandResult("resume", f"Resumed conversation {taken.source or argument}",
                      (Fields(tuple(items)),)),
        StateChange(conversation=taken))


async def _rerun(ctx: CommandContext, argument: str) -> CommandOutcome:
    if not argument and ctx.last_request is None:
        raise CommandError("/rerun: no chat turn in this session to ask again; "
                           "/rerun <message> asks the model afresh.")
    return CommandOutcome(CommandResult("rerun", intent=AskAgain(argument or None)))


def conversation_commands() -> list[CommandSpec]:
    return [
        CommandSpec("new", "start a new conversation: the model forgets the turns before",
                    _new),
        CommandSpec("resume", "list the workspace's recorded conversations, or take one "
                    "up", _resume, usage="/resume [conversation]"),
        CommandSpec("rerun", "ask the model afresh, never from the record: the last turn "
                    "again, in its place, or this message", _rerun,
                    usage="/rerun [message]"),
    ]
