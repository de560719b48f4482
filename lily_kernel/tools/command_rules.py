"""Which command lines the shell may run while a skill narrows it (`allowed-tools`).

A skill's `Bash(git status:*)` entries (Claude Code's form; skills/fields.py
`shell_commands` reads them) narrow the shell to commands starting with those words:
`git status:*` (and the newer `git status *`) allows `git status` and `git status
--short`, never `git statusx` nor `git push`; `npm test` allows exactly `npm test`.
While narrowed, a command holding a shell control operator (`;`, `&`, `|`, `<`, `>`, a
backtick, `$(`, a line break) is refused wherever it stands, inside quotes too: Lily
does not parse the shell's quoting to decide what else a line would run. A pattern of
another form (`git * main`) allows nothing. Narrowing never widens the policy.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["CONTROL_OPERATORS", "command_refusal"]

CONTROL_OPERATORS = (";", "&", "|", "<", ">", "`", "$(", "\n", "\r")
_PREFIX_ENDS = (":*", " *")


def _words(pattern: str) -> tuple[tuple[str, ...], bool] | None:
    """A pattern's words and whether more may follow them; None when it is of a form
    Lily does not read."""
    prefix = pattern.endswith(_PREFIX_ENDS)
    text = pattern[:-2] if prefix else pattern
    if "*" in text or not text.split():
        return None
    return tuple(text.split()), prefix


def _allows(pattern: str, words: list[str]) -> bool:
    read = _words(pattern)
    if read is None:
        return False
    wanted, prefix = read
    return (words[:len(wanted)] == list(wanted) if prefix
            else words == list(wanted))


def command_refusal(command: str, patterns: Sequence[str], skill: str) -> str | None:
    """Why `command` may not run while the skill `skill` allows only `patterns`, or None
    when one of them allows it."""
    listed = ", ".join(f"`{p}`" for p in patterns)
    operator = next((op for op in CONTROL_OPERATORS if op in command), None)
    if operator is not None:
        shown = {"\n": "a line break", "\r": "a carriage return"}.get(operator, f"'{operator}'")
        return (f"the active skill '{skill}' allows only the commands {listed} (its "
                f"allowed-tools), and this command holds {shown}: shell control operators "
                "(; & | < > ` $( and line breaks) are refused while a skill narrows the "
                "commands; run one command at a time")
    words = command.split()
    if any(_allows(pattern, words) for pattern in patterns):
        return None
    return (f"the active skill '{skill}' allows only the commands {listed} (its "
            "allowed-tools); this command is not one of them")
