"""One workspace's trust as a session sees it: how it is trusted, what is held.

Trusted by the store (what the person trusted, at its digest), by the environment
(`LILY_TRUST=workspace`: this process trusts the workspace, nothing is recorded), or
not at all. A store that cannot be read is a `problem` the person is told about, and
everything workspace-level stays held: nothing is lost, nothing is trusted by accident.
What a folder not trusted at all brings counts too: its record of recorded turns, which
Run All would replay (trust/record.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lily_kernel.errors import TrustStoreError
from lily_kernel.skills import SkillSnapshot
from lily_kernel.skills.digest import DigestCache, folder_digest
from lily_kernel.trust.record import read_record
from lily_kernel.trust.review import HeldSkill, hold_untrusted
from lily_kernel.trust.store import TrustStore, WorkspaceTrust

__all__ = ["PERSONA_FOLDER", "TRUST_VARIABLE", "TrustState", "trusted_by_environment"]

TRUST_VARIABLE = "LILY_TRUST"
PERSONA_FOLDER = "persona"


def trusted_by_environment(environ: Mapping[str, str]) -> bool:
    """`LILY_TRUST=workspace`: runners without stdin (papermill, nbclient, CI) trust the
    workspace they run in, for that process only."""
    return environ.get(TRUST_VARIABLE, "").strip().lower() == "workspace"


@dataclass
class TrustState:
    """The workspace's trust; `held_settings` are the lily.yaml lines not applied.
    `person_roots`: the skills roots of the person's own configuration (their variables
    and defaults), which hold no workspace-level skill; `digests` keeps file digests
    between sessions (skills/digest.py)."""

    workspace: Path
    store: TrustStore
    by_environment: bool = False
    held_settings: tuple[str, ...] = ()
    problem: str | None = None  # the store could not be read (told in the first cell)
    held: tuple[HeldSkill, ...] = ()  # what the last `hold` held
    person_roots: tuple[str, ...] = ()
    digests: DigestCache = field(default_factory=lambda: DigestCache(None))
    # The lily.yaml's sha256, of the bytes the configuration was parsed from.
    config_digest: str | None = None
    persona_digest: str | None = field(init=False)
    seen: WorkspaceTrust | None = field(init=False, default=None)  # the store's entry then

    def __post_init__(self) -> None:
        persona = self.workspace / PERSONA_FOLDER
        # An empty persona/ says nothing (the sandbox's placeholder while a Python
        # kernel runs is one: execution/mounts.py).
        self.persona_digest = (None if self.by_environment or not _holds_files(persona)
                               else folder_digest(str(persona), self.digests))
        if not self.by_environment:
            # A store that cannot be read is known (and told) from the start; what it
            # says now tells a trust given elsewhere later.
            self.seen = self.entry()

    def entry(self) -> WorkspaceTrust | None:
        """What the store trusts here (read anew: `lily trust` may have run meanwhile)."""
        try:
            return self.store.entry(self.workspace)
        except TrustStoreError as exc:
            self.problem = str(exc)
            return None

    def trusted(self) -> bool:
        """Whether the person trusts this folder at all (the store has it, whatever is
        held in it now, or the environment says so): an untrusted one's writes are asked."""
        return self.by_environment or self.entry() is not None

    def config_trusted(self) -> bool:
        """No lily.yaml, or one trusted at its present digest (or by the environment)."""
        if self.by_environment or self.config_digest is None:
            return True
        entry = self.entry()
        return entry is not None and entry.config == self.config_digest

    def persona_trusted(self) -> bool:
        """No persona/ folder, or one trusted at its present digest (or by the environment)."""
        if self.by_environment or self.persona_digest is None:
            return True
        entry = self.entry()
        return entry is not None and entry.persona == self.persona_digest

    def persona_line(self) -> str | None:
        """The trust question's line for a held persona/ folder (None: nothing held)."""
        if self.persona_trusted():
            return None
        entry = self.entry()
        return f"{PERSONA_FOLDER}/ ({'changed' if entry and entry.persona else 'new'})"

    def record_line(self) -> str | None:
        """The trust question's line for the folder's record of turns (None: none, or
        the folder is trusted: its record is then the sessions Lily keeps there). Read
        once a session, as it starts (the store keeps it: this session's own turns are
        not what came with the folder); a replay's store says what the recording's
        question said."""
        if self.by_environment or self.entry() is not None:
            return None
        key = str(self.workspace.resolve())
        if key not in self.store.records and self.store.path is not None:
            facts = read_record(self.workspace)
            self.store.records[key] = facts.line() if facts is not None else None
        return self.store.records.get(key)

    def hold(self, snapshot: SkillSnapshot
             ) -> tuple[SkillSnapshot, dict[str, str], tuple[HeldSkill, ...]]:
        """The snapshot with untrusted workspace skills held (`hold_untrusted`)."""
        entry = None if self.by_environment else self.entry()
        held = hold_untrusted(snapshot, self.workspace, entry, self.by_environment,
                              self.person_roots, self.digests)
        self.held = held[2]
        return held

    def trust(self, digests: Mapping[str, str]) -> None:
        """Record the workspace as trusted: its lily.yaml, persona and these skills, at
        these digests (raises TrustStoreError)."""
        self.seen = WorkspaceTrust(self.config_digest, dict(digests), self.persona_digest)
        self.store.record(self.workspace, self.seen)


def _holds_files(folder: Path) -> bool:
    """Whether `folder` is a folder with anything in it."""
    try:
        return folder.is_dir() and any(folder.iterdir())
    except OSError:
        return True  # unreadable: digested (and so reported), never taken for empty
