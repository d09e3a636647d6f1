"""Rows the user owns in an app's database (an event, a note, a contact): the ownership rule and deletes.

An app looks the row up (``not_found`` if the user cannot see it) and passes it here; table and column names
come from the app's code, never from the agent.
"""

from __future__ import annotations

from typing import Any

from rollgym.envs.tools.api import Session, ToolError


def owner_only(session: Session, row: Any, refusal: str) -> Any:
    """``row`` (its column 1 the owner) if the user owns it, else a permission error saying ``refusal``."""
    if row[1] != session.user:
        raise ToolError("permission_denied", refusal)
    return row


def delete_owned(session: Session, app: str, table: str, row_id: int, *, key: str,
                 dependents: tuple[str, ...] = ()) -> dict[str, Any]:
    """Delete row ``row_id`` of ``table`` and the rows of ``dependents`` whose ``key`` points at it; the tool's result.

    The app checks first that the user owns the row; table and column names come from the app, never the agent.
    """
    db = session.db(app)
    for dependent in dependents:
        db.execute(f"DELETE FROM {dependent} WHERE {key} = ?", (row_id,))
    db.execute(f"DELETE FROM {table} WHERE id = ?", (row_id,))
    return {key: row_id, "deleted": True}


def remove_person(session: Session, app: str, table: str, key: str, row_id: int, email: str, missing: str) -> None:
    """Delete the ``table`` row naming ``email`` for row ``row_id`` (an invitation, a share); ``missing`` if none."""
    cur = session.db(app).execute(f"DELETE FROM {table} WHERE {key} = ? AND email = ?", (row_id, email.strip().lower()))
    if cur.rowcount == 0:
        raise ToolError("not_found", missing)
