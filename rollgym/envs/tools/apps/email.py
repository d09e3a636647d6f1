"""Email: messages and each user's mailbox (folders, read and star flags)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any, Literal

from rollgym.envs.tools.api import TIME_FORMAT, Session, ToolError, like, page_of, tool
from rollgym.envs.tools.people import WorldGen

SCHEMA = """
CREATE TABLE messages (
    id INTEGER PRIMARY KEY, sender TEXT NOT NULL, recipients TEXT NOT NULL, cc TEXT NOT NULL,
    subject TEXT NOT NULL, body TEXT NOT NULL, sent_at TEXT NOT NULL, reply_to INTEGER
);
CREATE TABLE mailbox (
    id INTEGER PRIMARY KEY, owner TEXT NOT NULL, message_id INTEGER NOT NULL, folder TEXT NOT NULL,
    is_read INTEGER NOT NULL, is_starred INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX mailbox_owner ON mailbox(owner, folder);
"""
Folder = Literal["inbox", "sent", "archive", "trash"]
NEWSLETTERS = ["digest@dailybrief.news", "deals@shopmart.example", "hello@fitclub.example", "team@devweekly.io"]
TOPICS = [
    ("Quarterly report draft", "Here is the draft of the quarterly report; comments welcome."),
    ("Lunch on Thursday?", "Are you free for lunch on Thursday? There is a new place near the office."),
    ("Photos from the trip", "I uploaded the photos from our trip, have a look when you can."),
    ("Budget review", "Can we go over the budget numbers before the meeting?"),
    ("Book recommendation", "You should read the book I mentioned, I think you'd like it."),
    ("Moving help", "Could you help me move some boxes this weekend?"),
    ("Project kickoff", "Kickoff is confirmed; agenda attached below."),
    ("Invoice question", "I have a question about last month's invoice."),
    ("Concert tickets", "I got two tickets for the concert, want to join?"),
    ("Code review", "Please take a look at my pull request when you have a minute."),
]
NEWS_SUBJECTS = ["Your weekly digest", "Flash sale ends tonight", "New classes this month", "This week in dev"]


def populate(conn: sqlite3.Connection, gen: WorldGen) -> None:
    """Mail between the user and others, newsletters, and private mail among others."""
    others = gen.others()
    for _ in range(150):
        kind = gen.rng.random()
        if kind < 0.18:
            sender, to = NEWSLETTERS[int(gen.rng.integers(len(NEWSLETTERS)))], [gen.me.email]
            subject, body = NEWS_SUBJECTS[NEWSLETTERS.index(sender)], "Unsubscribe at any time."
        else:
            subject, body = TOPICS[int(gen.rng.integers(len(TOPICS)))]
            a, b = gen.pick(others, 2)
            if kind < 0.65:
                sender, to = a.email, [gen.me.email]
            elif kind < 0.8:
                sender, to = gen.me.email, [a.email]
            else:
                sender, to = a.email, [b.email]
        sent_at = gen.when(45)
        cur = conn.execute(
            "INSERT INTO messages (sender, recipients, cc, subject, body, sent_at) VALUES (?,?,?,?,?,?)",
            (sender, json.dumps(to), "[]", subject, body, sent_at),
        )
        unread = int(gen.rng.random() < 0.35)
        if "@example.com" in sender:
            conn.execute("INSERT INTO mailbox (owner, message_id, folder, is_read) VALUES (?,?,?,1)",
                         (sender, cur.lastrowid, "sent"))
        for person in to:
            conn.execute("INSERT INTO mailbox (owner, message_id, folder, is_read) VALUES (?,?,?,?)",
                         (person, cur.lastrowid, "inbox", 1 - unread))


_SELECT = ("SELECT b.id, m.sender, m.recipients, m.cc, m.subject, m.body, m.sent_at, b.folder, b.is_read, "
           "b.is_starred, m.reply_to FROM mailbox b JOIN messages m ON m.id = b.message_id")


def _row(r: Any, full: bool = False) -> dict[str, Any]:
    out = {"email_id": r[0], "sender": r[1], "to": json.loads(r[2]), "cc": json.loads(r[3]), "subject": r[4],
           "sent_at": r[6], "folder": r[7], "is_read": bool(r[8]), "is_starred": bool(r[9])}
    if full:
        out["body"] = r[5]
    return out


def _own(session: Session, email_id: int) -> Any:
    row = session.db("email").execute(f"{_SELECT} WHERE b.id = ? AND b.owner = ?", (email_id, session.user)).fetchone()
    if row is None:
        raise ToolError("not_found", f"You have no email with email_id {email_id}.")
    return row


def _addresses(values: list[str], name: str) -> list[str]:
    cleaned = [v.strip().lower() for v in values if v.strip()]
    if any("@" not in v or " " in v for v in cleaned):
        raise ToolError("invalid_arguments", f"{name} must be a list of email addresses.")
    return cleaned


def _deliver(session: Session, to: list[str], cc: list[str], subject: str, body: str,
             reply_to: int | None = None) -> dict[str, Any]:
    if not to:
        raise ToolError("invalid_arguments", "Give at least one recipient in 'to'.")
    if not subject.strip() and not body.strip():
        raise ToolError("invalid_arguments", "An email needs a subject or a body.")
    db = session.db("email")
    cur = db.execute(
        "INSERT INTO messages (sender, recipients, cc, subject, body, sent_at, reply_to) VALUES (?,?,?,?,?,?,?)",
        (session.user, json.dumps(to), json.dumps(cc), subject.strip(), body, session.now.strftime(TIME_FORMAT),
         reply_to),
    )
    mid = cur.lastrowid
    sent = db.execute("INSERT INTO mailbox (owner, message_id, folder, is_read) VALUES (?,?,'sent',1)",
                      (session.user, mid))
    for person in dict.fromkeys(to + cc):
        db.execute("INSERT INTO mailbox (owner, message_id, folder, is_read) VALUES (?,?,'inbox',0)", (person, mid))
    return {"email_id": sent.lastrowid, "sent": True}


@tool("email", writes=False)
def email_search(
    session: Session, query: str = "", folder: Folder | None = "inbox", sender: str = "", unread_only: bool = False,
    page: int = 1, page_size: int = 10,
) -> dict[str, Any]:
    """Search your emails, newest first. Bodies are not shown; open one with email_read.

    Args:
        query: Text to look for in the subject or body; empty matches everything.
        folder: Folder to search, or null for every folder.
        sender: Only emails whose sender address contains this text.
        unread_only: Only emails you have not read yet.
        page: Page number, starting at 1.
        page_size: Results per page (1-50).
    """
    sql = f"{_SELECT} WHERE b.owner = ? AND (m.subject LIKE ? ESCAPE '\\' OR m.body LIKE ? ESCAPE '\\')"
    params: list[Any] = [session.user, like(query), like(query)]
    if folder is not None:
        sql += " AND b.folder = ?"
        params.append(folder)
    if sender:
        sql += " AND m.sender LIKE ? ESCAPE '\\'"
        params.append(like(sender.strip().lower()))
    if unread_only:
        sql += " AND b.is_read = 0"
    return page_of(session.db("email"), sql + " ORDER BY m.sent_at DESC, b.id DESC", params, page, page_size, _row)


@tool("email", writes=False)
def email_read(session: Session, email_id: int) -> dict[str, Any]:
    """Open one of your emails with its body; this marks it as read.

    Args:
        email_id: The email's id, from email_search.
    """
    row = _own(session, email_id)
    session.db("email").execute("UPDATE mailbox SET is_read = 1 WHERE id = ?", (email_id,))
    return {**_row(row, full=True), "is_read": True}


@tool("email", writes=True)
def email_send(session: Session, to: list[str], subject: str, body: str, cc: list[str] | None = None) -> dict[str, Any]:
    """Send a new email from your address.

    Args:
        to: Recipient email addresses.
        subject: Subject line.
        body: Message text.
        cc: Addresses to copy in.
    """
    return _deliver(session, _addresses(to, "to"), _addresses(cc or [], "cc"), subject, body)


@tool("email", writes=True)
def email_reply(session: Session, email_id: int, body: str) -> dict[str, Any]:
    """Reply to the sender of one of your emails; the subject gets a "Re: " prefix.

    Args:
        email_id: The email to reply to.
        body: Your reply.
    """
    row = _own(session, email_id)
    subject = row[4] if row[4].lower().startswith("re:") else f"Re: {row[4]}"
    mid = session.db("email").execute("SELECT message_id FROM mailbox WHERE id = ?", (email_id,)).fetchone()[0]
    return _deliver(session, [row[1]], [], subject, body, reply_to=mid)


@tool("email", writes=True)
def email_forward(session: Session, email_id: int, to: list[str], note: str = "") -> dict[str, Any]:
    """Forward one of your emails; the subject gets a "Fwd: " prefix and the original text is quoted.

    Args:
        email_id: The email to forward.
        to: Recipient email addresses.
        note: Text to put above the forwarded message.
    """
    row = _own(session, email_id)
    body = f"{note}\n\n---------- Forwarded message ----------\nFrom: {row[1]}\nSubject: {row[4]}\n\n{row[5]}"
    return _deliver(session, _addresses(to, "to"), [], f"Fwd: {row[4]}", body.lstrip())


@tool("email", writes=True)
def email_move(session: Session, email_id: int, folder: Folder) -> dict[str, Any]:
    """Move one of your emails to another folder (moving to trash deletes it).

    Args:
        email_id: The email to move.
        folder: The destination folder.
    """
    _own(session, email_id)
    session.db("email").execute("UPDATE mailbox SET folder = ? WHERE id = ?", (folder, email_id))
    return {"email_id": email_id, "folder": folder}


@tool("email", writes=True)
def email_mark(
    session: Session, email_id: int, is_read: bool | None = None, is_starred: bool | None = None
) -> dict[str, Any]:
    """Mark one of your emails read or unread, starred or not.

    Args:
        email_id: The email to mark.
        is_read: New read state.
        is_starred: New star state.
    """
    row = _own(session, email_id)
    read = row[8] if is_read is None else int(is_read)
    star = row[9] if is_starred is None else int(is_starred)
    session.db("email").execute("UPDATE mailbox SET is_read = ?, is_starred = ? WHERE id = ?", (read, star, email_id))
    return {"email_id": email_id, "is_read": bool(read), "is_starred": bool(star)}


@tool("email", writes=True)
def email_delete(session: Session, email_id: int) -> dict[str, Any]:
    """Delete one of your emails: it moves to the trash folder.

    Args:
        email_id: The email to delete.
    """
    return email_move(session, email_id, "trash")
