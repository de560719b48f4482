"""What Lily tells the person of the session's own state in a notice, worded once: the
workspace's trust, the event log, MCP servers, a tool call, the skill a request uses.
Pure: facts in, text out; the runtime shows it as a `Notice` (display/messages.py words
what concerns the model and the record)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = ["SkillChosenBy", "TrustApplied", "event_log_off", "forced_skill_cut",
           "mcp_server_failed", "rerun_replaced", "selection_refused", "skill_chosen",
           "tool_arguments_not_json", "tool_ran", "trust_decided", "trust_help",
           "trust_store_problem", "trusted_from_elsewhere"]

# --- the workspace's trust ------------------------------------------------------------


def trust_help(workspace: Path, variable: str) -> str:
    """How to trust this workspace (one line); `variable`: the environment variable that
    trusts it for a runner without input."""
    return (f"run `/trust` in a cell, or `lily trust {workspace}` in a terminal, or set "
            f"`{variable}=workspace` for a runner without input")


@dataclass(frozen=True)
class TrustApplied:
    """What trust changed that the person would not see otherwise: the model that answers
    now, the Python kernel the next run starts in (and whether a running one was ended
    for it), the policy profile now in force. None where nothing changed."""

    model: str | None = None
    python_kernel: str | None = None
    kernel_ended: bool = False
    profile: str | None = None

    def words(self) -> str:
        """`; now: model x, Python kernel y from the next run`, or "" when nothing changed."""
        now = [f"model {self.model}"] if self.model else []
        if self.python_kernel:
            now.append(f"Python kernel {self.python_kernel} from the next run" + (
                " (a new kernel: the variables of the running one are gone)"
                if self.kernel_ended else ""))
        if self.profile:
            now.append(f"policy {self.profile}")
        return f"; now: {', '.join(now)}" if now else ""


def trust_decided(outcome: str, workspace: Path, trusted_before: bool,
                  variable: str, applied: TrustApplied | None = None) -> str:
    """What came of the trust question (its `approval` outcome): trusted (`approved`),
    with what it changed (`applied`); held as the person said (`declined`), or held as
    no one answered (what changed since the workspace was trusted, or all that came with
    an untrusted one)."""
    if outcome == "approved":
        now = applied.words() if applied is not None else ""
        return f"Trusted {workspace}: its skills, persona and lily.yaml apply{now}."
    if outcome == "declined":
        return ("Held for this session: what the question listed. To trust it later, "
                f"{trust_help(workspace, variable)}.")
    if trusted_before:
        return ("What changed in this workspace since you trusted it is held (`/skills` "
                f"lists it). To trust it, {trust_help(workspace, variable)}.")
    return ("This workspace is not trusted, so what came with it is held (`/skills` lists "
            f"the skills). To trust it, {trust_help(workspace, variable)}.")


def trust_store_problem(problem: str) -> str:
    return f"Trust: {problem}."


def trusted_from_elsewhere(workspace: Path, applied: TrustApplied | None = None) -> str:
    """The person trusted the workspace from a terminal (or another notebook) meanwhile."""
    now = applied.words() if applied is not None else ""
    return f"Trusted from elsewhere: what came with {workspace} applies from this cell{now}."


def rerun_replaced(text: str) -> str:
    """`/rerun` of the last turn: which turn the new answer takes the place of."""
    return (f'Asked again in place of the last turn, "{text}" (its answer is no longer in '
            "the conversation).")


# --- the session's services -------------------------------------------------------------


def event_log_off(problem: str) -> str:
    return f"The event log is off: {problem}."


def mcp_server_failed(name: str, error: str | None) -> str:
    return (f"MCP server '{name}' could not start: {error}. Its tools are not offered this "
            "session (`/mcp` shows the servers).")


# --- a tool call ------------------------------------------------------------------------


def tool_arguments_not_json(name: str) -> str:
    return f"Tool {name}: not run: its arguments are not a JSON object"


def tool_ran(name: str, ran: bool, detail: str) -> str:
    """A call of a tool that does not announce itself: ran, or why not (its detail)."""
    return f"Tool {name}: {'ran' if ran else detail.rstrip('.')}"


# --- the request's skill ----------------------------------------------------------------

SkillChosenBy = Literal["model", "near-equal", "ranker"]


def skill_chosen(name: str, by: SkillChosenBy, score: float = 0.0, left: int = 0) -> str:
    """The skill a request uses from now on: selected by the model (`load_skill`), chosen
    by it among near-equal matches, or the ranker's clear best match (`score`); `left`:
    the characters of its SKILL.md left out to fit the context window."""
    how = {"model": "selected by the model",
           "near-equal": "chosen by the model among near-equal matches",
           "ranker": f"best match for this request, score {score:.2f}"}[by]
    cut = f"; its SKILL.md less its last {left:,} characters, to fit" if left else ""
    return f"Skill: {name} ({how}{cut})"


def forced_skill_cut(name: str, left: int) -> str:
    """The skill the person invoked, its SKILL.md cut to fit the model's context window."""
    return (f"Skill: {name}: its SKILL.md less its last {left:,} characters, to fit the "
            "model's context window.")


def selection_refused(detail: str) -> str:
    return f"Skill selection refused: {detail}; answering without a skill."
