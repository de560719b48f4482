"""Lily's exception tree; third-party exceptions are translated into it at the edges.

    LilyError                      every error Lily raises on purpose
    ├── ConfigError                lily.yaml or a LILY_* variable is invalid
    ├── SkillRootError             a configured skills root exists but cannot be read
    ├── CommandError               a `/` command was used wrongly
    ├── ToolError                  a tool failed on its input (becomes a tool result)
    │   └── ToolRefusedError       a tool call that must not run (policy, person, rules)
    ├── ModelNotConfiguredError    a chat cell with no model configured
    ├── StepLimitError             the model did not finish within max_steps (Lily's bound)
    ├── UsageError                 bad input to the `lily` command (a missing notebook, ...)
    ├── ReplayError                a session log that cannot be replayed
    ├── TrustStoreError            the trust store is corrupt or cannot be read or written
    └── ModelError                 a provider fault, with its `kind` (a ModelFault)

Messages are facts for a person, without a prefix: the edges frame them (the kernel
shows `Error: <message>`, the CLI `lily: <message>`). Only errors outside this tree are
bugs that keep their traceback.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "CommandError",
    "ConfigError",
    "LilyError",
    "ModelError",
    "ModelFault",
    "ModelNotConfiguredError",
    "ReplayError",
    "SkillRootError",
    "StepLimitError",
    "ToolError",
    "ToolRefusedError",
    "TrustStoreError",
    "UsageError",
]


class ModelFault(StrEnum):
    """Every kind of model fault, as `ModelError.kind` and the log name it."""

    AUTH = "auth"
    RATE_LIMIT = "rate_limit"
    TIMEOUT = "timeout"
    CONNECTION = "connection"
    SERVER = "server"
    BAD_RESPONSE = "bad_response"
    CONTEXT_WINDOW = "context_window"  # the request does not fit the model's window
    NOT_FOUND = "not_found"
    BAD_REQUEST = "bad_request"
    LOCAL_MODEL = "local_model"  # a local GGUF that cannot be found, loaded or rendered


class LilyError(Exception):
    """Base of every error Lily raises deliberately; its message is for the person."""


class ConfigError(LilyError):
    """Configuration (lily.yaml or LILY_* environment variables) is invalid."""


class SkillRootError(LilyError):
    """A configured skills root exists but cannot be listed."""


class CommandError(LilyError):
    """A command was called wrongly; the message says how."""


class ToolError(LilyError):
    """A tool failed on its input; the message becomes the tool result."""


class ToolRefusedError(ToolError):
    """A tool call that must not run: the policy, the person or a rule says no."""


class ModelNotConfiguredError(LilyError):
    """A conversational cell ran while no model is configured."""


class StepLimitError(LilyError):
    """A conversational turn reached `max_steps` model calls; not a provider fault."""


class UsageError(LilyError):
    """The `lily` command was given something it cannot use; shown as `lily: <message>`."""


class ReplayError(LilyError):
    """The log cannot be replayed (missing, not a session log, truncated)."""


class TrustStoreError(LilyError):
    """The trust store (`<Lily home>/trust.json`) is corrupt, unreadable or unwritable."""


class ModelError(LilyError):
    """The model provider failed; `kind` names the fault for people and logs."""

    def __init__(self, kind: ModelFault, message: str) -> None:
        super().__init__(message)
        self.kind = kind
