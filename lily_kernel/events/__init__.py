"""The session's structured event log: every kind declared once (`kinds.py` and the
modules beside it), and the log that writes them (`log.py`).

The kinds a session logs from its start to its first cell's end are loaded with the
package; every other module of kinds with the first use of one of its names (importing
a kind from this package, or `KINDS`/`EVENT_KINDS`, which load them all): each kind is
a class whose making costs its compile, and most sessions start without a model call,
a tool or a network connection."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from lily_kernel.events.kinds import (
    Answer,
    Caller,
    CallOutcome,
    Cell,
    CellFinished,
    CellStatus,
    Command,
    DecidedBy,
    EventData,
    InvokedBy,
    LoadOutcome,
    NetworkDecidedBy,
    ProfileSetBy,
    RunStatus,
    ScriptOutcome,
    SelectionOutcome,
    SessionStarted,
    SkillCatalogUpdated,
    SkillWarning,
    TrustChecked,
    TrustedBy,
    catalog_events,
)
from lily_kernel.events.log import (
    LILY_FOLDER,
    Event,
    EventLog,
    keep_out_of_git,
    recorded_settings,
    session_log_path,
)

if TYPE_CHECKING:  # loaded by __getattr__ below, with their first use
    from lily_kernel.events.change_kinds import (
        McpServerStarted,
        NetworkConnection,
        PolicyChanged,
        TrustDecided,
    )
    from lily_kernel.events.kinds import KINDS
    from lily_kernel.events.model_kinds import ModelCall, ModelLoad, SkillSelection
    from lily_kernel.events.tool_kinds import (
        Approval,
        CodeRun,
        SkillFileRead,
        SkillGrant,
        SkillInvoked,
        SkillLoaded,
        SkillScriptRun,
        ToolCalled,
    )
    from lily_kernel.events.turns import (
        ConversationHow,
        ConversationStarted,
        TurnDiverged,
        TurnRecorded,
        TurnReplay,
        TurnSource,
    )

    EVENT_KINDS: tuple[str, ...]

# The modules of kinds loaded with their first use, and the names each gives.
_LATER = {
    "lily_kernel.events.model_kinds": ("ModelCall", "ModelLoad", "SkillSelection"),
    "lily_kernel.events.tool_kinds": ("Approval", "CodeRun", "SkillFileRead", "SkillGrant",
                                      "SkillInvoked", "SkillLoaded", "SkillScriptRun",
                                      "ToolCalled"),
    "lily_kernel.events.change_kinds": ("McpServerStarted", "NetworkConnection",
                                        "PolicyChanged", "TrustDecided"),
    "lily_kernel.events.turns": ("ConversationHow", "ConversationStarted", "TurnDiverged",
                                 "TurnRecorded", "TurnReplay", "TurnSource"),
}
_MODULE_OF = {name: module for module, names in _LATER.items() for name in names}

__all__ = [
    "EVENT_KINDS",
    "KINDS",
    "LILY_FOLDER",
    "Answer",
    "Approval",
    "CallOutcome",
    "Caller",
    "Cell",
    "CellFinished",
    "CellStatus",
    "CodeRun",
    "Command",
    "ConversationHow",
    "ConversationStarted",
    "DecidedBy",
    "Event",
    "EventData",
    "EventLog",
    "InvokedBy",
    "LoadOutcome",
    "McpServerStarted",
    "ModelCall",
    "ModelLoad",
    "NetworkConnection",
    "NetworkDecidedBy",
    "PolicyChanged",
    "ProfileSetBy",
    "RunStatus",
    "ScriptOutcome",
    "SelectionOutcome",
    "SessionStarted",
    "SkillCatalogUpdated",
    "SkillFileRead",
    "SkillGrant",
    "SkillInvoked",
    "SkillLoaded",
    "SkillScriptRun",
    "SkillSelection",
    "SkillWarning",
    "ToolCalled",
    "TrustChecked",
    "TrustDecided",
    "TrustedBy",
    "TurnDiverged",
    "TurnRecorded",
    "TurnReplay",
    "TurnSource",
    "catalog_events",
    "keep_out_of_git",
    "recorded_settings",
    "session_log_path",
]


def __getattr__(name: str) -> Any:
    """A kind (or alias) of a module not loaded yet; `KINDS` and `EVENT_KINDS` complete."""
    if name in ("KINDS", "EVENT_KINDS"):
        for later in _LATER:
            importlib.import_module(later)
        from lily_kernel.events.kinds import KINDS

        if name == "KINDS":
            return KINDS  # the registry itself: kinds declared later (a tool's) join it
        # Lily's own kinds (not a test's or a tool's own).
        return tuple(kind for kind, cls in KINDS.items()
                     if cls.__module__.startswith("lily_kernel.events."))
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
