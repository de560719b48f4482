"""Lily: a Jupyter kernel that turns a notebook into one conversation with a skill-driven agent."""

__version__ = "0.1.0"

__all__ = ["__version__"]
