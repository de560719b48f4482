"""The built-in commands and skill invocation; every failure is a CommandError.

Handlers read the context and return a result plus the session change to apply on
success; they never mutate the session themselves, so a failed command changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from lily_kernel.commands.context import CommandContext, StateChange
from lily_kernel.commands.listing import ranked_result, skills_result
from lily_kernel.commands.parser import ParsedCommand
from lily_kernel.commands.results import (
    Block,
    CommandResult,
    Fields,
    Preformatted,
    SkillInvocation,
    Table,
    Text,
    ToolDispatch,
)
from lily_kernel.config import EMBEDDED_MODEL, LOCAL_MODEL, ModelConfig
from lily_kernel.errors import CommandError, SkillRootError
from lily_kernel.skills import (
    Eligibility,
    Skill,
    SkillSnapshot,
    diff_snapshots,
    shown_fields,
)

__all__ = [
    "BUILTIN_COMMANDS",
    "CommandOutcome",
    "describe_skill",
    "dispatched",
    "run_command",
]


@dataclass(frozen=True)
class CommandOutcome:
    result: CommandResult
    change: StateChange | None = None


Handler = Callable[[CommandContext, str], CommandOutcome]


def _no_argument(name: str, argument: str) -> None:
    if argument:
        raise CommandError(f"/{name} takes no argument.")


def _missing(snapshot: SkillSnapshot, name: str) -> CommandError:
    """No available skill by that name: say why when the snapshot knows it."""
    diag = snapshot.excluded_reason(name)
    if diag is not None:
        return CommandError(
            f"skill '{name}' is not available in this session (snapshot "
            f"{snapshot.version}): {diag.kind.value}: {diag.reason}."
        )
    return CommandError(
        f"no skill named '{name}' in this session (snapshot {snapshot.version}).")


# --- /skills -----------------------------------------------------------------------


def _skills(ctx: CommandContext, argument: str) -> CommandOutcome:
    snap = ctx.session.skill_snapshot
    return CommandOutcome(ranked_result(snap, argument) if argument else skills_result(snap))


# --- /skill and aliases ------------------------------------------------------------


def invoke_skill(ctx: CommandContext, command: str, skill: Skill, request: str) -> CommandOutcome:
    """Force `skill`: hand the runtime the intent to run its tool with the request (no
    model), or to ask the model with the skill forced."""
    if skill.invocation_mode == "tool_dispatch":
        tool = ctx.registry.get(skill.command_tool or "")
        if tool is None or tool.text_argument is None:
            raise CommandError(
                f"skill '{skill.name}': tool '{skill.command_tool}' cannot take a "
                "text request."
            )
        dispatch = ToolDispatch(skill.name, tool.name, {tool.text_argument: request})
        return CommandOutcome(CommandResult(command, skill=skill.name, dispatch=dispatch))
    return CommandOutcome(CommandResult(command, skill=skill.name,
                                        invocation=SkillInvocation(skill.name, request)))


def dispatched(result: CommandResult, text: str) -> CommandResult:
    """A tool_dispatch command's result, once its tool ran: what it returned."""
    assert result.dispatch is not None
    dispatch = result.dispatch
    return CommandResult(result.command, f"{dispatch.skill} ({dispatch.tool})",
                         (Preformatted(text),), skill=dispatch.skill)


def _split_first(argument: str) -> tuple[str, str]:
    """The first word, and the rest (same line or following lines)."""
    parts = argument.split(maxsplit=1)
    return (parts[0], parts[1]) if len(parts) == 2 else (argument, "")


def _skill(ctx: CommandContext, argument: str) -> CommandOutcome:
    name, request = _split_first(argument)
    if not name:
        raise CommandError("/skill requires a skill name.")
    snap = ctx.session.skill_snapshot
    skill = snap.get(name)
    if skill is None:
        raise _missing(snap, name)
    return invoke_skill(ctx, "skill", skill, request.strip())


# --- /help -------------------------------------------------------------------------

_BUILTIN_HELP = (
    ("/skills [words]", "list the skills of this session's snapshot, and the excluded "
                        "ones; with words, the skills ranked against them"),
    ("/skill <name> [request]", "force a skill for this request"),
    ("/help [skill]", "this list and the tool policy, or one skill's details"),
    ("/agent [name]", "show the agents, or switch to one (persona rebuilt)"),
    ("/reload_skills", "rebuild the skill snapshot from disk and show what changed"),
)


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


def _policy_blocks(ctx: CommandContext) -> list[Block]:
    policy = ctx.policy
    allow = "*" if policy.allow == "*" else ", ".join(policy.allow) or "(nothing)"
    offered = {t.name for t in policy.model_tools(ctx.registry)}
    with_skill = {t.name for t in policy.model_tools(ctx.registry, skill_active=True)} - offered
    # Only the tools the policy governs (not load_skill, Lily's own skill selection).
    rows = tuple(
        (
            tool.name,
            {"allow": "yes", "ask": "ask first", "deny": "no"}[policy.decision(tool.name)],
            "yes" if tool.name in offered else
            "while a skill is active" if tool.name in with_skill else "no",
            "yes" if tool.owner_only else "no",
            tool.description,
        )
        for tool in ctx.registry if tool.governed
    )
    return [
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
    if value is None:
        return "(none)" if attr == "summary" else None
    if isinstance(value, tuple):
        return ", ".join(value) or "(none)"
    if isinstance(value, dict):
        return _json(value)
    return str(value) or ("(none)" if attr == "summary" else "")


_DERIVED = frozenset({"summary", "command", "eligibility", "allowed_tools"})


def describe_skill(skill: Skill) -> tuple[Block, ...]:
    """Everything the snapshot knows of a skill, for `/help <skill>` and inspection: the
    frontmatter fields in their described order, the location, then unused keys."""
    def rows(group: str) -> list[tuple[str, str]]:
        found = ((f.label, _shown_value(skill, f.attr)) for f in shown_fields(group))
        return [(label, value) for label, value in found if value is not None]

    items = [*rows("lily"), ("source", skill.source), ("path", skill.path), *rows("standard")]
    items += [(f"{key} (not used by Lily)", _json(value))
              for key, value in sorted(skill.extra.items())]
    return (Fields(tuple(items)),)


def _help(ctx: CommandContext, argument: str) -> CommandOutcome:
    snap = ctx.session.skill_snapshot
    if argument:
        skill = snap.get(argument)
        if skill is None:
            raise _missing(snap, argument)
        return CommandOutcome(CommandResult("help", f"Skill {skill.name}", describe_skill(skill)))
    commands = list(_BUILTIN_HELP) + [
        (f"/{s.command} [request]", f"alias of /skill {s.name}")
        for s in sorted((s for s in snap.skills if s.command), key=lambda s: s.command or "")
    ]
    blocks: list[Block] = [
        Table(("command", "what it does"), tuple(commands)),
        Text(_model_line(ctx.session.model_config, ctx.session.embedded_default)),
        Text("Any other cell is a message to the model. Tool policy:"),
        *_policy_blocks(ctx),
    ]
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
    agents = ctx.list_agents()
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
    persona = ctx.load_persona(argument)
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
        new = ctx.load_snapshot(old.version + 1)
    except SkillRootError as exc:
        raise CommandError(str(exc)) from exc
    diff = diff_snapshots(old, new)
    items = (
        ("added", ", ".join(diff.added) or "(none)"),
        ("removed", ", ".join(diff.removed) or "(none)"),
        ("changed", ", ".join(diff.changed) or "(none)"),
        ("available", str(len(new.skills))),
        ("excluded", str(len(new.excluded))),
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


_HANDLERS: dict[str, Handler] = {
    "skills": _skills,
    "skill": _skill,
    "help": _help,
    "agent": _agent,
    "reload_skills": _reload_skills,
}
BUILTIN_COMMANDS = frozenset(_HANDLERS)


def run_command(ctx: CommandContext, parsed: ParsedCommand) -> CommandOutcome:
    """Dispatch exactly by name: a built-in, else a skill alias, else an error."""
    try:
        if not parsed.name:
            raise CommandError("empty command; type /help for the list of commands.")
        handler = _HANDLERS.get(parsed.name)
        if handler is not None:
            return handler(ctx, parsed.argument)
        skill = ctx.session.skill_snapshot.by_command(parsed.name)
        if skill is not None:
            return invoke_skill(ctx, parsed.name, skill, parsed.argument)
        raise CommandError(f"unknown command /{parsed.name}.")
    except CommandError as exc:
        return CommandOutcome(CommandResult(parsed.name, error=str(exc)))
