"""Trust for what arrives with a folder: the store, held workspace skills, settings an
untrusted lily.yaml may not widen (docs/skills.md, "Trust")."""

from lily_kernel.trust.review import HeldSkill, hold_untrusted
from lily_kernel.trust.settings import untrusted_policy, untrusted_settings
from lily_kernel.trust.state import TRUST_VARIABLE, TrustState, trusted_by_environment
from lily_kernel.trust.store import (
    TRUST_FILE,
    TrustStore,
    WorkspaceTrust,
    file_digest,
    folder_digest,
)

__all__ = [
    "TRUST_FILE",
    "TRUST_VARIABLE",
    "HeldSkill",
    "TrustState",
    "TrustStore",
    "WorkspaceTrust",
    "file_digest",
    "folder_digest",
    "hold_untrusted",
    "trusted_by_environment",
    "untrusted_policy",
    "untrusted_settings",
]
