"""The supervisor: who the agent acts for, the frozen clock, and how the agent ends a task."""

from __future__ import annotations

from typing import Any

from rollgym.envs.tools.api import TIME_FORMAT, Session, tool


@tool("supervisor", writes=False)
def whoami(session: Session) -> dict[str, Any]:
    """Who you are acting for (name and email) and the current date and time."""
    return {"email": session.user, "now": session.now.strftime(TIME_FORMAT), "weekday": session.now.strftime("%A")}


@tool("supervisor", writes=True)
def complete_task(session: Session, answer: str | None = None) -> dict[str, Any]:
    """Finish the task. Call it once, when everything asked is done.

    Args:
        answer: The answer when the task asks a question (just the value, e.g. "42.50" or "Dana Okafor"); leave
            out otherwise.
    """
    session.completed = True
    session.answer = answer
    return {"completed": True}
