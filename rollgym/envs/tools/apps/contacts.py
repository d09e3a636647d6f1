"""Contacts: the user's address book (private to each owner)."""

from __future__ import annotations

import sqlite3
from typing import Any, Literal

from rollgym.envs.tools.api import Session, ToolError, like, page_of, tool
from rollgym.envs.tools.owned import delete_owned
from rollgym.envs.tools.people import WorldGen

SCHEMA = """
CREATE TABLE contacts (
    id INTEGER PRIMARY KEY, owner TEXT NOT NULL, name TEXT NOT NULL, email TEXT NOT NULL,
    phone TEXT NOT NULL, relationship TEXT NOT NULL, birthday TEXT NOT NULL, notes TEXT NOT NULL DEFAULT ''
);
"""
RELATIONSHIPS = ("friend", "family", "coworker", "neighbor")
Relationship = Literal["friend", "family", "coworker", "neighbor"]


def populate(conn: sqlite3.Connection, gen: WorldGen) -> None:
    """Fill the address books: most people for the user, a few for some others."""
    books = [(gen.me, gen.pick(gen.others(), 17))] + [(p, gen.pick([q for q in gen.people if q != p], 5))
                                                      for p in gen.others()[:6]]
    for owner, known in books:
        for person in known:
            rel = RELATIONSHIPS[int(gen.rng.integers(len(RELATIONSHIPS)))]
            if gen.rng.random() < 0.15:  # some birthdays fall on the world's today
                birthday = f"{1970 + int(gen.rng.integers(30))}-{gen.now:%m-%d}"
            else:
                birthday = f"{1970 + int(gen.rng.integers(30))}-{int(gen.rng.integers(1, 13)):02d}-" \
                           f"{int(gen.rng.integers(1, 29)):02d}"
            conn.execute(
                "INSERT INTO contacts (owner, name, email, phone, relationship, birthday) VALUES (?,?,?,?,?,?)",
                (owner.email, person.name, person.email, person.phone, rel, birthday),
            )


def _row(r: sqlite3.Row | tuple[Any, ...]) -> dict[str, Any]:
    keys = ("contact_id", "name", "email", "phone", "relationship", "birthday", "notes")
    return dict(zip(keys, r))


_COLUMNS = "id, name, email, phone, relationship, birthday, notes"


def _own(session: Session, contact_id: int) -> tuple[Any, ...]:
    row = session.db("contacts").execute(
        f"SELECT {_COLUMNS} FROM contacts WHERE id = ? AND owner = ?", (contact_id, session.user)
    ).fetchone()
    if row is None:
        raise ToolError("not_found", f"You have no contact with contact_id {contact_id}.")
    return tuple(row)


@tool("contacts", writes=False)
def contacts_search(
    session: Session, query: str = "", relationship: Relationship | None = None, page: int = 1, page_size: int = 10
) -> dict[str, Any]:
    """Search your contacts by name, email or phone, sorted by name.

    Args:
        query: Text to look for in the name, email or phone; empty lists every contact.
        relationship: Only contacts with this relationship.
        page: Page number, starting at 1.
        page_size: Results per page (1-50).
    """
    sql = f"SELECT {_COLUMNS} FROM contacts WHERE owner = ? AND (name LIKE ? ESCAPE '\\' OR email LIKE ? ESCAPE '\\' " \
          "OR phone LIKE ? ESCAPE '\\')"
    params: list[Any] = [session.user, like(query), like(query), like(query)]
    if relationship is not None:
        sql += " AND relationship = ?"
        params.append(relationship)
    return page_of(session.db("contacts"), sql + " ORDER BY name, id", params, page, page_size, _row)


@tool("contacts", writes=False)
def contacts_get(session: Session, contact_id: int) -> dict[str, Any]:
    """Show one of your contacts.

    Args:
        contact_id: The contact's id, from contacts_search.
    """
    return _row(_own(session, contact_id))


@tool("contacts", writes=True)
def contacts_create(
    session: Session, name: str, email: str, phone: str = "", relationship: Relationship = "friend",
    birthday: str = "", notes: str = "",
) -> dict[str, Any]:
    """Add a contact to your address book.

    Args:
        name: Full name.
        email: Email address.
        phone: Phone number.
        relationship: How you know them.
        birthday: Birthday as YYYY-MM-DD, or empty.
        notes: Free text.
    """
    if not name.strip() or "@" not in email:
        raise ToolError("invalid_arguments", "A contact needs a name and a valid email address.")
    cur = session.db("contacts").execute(
        "INSERT INTO contacts (owner, name, email, phone, relationship, birthday, notes) VALUES (?,?,?,?,?,?,?)",
        (session.user, name.strip(), email.strip().lower(), phone.strip(), relationship, birthday.strip(), notes),
    )
    return {"contact_id": cur.lastrowid, "created": True}


@tool("contacts", writes=True)
def contacts_update(
    session: Session, contact_id: int, name: str | None = None, email: str | None = None,
    phone: str | None = None, relationship: Relationship | None = None, notes: str | None = None,
) -> dict[str, Any]:
    """Change fields of one of your contacts; fields left out stay as they are.

    Args:
        contact_id: The contact to change.
        name: New full name.
        email: New email address.
        phone: New phone number.
        relationship: New relationship.
        notes: New notes (replaces the old ones).
    """
    _own(session, contact_id)
    given = {"name": name, "email": email, "phone": phone, "relationship": relationship, "notes": notes}
    changes: dict[str, str] = {k: v.strip() if k != "notes" else v for k, v in given.items() if v is not None}
    if "email" in changes:
        changes["email"] = changes["email"].lower()
        if "@" not in changes["email"]:
            raise ToolError("invalid_arguments", "email must be an email address.")
    if not changes:
        raise ToolError("invalid_arguments", "Give at least one field to change.")
    for column, value in changes.items():  # column names come from the fixed dict above, never from the agent
        session.db("contacts").execute(f"UPDATE contacts SET {column} = ? WHERE id = ?", (value, contact_id))
    return _row(_own(session, contact_id))


@tool("contacts", writes=True)
def contacts_delete(session: Session, contact_id: int) -> dict[str, Any]:
    """Delete one of your contacts.

    Args:
        contact_id: The contact to delete.
    """
    _own(session, contact_id)
    return delete_owned(session, "contacts", "contacts", contact_id, key="contact_id")


@tool("contacts", writes=False)
def contacts_birthdays(session: Session, month_day: str) -> dict[str, Any]:
    """List your contacts whose birthday falls on a given day of the year.

    Args:
        month_day: The day as MM-DD, e.g. 03-14.
    """
    if len(month_day) != 5 or month_day[2] != "-":
        raise ToolError("invalid_arguments", "month_day must look like 03-14.")
    rows = session.db("contacts").execute(
        f"SELECT {_COLUMNS} FROM contacts WHERE owner = ? AND substr(birthday, 6) = ? ORDER BY name",
        (session.user, month_day),
    ).fetchall()
    return {"results": [_row(r) for r in rows]}


@tool("contacts", writes=False)
def contacts_find_email(session: Session, email: str) -> dict[str, Any]:
    """Find your contact with exactly this email address.

    Args:
        email: The email address.
    """
    row = session.db("contacts").execute(
        f"SELECT {_COLUMNS} FROM contacts WHERE owner = ? AND email = ?", (session.user, email.strip().lower())
    ).fetchone()
    if row is None:
        raise ToolError("not_found", "None of your contacts has that email address.")
    return _row(row)


@tool("contacts", writes=False)
def contacts_relationships(session: Session) -> dict[str, Any]:
    """How many of your contacts have each relationship."""
    rows = session.db("contacts").execute(
        "SELECT relationship, COUNT(*) FROM contacts WHERE owner = ? GROUP BY relationship ORDER BY relationship",
        (session.user,)).fetchall()
    return {"relationships": {r: n for r, n in rows}}
