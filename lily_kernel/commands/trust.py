"""`/trust`: what this folder would bring, and the question whether to trust it, again.

After a "no" (or with no one to answer at first) the person can trust the folder from
the notebook; the question, the store and taking up what it brings are the runtime's
(`ctx.trust`), as `lily trust` is the CLI's.
"""

from __future__ import annotations

from lily_kernel.commands.registry import CommandContext, CommandOutcome, CommandSpec
from lily_kernel.errors import CommandError

__all__ = ["trust_command"]


async def _trust(ctx: CommandContext, argument: str) -> CommandOutcome:
    if argument:
        raise CommandError("/trust takes no argument.")
    if ctx.trust is None:
        raise CommandError("trust cannot be asked for here; run `lily trust` in a terminal.")
    return CommandOutcome(await ctx.trust())


def trust_command() -> CommandSpec:
    return CommandSpec("trust", "show what this folder would bring, and ask whether to trust "
                   "it (again)", _trust)
