"""Session: the deterministic state container of one notebook."""

from lily_kernel.session.session import ConversationState, Session

__all__ = ["ConversationState", "Session"]
