"""`/policy`: the policy profile in force, and the person's own switch for "full auto".

`/policy auto` lets the tools asked by default (python, shell: they run code, in the
sandbox) run without asking for the rest of the session; `/policy ask` asks again.
What is asked all the same (`tools.ask`, every call in a folder the person does not
trust, a call asked of its own accord) is said. The runtime applies the choice
(`StateChange.policy`) and logs it (`policy_profile`).
"""

from __future__ import annotations

from dataclasses import replace

from lily_kernel.commands.registry import (
    CommandContext,
    CommandOutcome,
    CommandSpec,
    StateChange,
)
from lily_kernel.commands.results import CommandResult
from lily_kernel.config import Profile
from lily_kernel.display import Text
from lily_kernel.errors import CommandError
from lily_kernel.tools import ToolPolicy, ToolRegistry

__all__ = ["policy_command", "profile_line"]

_PROFILES: tuple[Profile, ...] = ("ask", "auto")


def _asked_tools(policy: ToolPolicy, registry: ToolRegistry) -> str:
    names = sorted(t.name for t in registry if t.asked and policy.allows(t.name))
    return ", ".join(names) or "(none)"


def profile_line(policy: ToolPolicy, registry: ToolRegistry) -> str:
    """The profile in force, in one line (`/help`, `/policy`)."""
    tools = _asked_tools(policy, registry)
    if policy.auto:
        return (f"Policy: FULL AUTO: the tools that run code ({tools}) run without asking, "
                "in the sandbox; `/policy ask` asks again. Still asked: tools.ask, and "
                "every call that changes a folder you have not trusted. Hosts network.allow "
                "does not name are refused, not asked (`/network`).")
    return (f"Policy: ask: the tools that run code ({tools}) ask before each call (answer "
            "`a` to stop asking about one for this session); `/policy auto` lets them run "
            "without asking.")


async def _policy(ctx: CommandContext, argument: str) -> CommandOutcome:
    if not argument:
        return CommandOutcome(CommandResult("policy", "Policy", (
            Text(profile_line(ctx.policy, ctx.workspace.registry)),)))
    if argument not in _PROFILES:
        raise CommandError(f"/policy takes 'ask' or 'auto' (got '{argument}').")
    profile: Profile = "auto" if argument == "auto" else "ask"
    now = replace(ctx.policy, auto=profile == "auto")
    title = "Full auto is on" if profile == "auto" else "Full auto is off"
    return CommandOutcome(
        CommandResult("policy", title, (Text(profile_line(now, ctx.workspace.registry)),)),
        StateChange(policy=profile))


def policy_command() -> CommandSpec:
    return CommandSpec("policy", "the policy profile; `auto` runs code (python, shell) "
                       "without asking for this session, `ask` asks again", _policy,
                       usage="/policy [ask|auto]", choices=_PROFILES)
