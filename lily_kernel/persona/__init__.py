"""Persona: the agent's SOUL, IDENTITY, USER and AGENTS files, with per-file precedence."""

from lily_kernel.persona.loader import (
    DEFAULT_AGENT,
    PERSONA_FILES,
    Persona,
    PersonaFile,
    PersonaRoots,
    list_agents,
    load_persona,
)

__all__ = [
    "DEFAULT_AGENT",
    "PERSONA_FILES",
    "Persona",
    "PersonaFile",
    "PersonaRoots",
    "list_agents",
    "load_persona",
]
