"""The built-in commands, each a `CommandSpec` record (commands/registry.py) in
`default_commands`; a skill's own forms are in invocation.py; every failure is a
CommandError.

Handlers read the context and return a result plus the session change to apply on
success; they never mutate the session themselves, so a failed command changes nothing.
"""

from __future__ import annotations

import json

from lily_kernel.commands.conversation import conversation_commands
from lily_kernel.commands.invocation import (
    invoke_skill,
    missing_skill,
    skill_command,
)
from lily_kernel.commands.listing import held_why, ranked_result, skills_result
from lily_kernel.commands.mcp import mcp_command
from lily_kernel.commands.network import network_command
from lily_kernel.commands.parser import ParsedCommand
from lily_kernel.commands.policy import policy_command, profile_line
from lily_kernel.commands.python import python_command
from lily_kernel.commands.registry import (
    CommandContext,
    CommandOutcome,
    CommandSpec,
    CommandTable,
    StateChange,
    blocking,
)
from lily_kernel.commands.resolve import SKILL_PREFIX, resolve, skill_commands
from lily_kernel.commands.results import CommandResult, ToolDispatch
from lily_kernel.commands.trust import trust_command
from lily_kernel.config import EMBEDDED_MODEL, LOCAL_MODEL, ModelConfig
from lily_kernel.display import Block, Fields, Preformatted, Table, Text
from lily_kernel.errors import CommandError, SkillRootError
from lily_kernel.skills import (
    Eligibility,
    Skill,
    diff_snapshots,
    shown_fields,
)
from lily_kernel.tools import ToolPolicy

__all__ = [
    "CommandOutcome",
    "default_commands",
    "describe_skill",
    "dispatched",
    "run_command",
]


def _no_argument(name: str, argument: str) -> None:
    if argument:
        raise CommandError(f"/{name} takes no argument.")


# --- /skills -----------------------------------------------------------------------


def _skills(ctx: CommandContext, argument: str) -> CommandOutcome:
    snap = ctx.session.skill_snapshot
    return CommandOutcome(ranked_result(snap, ctx.session.ranker(), argument, ctx.stop,
                                        ctx.session.held_ranker())
                          if argument else skills_result(snap))


# --- /skill and its forms (commands/invocation.py) -------------------------------


def dispatched(result: CommandResult, dispatch: ToolDispatch, text: str) -> CommandResult:
    """A tool_dispatch command's result, once its tool ran: what it returned."""
    return CommandResult(result.command, f"{dispatch.skill} ({dispatch.tool})",
                         (Preformatted(text),), skill=dispatch.skill)


# --- /help -------------------------------------------------------------------------

# Claude Code runs a SKILL.md's !`command` lines before its model reads it; Lily never does.
DYNAMIC_CONTEXT_LINE = ("A SKILL.md's !`command` lines (Claude Code's dynamic context) are "
                        "never run by Lily: the model sees them as text.")

PREVIEW_CHARS = 2_000


def _json(value: object) -> str:
    """A bounded JSON view of a frontmatter value, which is untrusted: any key types,
    circular aliases, or aliases that expand enormously ("billion laughs"). The encoder
    is lazy, so it stops after PREVIEW_CHARS whatever the expanded size would be."""
    encoder = json.JSONEncoder(ensure_ascii=False, default=str)
    parts: list[str] = []
    size = 0
    try:
        for chunk in encoder.iterencode(value):
            parts.append(chunk)
            size += len(chunk)
            if size > PREVIEW_CHARS:
                return "".join(parts)[:PREVIEW_CHARS] + " ... (truncated)"
    except (ValueError, TypeError, RecursionError) as exc:
        return f"(not shown: {exc})"
    return "".join(parts)


def _allowed(policy: ToolPolicy, name: str) -> str:
    decision = policy.decision(name)
    if decision == "allow" and name in policy.approved:
        return "yes (you said always, this session)"
    return {"allow": "yes", "ask": "ask first", "deny": "no"}[decision]


def _policy_blocks(ctx: CommandContext) -> list[Block]:
    policy, registry = ctx.policy, ctx.workspace.registry
    allow = ", ".join(policy.allow) or "(nothing)"  # "*" alone, as a string, too
    offered = {t.name for t in policy.model_tools(registry)}
    with_skill = {t.name for t in policy.model_tools(registry, skill_active=True)} - offered
    # Only the tools the policy governs (not load_skill, Lily's own skill selection).
    rows = tuple(
        (
            tool.name,
            _allowed(policy, tool.name),
            "yes" if tool.name in offered else
            "while a skill is active" if tool.name in with_skill else "no",
            "yes" if tool.owner_only else "no",
            tool.description,
        )
        for tool in registry if tool.governed
    )
    return [
        Text(profile_line(policy, registry)),
        Fields((("allow", allow), ("ask", ", ".join(policy.ask) or "(nothing)"),
                ("deny", ", ".join(policy.deny) or "(nothing)"))),
        Table(("tool", "allowed", "offered to the model", "owner-only", "description"), rows),
    ]


def _conditions(elig: Eligibility) -> str:
    conditions = [
        f"os: {', '.join(elig.os)}" if elig.os else "",
        f"env: {', '.join(elig.env)}" if elig.env else "",
        f"binaries: {', '.join(elig.binaries)}" if elig.binaries else "",
        f"one of: {', '.join(elig.any_binaries)}" if elig.any_binaries else "",
    ]
    return "; ".join(c for c in conditions if c) or "(no conditions)"


def _shown_value(skill: Skill, attr: str) -> str | None:
    """A frontmatter field as `/help` shows it; None: not shown. The snapshot's derived
    value is used where the skill has one (one-line summary, merged eligibility, the
    alias left after collisions, parsed allowed-tools)."""
    value = getattr(skill, attr) if attr in _DERIVED else getattr(skill.front, attr)
    if attr == "command":
        return f"/{value}" if value else "(none)"
    if attr == "eligibility":
        return _conditions(value)
    if attr == "disable_model_invocation":
        return "hidden from the model" if value else "listed in the model's catalog"
    if attr == "allowed_tools":
        return " ".join(value) if value is not None else None
    if attr == "argument_hint":
        return value or None
    if attr == "requires":
        return f"MCP servers: {', '.join(value.mcp)}" if value and value.mcp else None
    if attr == "user_invocable" and value is not None:
        return "with / commands" if value else "none: for the model only (user-invocable: false)"
    if value is None:
        return "(none)" if attr == "summary" else None
    if isinstance(value, tuple):
        return ", ".join(value) or "(none)"
    if isinstance(value, dict):
        return _json(value)
    return str(value) or ("(none)" if attr == "summary" else "")


_DERIVED = frozenset({"summary", "command", "eligibility", "allowed_tools", "argument_hint"})


def describe_skill(skill: Skill) -> tuple[Block, ...]:
    """Everything the snapshot knows of a skill, for `/help <skill>` and inspection: the
    frontmatter fields in their described order, the location, then unused keys."""
    def rows(group: str) -> list[tuple[str, str]]:
        found = ((f.label, _shown_value(skill, f.attr)) for f in shown_fields(group))
        return [(label, value) for label, value in found if value is not None]

    items = [*rows("lily"), ("source", skill.source), ("path", skill.path), *rows("standard"),
             *rows("claude")]
    items += [(f"{key} (not used by Lily)", _json(value))
              for key, value in sorted(skill.extra.items())]
    return (Fields(tuple(items)),)


def _help(ctx: CommandContext, argument: str) -> CommandOutcome:
    snap = ctx.session.skill_snapshot
    if argument:
        skill = snap.get(argument)
        if skill is None:
            raise missing_skill(snap, argument)
        return CommandOutcome(CommandResult("help", f"Skill {skill.name}", describe_skill(skill)))
    # Every alias, and each skill name with an argument hint, with what to type after it.
    table, held = ctx.workspace.commands, ctx.workspace.held_settings
    commands = [line for command in table for line in command.help_lines()] + [
        (f"/{name} {skill.argument_hint or '[request]'}",
         f"alias of /skill {skill.name}" if kind == "alias" else f"/skill {skill.name}")
        for name, (kind, skill) in sorted(skill_commands(snap, table.names()).items())
        if kind == "alias" or skill.argument_hint
    ]
    blocks: list[Block] = [
        Table(("command", "what it does"), tuple(commands)),
        Text(DYNAMIC_CONTEXT_LINE),
        Text(_model_line(ctx.session.model_config, ctx.session.embedded_default)),
        Text("Any other cell is a message to the model. Tool policy:"),
        *_policy_blocks(ctx),
    ]
    if held:
        blocks.append(Text("Not applied from lily.yaml until you trust this workspace "
                           "(docs/skills.md, Trust): " + "; ".join(held) + "."))
    return CommandOutcome(CommandResult("help", "Lily commands", tuple(blocks)))


def _model_line(model: ModelConfig, embedded_default: bool) -> str:
    """Which model answers chat cells, and what that means for tools."""
    if model.model is None:
        return ("Model: none configured, and the embedded local model is not installed "
                "(set LILY_MODEL, or install the local model: see docs/local-model.md).")
    if not model.is_local:
        return f"Model: {model.model} (through litellm)."
    which = (f"Model: {model.model}, the embedded {EMBEDDED_MODEL}, run in-process by llama.cpp"
             if model.model == LOCAL_MODEL else
             f"Model: {model.model}, run in-process by llama.cpp")
    if embedded_default:
        which += " (no model is configured; set LILY_MODEL for a real one)"
    return (which + ". It cannot call tools: it names a skill by a structured declaration, "
            "and no other tool is offered to it.")


# --- /agent ------------------------------------------------------------------------


def _agent(ctx: CommandContext, argument: str) -> CommandOutcome:
    agents = ctx.workspace.list_agents()
    active = ctx.session.active_agent
    if not argument:
        rows = tuple((name, "active" if name == active else "") for name in agents)
        files = ", ".join(f"{f.name} ({f.source})" for f in ctx.session.persona.files) or "(none)"
        return CommandOutcome(CommandResult(
            "agent", f"Agent: {active}",
            (Fields((("persona files", files),)), Table(("agent", "status"), rows)),
        ))
    if argument not in agents:
        raise CommandError(f"no agent named '{argument}'; available: {', '.join(agents)}.")
    persona = ctx.workspace.load_persona(argument)
    files = ", ".join(f"{f.name} ({f.source})" for f in persona.files) or "(none)"
    verb = "Reloaded" if argument == active else "Switched to"
    return CommandOutcome(
        CommandResult("agent", f"{verb} agent {argument}",
                      (Fields((("persona files", files),)),), notices=persona.notices),
        StateChange(active_agent=argument, persona=persona),
    )


# --- /reload_skills ----------------------------------------------------------------


def _reload_skills(ctx: CommandContext, argument: str) -> CommandOutcome:
    _no_argument("reload_skills", argument)
    old = ctx.session.skill_snapshot
    try:
        new = ctx.workspace.load_snapshot(old.version + 1)
    except SkillRootError as exc:
        raise CommandError(str(exc)) from exc
    diff = diff_snapshots(old, new)
    kept = {s.name: s for s in new.held}
    # A skill newly held for trust is said as such (edited since it was trusted, or new),
    # never as removed or as broken.
    held = tuple(("held", f"{name}: {held_why(kept.get(name))}") for name in diff.held)
    items = (
        ("added", ", ".join(diff.added) or "(none)"),
        ("removed", ", ".join(diff.removed) or "(none)"),
        ("changed", ", ".join(diff.changed) or "(none)"),
        *held,
        ("available", str(len(new.skills))),
        ("excluded", str(len(new.excluded) - len(new.held_names))),
    )
    title = f"Reloaded skills: snapshot {new.version} (was {old.version})"
    text = Text("No changes." if diff.empty else "Changes since the previous snapshot:")
    blocks: list[Block] = [text, Fields(items)]
    if diff.newly_excluded:  # never just a count: what broke, and why
        blocks.append(Table(
            ("newly excluded", "kind", "source", "reason"),
            tuple((d.skill, d.kind.value, d.source, d.reason) for d in diff.newly_excluded)))
    if diff.aliases:
        blocks.append(Table(
            ("alias", "was", "now", "why"),
            tuple((f"/{a.command}", a.before or "(none)", a.after or "(dropped)", a.why)
                  for a in diff.aliases)))
    return CommandOutcome(
        CommandResult("reload_skills", title, tuple(blocks)),
        StateChange(skill_snapshot=new),
    )


def default_commands() -> CommandTable:
    """A new table of the built-in commands, in `/help`'s order. Adding a command: its
    module declares a `CommandSpec`, and one line here lists it."""
    return CommandTable([
        CommandSpec("skills", "list the skills of this session's snapshot, and the excluded "
                "ones; with words, the skills ranked against them", blocking(_skills),
                usage="/skills [words]", ranks=True),
        CommandSpec("skill", "force a skill for this request", skill_command,
                usage="/skill <name> [request]", argument="invocable_skill",
                names_skill=True, more=(
                    (f"/{SKILL_PREFIX}<name> [request]", "the same"),
                    ("/<skill-name> [request]", "the same, for a skill you may invoke whose "
                     "name is no built-in or alias (those come first)"))),
        CommandSpec("help", "this list and the tool policy, or one skill's details",
                blocking(_help), usage="/help [skill]", argument="skill"),
        CommandSpec("agent", "show the agents, or switch to one (persona rebuilt)",
                blocking(_agent), usage="/agent [name]", argument="agent"),
        CommandSpec("reload_skills", "rebuild the skill snapshot from disk and show what "
                "changed", blocking(_reload_skills)),
        trust_command(),
        policy_command(),
        python_command(),
        mcp_command(),
        network_command(),
        *conversation_commands(),
    ])


async def run_command(ctx: CommandContext, parsed: ParsedCommand) -> CommandOutcome:
    """Dispatch exactly by name (commands/resolve.py): a built-in, else a skill's form
    (`/skill:<name>`, an alias, a skill's name), else an error."""
    try:
        if not parsed.name:
            raise CommandError("empty command; type /help for the list of commands.")
        found = resolve(parsed.name, ctx.session.skill_snapshot, ctx.workspace.commands)
        if found.command is not None:
            command = found.command
            return await command.handler(ctx, parsed.raw if command.raw else parsed.argument)
        if found.skill is not None:
            return invoke_skill(ctx, parsed.name, found.skill, parsed.argument)
        snap = ctx.session.skill_snapshot
        if found.how == "prefix":
            if not found.wanted:
                raise CommandError("/skill: requires a skill name (/skill:<name>).")
            raise missing_skill(snap, found.wanted)
        if found.wanted and snap.excluded_reason(found.wanted) is not None:
            raise missing_skill(snap, found.wanted)
        raise CommandError(f"unknown command /{parsed.name}.")
    except CommandError as exc:
        return CommandOutcome(CommandResult(parsed.name, error=str(exc)))
