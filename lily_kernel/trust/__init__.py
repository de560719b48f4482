"""Trust for what arrives with a folder: the store, held workspace skills and persona,
settings an untrusted lily.yaml may not widen (docs/skills.md, "Trust")."""

from lily_kernel.trust.review import HeldSkill, hold_untrusted, skill_folder_digest
from lily_kernel.trust.settings import (
    untrusted_folder_policy,
    untrusted_policy,
    untrusted_settings,
)
from lily_kernel.trust.state import (
    PERSONA_FOLDER,
    TRUST_VARIABLE,
    TrustState,
    trusted_by_environment,
)
from lily_kernel.trust.store import TRUST_FILE, TrustStore, WorkspaceTrust

__all__ = [
    "PERSONA_FOLDER",
    "TRUST_FILE",
    "TRUST_VARIABLE",
    "HeldSkill",
    "TrustState",
    "TrustStore",
    "WorkspaceTrust",
    "hold_untrusted",
    "skill_folder_digest",
    "trusted_by_environment",
    "untrusted_folder_policy",
    "untrusted_policy",
    "untrusted_settings",
]
