"""Calendar: events with attendees; owners edit their events, invitees only see and answer them."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta
from typing import Any, Literal

from rollgym.envs.tools.api import TIME_FORMAT, Session, ToolError, like, page_of, parse_time, time_window, tool
from rollgym.envs.tools.owned import delete_owned, owner_only, remove_person
from rollgym.envs.tools.people import WorldGen

SCHEMA = """
CREATE TABLE events (
    id INTEGER PRIMARY KEY, owner TEXT NOT NULL, title TEXT NOT NULL, start TEXT NOT NULL, end TEXT NOT NULL,
    location TEXT NOT NULL DEFAULT '', description TEXT NOT NULL DEFAULT ''
);
CREATE TABLE attendees (
    id INTEGER PRIMARY KEY, event_id INTEGER NOT NULL, email TEXT NOT NULL, status TEXT NOT NULL
);
"""
RESTAURANTS = ["Luigi's", "Sakura House", "The Green Fork", "Casa Lola", "Blue Door Bistro"]
SOLO = [("Dentist", "Main St Clinic"), ("Gym", "FitClub"), ("Focus time", ""), ("Haircut", "Snip & Co")]
WORK = ["Project sync", "Design review", "Planning", "Budget review", "Coffee chat"]
Response = Literal["accepted", "declined", "tentative"]


def populate(conn: sqlite3.Connection, gen: WorldGen) -> None:
    """The user's events over two months, dinners on past Fridays, and others' private events."""
    others = gen.others()

    def add(owner: str, title: str, start: str, minutes: int, location: str, guests: list[str]) -> None:
        end = (datetime.strptime(start, TIME_FORMAT) + timedelta(minutes=minutes)).strftime(TIME_FORMAT)
        cur = conn.execute("INSERT INTO events (owner, title, start, end, location) VALUES (?,?,?,?,?)",
                           (owner, title, start, end, location))
        for guest in guests:
            status = "accepted" if gen.rng.random() < 0.8 else "tentative"
            conn.execute("INSERT INTO attendees (event_id, email, status) VALUES (?,?,?)",
                         (cur.lastrowid, guest, status))

    for _ in range(70):
        start = gen.when(30, 21, hours=(8, 17))
        minutes = int(gen.rng.choice([30, 45, 60, 90]))
        roll = gen.rng.random()
        if roll < 0.25:
            title, location = SOLO[int(gen.rng.integers(len(SOLO)))]
            add(gen.me.email, title, start, minutes, location, [])
        elif roll < 0.6:
            person = gen.pick(others, 1)[0]
            add(gen.me.email, f"1:1 with {person.name.split()[0]}", start, minutes, "", [person.email])
        else:
            guests = [p.email for p in gen.pick(others, int(gen.rng.integers(2, 5)))]
            add(gen.me.email, WORK[int(gen.rng.integers(len(WORK)))], start, minutes, "Room 4", guests)
    for weeks in range(1, 6):  # a dinner on each of the last five Fridays
        friday = gen.now - timedelta(days=(gen.now.weekday() - 4) % 7 or 7) - timedelta(weeks=weeks - 1)
        place = RESTAURANTS[int(gen.rng.integers(len(RESTAURANTS)))]
        guests = [p.email for p in gen.pick(others, int(gen.rng.integers(2, 5)))]
        add(gen.me.email, f"Dinner at {place}", friday.replace(hour=19, minute=0).strftime(TIME_FORMAT), 120,
            place, guests)
    for _ in range(40):  # others' events; some invite the user
        owner = gen.pick(others, 1)[0]
        guests = [p.email for p in gen.pick([p for p in gen.people if p != owner], 2)]
        add(owner.email, WORK[int(gen.rng.integers(len(WORK)))], gen.when(30, 21), 60, "Room 2", guests)


_COLUMNS = "id, owner, title, start, end, location, description"


def _row(session: Session, r: Any) -> dict[str, Any]:
    people = session.db("calendar").execute(
        "SELECT email, status FROM attendees WHERE event_id = ? ORDER BY id", (r[0],)
    ).fetchall()
    return {"event_id": r[0], "owner": r[1], "title": r[2], "start": r[3], "end": r[4], "location": r[5],
            "description": r[6], "attendees": [{"email": e, "status": s} for e, s in people]}


_VISIBLE = "(owner = ? OR id IN (SELECT event_id FROM attendees WHERE email = ?))"


def _visible(session: Session, event_id: int) -> Any:
    row = session.db("calendar").execute(
        f"SELECT {_COLUMNS} FROM events WHERE id = ? AND {_VISIBLE}", (event_id, session.user, session.user)
    ).fetchone()
    if row is None:
        raise ToolError("not_found", f"You have no event with event_id {event_id}.")
    return row


def _owned(session: Session, event_id: int) -> Any:
    return owner_only(session, _visible(session, event_id), "Only the event's owner can change it; you are an invitee.")


@tool("calendar", writes=False)
def calendar_search(
    session: Session, query: str = "", start_after: str | None = None, start_before: str | None = None,
    attendee: str = "", page: int = 1, page_size: int = 10,
) -> dict[str, Any]:
    """Search events you own or are invited to, in start-time order.

    Args:
        query: Text to look for in the title, location or description.
        start_after: Only events starting at or after this time (YYYY-MM-DD HH:MM or YYYY-MM-DD).
        start_before: Only events starting before this time (YYYY-MM-DD HH:MM or YYYY-MM-DD).
        attendee: Only events that a person whose email contains this text owns or is invited to.
        page: Page number, starting at 1.
        page_size: Results per page (1-50).
    """
    sql = f"SELECT {_COLUMNS} FROM events WHERE {_VISIBLE} AND (title LIKE ? ESCAPE '\\' OR " \
          "location LIKE ? ESCAPE '\\' OR description LIKE ? ESCAPE '\\')"
    params: list[Any] = [session.user, session.user, like(query), like(query), like(query)]
    window, bounds = time_window("start", start_after=start_after, start_before=start_before)
    sql += window
    params += bounds
    if attendee:
        sql += " AND (owner LIKE ? ESCAPE '\\' OR id IN (SELECT event_id FROM attendees " \
               "WHERE email LIKE ? ESCAPE '\\'))"
        params += [like(attendee.strip().lower())] * 2
    return page_of(session.db("calendar"), sql + " ORDER BY start, id", params, page, page_size,
                   lambda r: _row(session, r))


@tool("calendar", writes=False)
def calendar_get(session: Session, event_id: int) -> dict[str, Any]:
    """Show one event with its attendees.

    Args:
        event_id: The event's id, from calendar_search.
    """
    return _row(session, _visible(session, event_id))


def _span(start: str, end: str) -> tuple[str, str]:
    a, b = parse_time(start, "start"), parse_time(end, "end")
    if b <= a:
        raise ToolError("invalid_arguments", "end must be after start.")
    return a, b


@tool("calendar", writes=True)
def calendar_create(
    session: Session, title: str, start: str, end: str, location: str = "", attendees: list[str] | None = None,
    description: str = "",
) -> dict[str, Any]:
    """Create an event that you own and invite people to it.

    Args:
        title: Event title.
        start: Start time, YYYY-MM-DD HH:MM.
        end: End time, YYYY-MM-DD HH:MM.
        location: Where it happens.
        attendees: Email addresses to invite.
        description: Free text.
    """
    if not title.strip():
        raise ToolError("invalid_arguments", "An event needs a title.")
    a, b = _span(start, end)
    db = session.db("calendar")
    cur = db.execute("INSERT INTO events (owner, title, start, end, location, description) VALUES (?,?,?,?,?,?)",
                     (session.user, title.strip(), a, b, location.strip(), description))
    for guest in dict.fromkeys(x.strip().lower() for x in attendees or []):
        if "@" not in guest:
            raise ToolError("invalid_arguments", f"{guest[:60]!r} is not an email address.")
        db.execute("INSERT INTO attendees (event_id, email, status) VALUES (?,?,'invited')", (cur.lastrowid, guest))
    return _row(session, _visible(session, int(cur.lastrowid or 0)))


@tool("calendar", writes=True)
def calendar_update(
    session: Session, event_id: int, title: str | None = None, start: str | None = None, end: str | None = None,
    location: str | None = None, description: str | None = None,
) -> dict[str, Any]:
    """Change an event you own; fields left out stay as they are.

    Args:
        event_id: The event to change.
        title: New title.
        start: New start time, YYYY-MM-DD HH:MM.
        end: New end time, YYYY-MM-DD HH:MM.
        location: New location.
        description: New description.
    """
    row = _owned(session, event_id)
    new_start, new_end = _span(start or row[3], end or row[4])
    values = (title.strip() if title else row[2], new_start, new_end,
              row[5] if location is None else location.strip(), row[6] if description is None else description)
    session.db("calendar").execute(
        "UPDATE events SET title = ?, start = ?, end = ?, location = ?, description = ? WHERE id = ?",
        (*values, event_id))
    return _row(session, _visible(session, event_id))


@tool("calendar", writes=True)
def calendar_delete(session: Session, event_id: int) -> dict[str, Any]:
    """Cancel (delete) an event you own, with its invitations.

    Args:
        event_id: The event to delete.
    """
    _owned(session, event_id)
    return delete_owned(session, "calendar", "events", event_id, key="event_id", dependents=("attendees",))


@tool("calendar", writes=True)
def calendar_invite(session: Session, event_id: int, email: str) -> dict[str, Any]:
    """Invite one more person to an event you own.

    Args:
        event_id: The event.
        email: The invitee's email address.
    """
    _owned(session, event_id)
    guest = email.strip().lower()
    if "@" not in guest:
        raise ToolError("invalid_arguments", "email must be an email address.")
    db = session.db("calendar")
    if db.execute("SELECT 1 FROM attendees WHERE event_id = ? AND email = ?", (event_id, guest)).fetchone():
        raise ToolError("conflict", f"{guest} is already invited.")
    db.execute("INSERT INTO attendees (event_id, email, status) VALUES (?,?,'invited')", (event_id, guest))
    return _row(session, _visible(session, event_id))


@tool("calendar", writes=True)
def calendar_uninvite(session: Session, event_id: int, email: str) -> dict[str, Any]:
    """Remove an attendee from an event you own.

    Args:
        event_id: The event.
        email: The attendee's email address.
    """
    _owned(session, event_id)
    remove_person(session, "calendar", "attendees", "event_id", event_id, email,
                  f"{email[:60]} is not invited to event {event_id}.")
    return _row(session, _visible(session, event_id))


@tool("calendar", writes=True)
def calendar_respond(session: Session, event_id: int, response: Response) -> dict[str, Any]:
    """Answer an invitation to someone else's event.

    Args:
        event_id: The event you are invited to.
        response: Your answer.
    """
    cur = session.db("calendar").execute("UPDATE attendees SET status = ? WHERE event_id = ? AND email = ?",
                                         (response, event_id, session.user))
    if cur.rowcount == 0:
        raise ToolError("not_found", f"You are not invited to an event with event_id {event_id}.")
    return _row(session, _visible(session, event_id))


def free_slots(session: Session, day: str) -> list[tuple[str, str]]:
    """Gaps between 08:00 and 18:00 on ``day`` in the user's own events (used by calendar_free)."""
    start = datetime.strptime(parse_time(day, "day")[:10] + " 08:00", TIME_FORMAT)
    rows = session.db("calendar").execute(
        f"SELECT start, end FROM events WHERE {_VISIBLE} AND substr(start, 1, 10) = ? ORDER BY start",
        (session.user, session.user, start.strftime("%Y-%m-%d"))).fetchall()
    cursor, slots = start.strftime(TIME_FORMAT), []
    for a, b in [*rows, (start.replace(hour=18).strftime(TIME_FORMAT),) * 2]:
        if a > cursor:
            slots.append((cursor, min(a, start.replace(hour=18).strftime(TIME_FORMAT))))
        cursor = max(cursor, b)
    return [s for s in slots if s[0] < s[1]]


@tool("calendar", writes=False)
def calendar_free(session: Session, day: str) -> dict[str, Any]:
    """List your free time between 08:00 and 18:00 on one day.

    Args:
        day: The day, YYYY-MM-DD.
    """
    return {"day": parse_time(day, "day")[:10], "free": [{"start": a, "end": b} for a, b in free_slots(session, day)]}
