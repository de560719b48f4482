"""`/network`: the hosts this session allowed and refused, and the configured
`network.allow` and `network.deny` (no model involved; nothing changes)."""

from __future__ import annotations

from lily_kernel.commands.registry import CommandContext, CommandOutcome, CommandSpec
from lily_kernel.commands.results import CommandResult
from lily_kernel.errors import CommandError

__all__ = ["network_command"]


async def _network(ctx: CommandContext, argument: str) -> CommandOutcome:
    if argument:
        raise CommandError("/network takes no argument.")
    if ctx.network is None:
        raise CommandError("/network: this session runs no network.")
    return CommandOutcome(CommandResult("network", "Network", ctx.network().blocks()))


def network_command() -> CommandSpec:
    return CommandSpec("network", "the hosts this session allowed and refused, and the "
                       "configured network.allow and network.deny", _network)
