"""Lily's exception tree; third-party exceptions are translated into it at the edges.

    LilyError                      every error Lily raises on purpose
    ├── ConfigError                lily.yaml or a LILY_* variable is invalid
    ├── SkillRootError             a configured skills root exists but cannot be read
    ├── CommandError               a `/` command was used wrongly (message shown as is)
    ├── ToolError                  a tool refused or failed (becomes a tool result)
    ├── ModelNotConfiguredError    a chat cell with no model configured
    ├── StepLimitError             the model did not finish within max_steps (Lily's bound)
    ├── UsageError                 bad input to the `lily` command (a missing notebook, ...)
    └── ModelError                 a provider fault, with its `kind`
        (auth, rate_limit, timeout, connection, server, bad_response, context_window,
         not_found, bad_request)

User-facing code shows `str(error)`; only errors outside this tree are bugs that keep
their traceback.
"""

from __future__ import annotations

__all__ = [
    "CommandError",
    "ConfigError",
    "LilyError",
    "ModelError",
    "ModelNotConfiguredError",
    "SkillRootError",
    "StepLimitError",
    "ToolError",
    "UsageError",
]


class LilyError(Exception):
    """Base of every error Lily raises deliberately; its message is for the person."""


class ConfigError(LilyError):
    """Configuration (lily.yaml or LILY_* environment variables) is invalid."""


class SkillRootError(LilyError):
    """A configured skills root exists but cannot be listed."""


class CommandError(LilyError):
    """A command was called wrongly; the message is the exact text shown."""


class ToolError(LilyError):
    """A tool refused its input or failed; the message becomes the tool result."""


class ModelNotConfiguredError(LilyError):
    """A conversational cell ran while no model is configured."""


class StepLimitError(LilyError):
    """A conversational turn reached `max_steps` model calls; not a provider fault."""


class ModelError(LilyError):
    """The model provider failed; `kind` names the fault for people and logs."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class UsageError(LilyError):
    """The `lily` command was given something it cannot use; shown as `lily: <message>`."""
