"""Notes: text notes in folders, private unless shared with someone."""

from __future__ import annotations

import sqlite3
from typing import Any

from rollgym.envs.tools.api import TIME_FORMAT, Session, ToolError, like, page_of, tool
from rollgym.envs.tools.owned import delete_owned, owner_only, remove_person
from rollgym.envs.tools.people import WorldGen

SCHEMA = """
CREATE TABLE notes (
    id INTEGER PRIMARY KEY, owner TEXT NOT NULL, title TEXT NOT NULL, body TEXT NOT NULL, folder TEXT NOT NULL,
    pinned INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL, updated_at TEXT NOT NULL
);
CREATE TABLE shares (id INTEGER PRIMARY KEY, note_id INTEGER NOT NULL, email TEXT NOT NULL, can_edit INTEGER NOT NULL);
"""
FOLDERS = {
    "Recipes": ["Lentil soup", "Banana bread", "Pad thai", "Shakshuka", "Pesto pasta"],
    "Travel": ["Lisbon itinerary", "Packing list", "Kyoto ideas", "Road trip stops"],
    "Work": ["Meeting notes", "Q3 goals", "Onboarding checklist", "Retro actions", "Hiring plan"],
    "Personal": ["Gift ideas", "Books to read", "Workout plan", "Garden plans"],
    "Ideas": ["App idea", "Blog post drafts", "Side project"],
}
LINES = ["- first item", "- call back on Monday", "- buy fresh basil", "- check the budget", "- ask about dates"]


def populate(conn: sqlite3.Connection, gen: WorldGen) -> None:
    """The user's notes in five folders (some shared), and others' private notes (some shared with the user)."""
    for folder, titles in FOLDERS.items():
        for title in titles:
            if gen.rng.random() < 0.85:
                body = "\n".join(LINES[int(i)] for i in gen.rng.choice(len(LINES), 3, replace=False))
                when = gen.when(90)
                conn.execute("INSERT INTO notes (owner, title, body, folder, created_at, updated_at) "
                             "VALUES (?,?,?,?,?,?)", (gen.me.email, title, body, folder, when, when))
    others = gen.others()
    for i in range(30):
        owner = gen.pick(others, 1)[0]
        folder = list(FOLDERS)[i % len(FOLDERS)]
        when = gen.when(60)
        cur = conn.execute("INSERT INTO notes (owner, title, body, folder, created_at, updated_at) "
                           "VALUES (?,?,?,?,?,?)",
                           (owner.email, f"{owner.name.split()[0]}'s {folder.lower()} notes", "private text",
                            folder, when, when))
        if i % 5 == 0:
            conn.execute("INSERT INTO shares (note_id, email, can_edit) VALUES (?,?,0)", (cur.lastrowid, gen.me.email))


_COLUMNS = "id, owner, title, body, folder, pinned, created_at, updated_at"
_VISIBLE = "(owner = ? OR id IN (SELECT note_id FROM shares WHERE email = ?))"


def _row(session: Session, r: Any, full: bool = True) -> dict[str, Any]:
    out = {"note_id": r[0], "owner": r[1], "title": r[2], "folder": r[4], "pinned": bool(r[5]),
           "created_at": r[6], "updated_at": r[7]}
    if full:
        out["body"] = r[3]
        if r[1] == session.user:
            shares = session.db("notes").execute("SELECT email, can_edit FROM shares WHERE note_id = ? ORDER BY id",
                                                 (r[0],)).fetchall()
            out["shared_with"] = [{"email": e, "can_edit": bool(c)} for e, c in shares]
    return out


def _visible(session: Session, note_id: int) -> Any:
    row = session.db("notes").execute(f"SELECT {_COLUMNS} FROM notes WHERE id = ? AND {_VISIBLE}",
                                      (note_id, session.user, session.user)).fetchone()
    if row is None:
        raise ToolError("not_found", f"You have no note with note_id {note_id}.")
    return row


def _editable(session: Session, note_id: int) -> Any:
    row = _visible(session, note_id)
    if row[1] != session.user and not session.db("notes").execute(
            "SELECT 1 FROM shares WHERE note_id = ? AND email = ? AND can_edit = 1",
            (note_id, session.user)).fetchone():
        raise ToolError("permission_denied", "This note was shared with you read-only.")
    return row


def _owned(session: Session, note_id: int) -> Any:
    return owner_only(session, _visible(session, note_id), "Only the note's owner can do that.")


@tool("notes", writes=False)
def notes_search(
    session: Session, query: str = "", folder: str | None = None, page: int = 1, page_size: int = 10
) -> dict[str, Any]:
    """Search your notes and notes shared with you by title or text, sorted by title. Bodies are not shown.

    Args:
        query: Text to look for in the title or body.
        folder: Only notes in this folder (exact name).
        page: Page number, starting at 1.
        page_size: Results per page (1-50).
    """
    sql = f"SELECT {_COLUMNS} FROM notes WHERE {_VISIBLE} AND (title LIKE ? ESCAPE '\\' OR body LIKE ? ESCAPE '\\')"
    params: list[Any] = [session.user, session.user, like(query), like(query)]
    if folder is not None:
        sql += " AND folder = ?"
        params.append(folder)
    return page_of(session.db("notes"), sql + " ORDER BY title, id", params, page, page_size,
                   lambda r: _row(session, r, full=False))


@tool("notes", writes=False)
def notes_folders(session: Session) -> dict[str, Any]:
    """Your note folders with the number of notes in each."""
    rows = session.db("notes").execute("SELECT folder, COUNT(*) FROM notes WHERE owner = ? GROUP BY folder "
                                       "ORDER BY folder", (session.user,)).fetchall()
    return {"folders": [{"folder": f, "notes": n} for f, n in rows]}


@tool("notes", writes=False)
def notes_get(session: Session, note_id: int) -> dict[str, Any]:
    """Open one note with its text.

    Args:
        note_id: The note's id, from notes_search.
    """
    return _row(session, _visible(session, note_id))


@tool("notes", writes=True)
def notes_create(session: Session, title: str, body: str = "", folder: str = "Personal") -> dict[str, Any]:
    """Create a note.

    Args:
        title: The note's title.
        body: The note's text.
        folder: The folder to put it in; a new name creates the folder.
    """
    if not title.strip() or not folder.strip():
        raise ToolError("invalid_arguments", "A note needs a title and a folder name.")
    now = session.now.strftime(TIME_FORMAT)
    cur = session.db("notes").execute(
        "INSERT INTO notes (owner, title, body, folder, created_at, updated_at) VALUES (?,?,?,?,?,?)",
        (session.user, title.strip(), body, folder.strip(), now, now))
    return _row(session, _visible(session, int(cur.lastrowid or 0)))


@tool("notes", writes=True)
def notes_update(
    session: Session, note_id: int, title: str | None = None, body: str | None = None, folder: str | None = None,
    pinned: bool | None = None,
) -> dict[str, Any]:
    """Change a note you own or may edit; fields left out stay as they are.

    Args:
        note_id: The note to change.
        title: New title.
        body: New text (replaces the old text).
        folder: Move it to this folder (owners only).
        pinned: Pin or unpin it (owners only).
    """
    row = _editable(session, note_id) if folder is None and pinned is None else _owned(session, note_id)
    values = (row[2] if title is None else title.strip(), row[3] if body is None else body,
              row[4] if folder is None else folder.strip(), row[5] if pinned is None else int(pinned))
    if not values[0] or not values[2]:
        raise ToolError("invalid_arguments", "Title and folder must not be empty.")
    session.db("notes").execute("UPDATE notes SET title = ?, body = ?, folder = ?, pinned = ?, updated_at = ? "
                                "WHERE id = ?", (*values, session.now.strftime(TIME_FORMAT), note_id))
    return _row(session, _visible(session, note_id))


@tool("notes", writes=True)
def notes_append(session: Session, note_id: int, text: str) -> dict[str, Any]:
    """Add text as a new line at the end of a note you own or may edit.

    Args:
        note_id: The note.
        text: The line to add.
    """
    row = _editable(session, note_id)
    body = f"{row[3]}\n{text}" if row[3] else text
    return notes_update(session, note_id, body=body)


@tool("notes", writes=True)
def notes_delete(session: Session, note_id: int) -> dict[str, Any]:
    """Delete a note you own (and its shares).

    Args:
        note_id: The note to delete.
    """
    _owned(session, note_id)
    return delete_owned(session, "notes", "notes", note_id, key="note_id", dependents=("shares",))


@tool("notes", writes=True)
def notes_share(session: Session, note_id: int, email: str, can_edit: bool = False) -> dict[str, Any]:
    """Share a note you own with someone.

    Args:
        note_id: The note to share.
        email: Their email address.
        can_edit: Whether they may edit it.
    """
    _owned(session, note_id)
    who = email.strip().lower()
    if "@" not in who or who == session.user:
        raise ToolError("invalid_arguments", "email must be someone else's email address.")
    db = session.db("notes")
    if db.execute("SELECT 1 FROM shares WHERE note_id = ? AND email = ?", (note_id, who)).fetchone():
        db.execute("UPDATE shares SET can_edit = ? WHERE note_id = ? AND email = ?", (int(can_edit), note_id, who))
    else:
        db.execute("INSERT INTO shares (note_id, email, can_edit) VALUES (?,?,?)", (note_id, who, int(can_edit)))
    return _row(session, _visible(session, note_id))


@tool("notes", writes=True)
def notes_unshare(session: Session, note_id: int, email: str) -> dict[str, Any]:
    """Stop sharing a note you own with someone.

    Args:
        note_id: The note.
        email: Their email address.
    """
    _owned(session, note_id)
    remove_person(session, "notes", "shares", "note_id", note_id, email, "The note is not shared with that address.")
    return _row(session, _visible(session, note_id))
