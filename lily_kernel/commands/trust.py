"""`/trust`: what this folder would bring, and the question whether to trust it, again.

After a "no" (or with no one to answer at first) the person can trust the folder from
the notebook; the question, the store and taking up what it brings are the runtime's
(the `AskTrust` intent), as `lily trust` is the CLI's.
"""

from __future__ import annotations

from lily_kernel.commands.registry import CommandContext, CommandOutcome, CommandSpec
from lily_kernel.commands.results import AskTrust, CommandResult
from lily_kernel.errors import CommandError

__all__ = ["trust_command"]


async def _trust(ctx: CommandContext, argument: str) -> CommandOutcome:
    if argument:
        raise CommandError("/trust takes no argument.")
    if not ctx.in_cell:
        raise CommandError("trust cannot be asked for here; run `lily trust` in a terminal.")
    return CommandOutcome(CommandResult("trust", intent=AskTrust()))


def trust_command() -> CommandSpec:
    return CommandSpec("trust", "show what this folder would bring, and ask whether to trust "
                   "it (again)", _trust)
