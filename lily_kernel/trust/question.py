"""The trust question, as the notebook asks it and `lily trust` prints it: what trusting
would let take effect, bounded, nothing in it invisible or moving the cursor. Pure."""

from __future__ import annotations

from pathlib import Path

from lily_kernel.visible import visible

__all__ = ["MAX_LISTED", "trust_question"]

MAX_LISTED = 20  # skills a trust question names; the rest are counted


def trust_question(workspace: Path, skills: list[str], settings: list[str],
                   trusted: bool = False) -> str:
    """The question that lists what would be trusted: the settings (what they would
    change) first, then the skills, at most MAX_LISTED of them; every line as it is,
    nothing in it invisible or moving the cursor. `trusted`: the store trusts the
    workspace, and what is held was added or changed since (the question says so, not
    that the workspace is untrusted)."""
    shown = visible(str(workspace))
    if trusted:
        lines = [f"Things changed in this trusted workspace since you trusted it: {shown}",
                 "Trusting them lets them take effect:"]
    else:
        lines = [f"This workspace is not trusted: {shown}",
                 "Trusting it lets what came with the folder take effect:" if skills or settings
                 else "Nothing that came with it is held; trusting it lets the model write "
                      "files here without asking each time."]
    lines += [f"  {visible(line)}" for line in settings]
    lines += [f"  skill {visible(line)}" for line in skills[:MAX_LISTED]]
    if len(skills) > MAX_LISTED:
        lines.append(f"  and {len(skills) - MAX_LISTED:,} more skills (`/skills` lists "
                     "them)")
    lines.append("Trust what changed? [y/N]" if trusted else "Trust this workspace? [y/N]")
    return "\n".join(lines)
