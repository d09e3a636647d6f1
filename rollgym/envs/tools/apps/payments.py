"""Payments: a wallet per person, transfers and payment requests."""

from __future__ import annotations

import sqlite3
from typing import Any, Literal

from rollgym.envs.tools.api import TIME_FORMAT, Session, ToolError, dollars, like, page_of, time_window, to_cents, tool
from rollgym.envs.tools.people import WorldGen

SCHEMA = """
CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner TEXT NOT NULL UNIQUE, balance_cents INTEGER NOT NULL);
CREATE TABLE transfers (
    id INTEGER PRIMARY KEY, sender TEXT NOT NULL, receiver TEXT NOT NULL, amount_cents INTEGER NOT NULL,
    note TEXT NOT NULL, created_at TEXT NOT NULL, request_id INTEGER
);
CREATE TABLE requests (
    id INTEGER PRIMARY KEY, requester TEXT NOT NULL, payer TEXT NOT NULL, amount_cents INTEGER NOT NULL,
    note TEXT NOT NULL, status TEXT NOT NULL, created_at TEXT NOT NULL
);
"""
NOTES = ["Dinner", "Groceries", "Concert tickets", "Taxi", "Rent share", "Gift", "Coffee", "Movie night"]
Direction = Literal["sent", "received", "any"]
RequestStatus = Literal["pending", "paid", "declined", "cancelled"]


def populate(conn: sqlite3.Connection, gen: WorldGen) -> None:
    """Balances for everyone, the user's transfer history and open requests, and others' private ones."""
    for person in gen.people:
        conn.execute("INSERT INTO accounts (owner, balance_cents) VALUES (?,?)",
                     (person.email, int(gen.rng.integers(200, 3000)) * 100 + int(gen.rng.integers(100))))
    others = gen.others()
    for _ in range(90):
        a = gen.pick(others, 1)[0]
        roll = gen.rng.random()
        sender, receiver = (a.email, gen.me.email) if roll < 0.4 else (gen.me.email, a.email) if roll < 0.75 \
            else (a.email, gen.pick([p for p in others if p != a], 1)[0].email)
        amount = int(gen.rng.integers(5, 120)) * 100 + int(gen.rng.choice([0, 50]))
        conn.execute("INSERT INTO transfers (sender, receiver, amount_cents, note, created_at) VALUES (?,?,?,?,?)",
                     (sender, receiver, amount, NOTES[int(gen.rng.integers(len(NOTES)))], gen.when(60)))
    for _ in range(45):
        a, b = gen.pick(others, 2)
        roll = gen.rng.random()
        requester, payer = (a.email, gen.me.email) if roll < 0.5 else (gen.me.email, a.email) if roll < 0.7 \
            else (a.email, b.email)
        status = "pending" if gen.rng.random() < 0.65 else str(gen.rng.choice(["paid", "declined"]))
        amount = int(gen.rng.integers(5, 90)) * 100 + int(gen.rng.choice([0, 25, 50]))
        conn.execute("INSERT INTO requests (requester, payer, amount_cents, note, status, created_at) "
                     "VALUES (?,?,?,?,?,?)",
                     (requester, payer, amount, NOTES[int(gen.rng.integers(len(NOTES)))], status, gen.when(20)))


def _transfer_row(r: Any) -> dict[str, Any]:
    return {"transfer_id": r[0], "sender": r[1], "receiver": r[2], "amount": dollars(r[3]), "note": r[4],
            "created_at": r[5], "request_id": r[6]}


def _request_row(r: Any) -> dict[str, Any]:
    return {"request_id": r[0], "requester": r[1], "payer": r[2], "amount": dollars(r[3]), "note": r[4],
            "status": r[5], "created_at": r[6]}


def _balance(session: Session, owner: str) -> int:
    row = session.db("payments").execute("SELECT balance_cents FROM accounts WHERE owner = ?", (owner,)).fetchone()
    if row is None:
        raise ToolError("not_found", f"{owner[:80]} has no wallet.")
    return int(row[0])


def _move(session: Session, receiver: str, cents: int, note: str, request_id: int | None = None) -> dict[str, Any]:
    receiver = receiver.strip().lower()
    if receiver == session.user:
        raise ToolError("invalid_arguments", "You cannot send money to yourself.")
    _balance(session, receiver)
    if _balance(session, session.user) < cents:
        raise ToolError("insufficient_funds", "Your balance is too low for this payment.")
    db = session.db("payments")
    db.execute("UPDATE accounts SET balance_cents = balance_cents - ? WHERE owner = ?", (cents, session.user))
    db.execute("UPDATE accounts SET balance_cents = balance_cents + ? WHERE owner = ?", (cents, receiver))
    cur = db.execute(
        "INSERT INTO transfers (sender, receiver, amount_cents, note, created_at, request_id) VALUES (?,?,?,?,?,?)",
        (session.user, receiver, cents, note.strip(), session.now.strftime(TIME_FORMAT), request_id))
    return {"transfer_id": cur.lastrowid, "amount": dollars(cents), "receiver": receiver,
            "balance": dollars(_balance(session, session.user))}


@tool("payments", writes=False)
def payments_balance(session: Session) -> dict[str, Any]:
    """Your wallet balance in dollars."""
    return {"balance": dollars(_balance(session, session.user))}


@tool("payments", writes=False)
def payments_transfers(
    session: Session, direction: Direction = "any", person: str = "", query: str = "", since: str | None = None,
    until: str | None = None, page: int = 1, page_size: int = 10,
) -> dict[str, Any]:
    """Your transfers (money you sent or received), newest first.

    Args:
        direction: sent, received or any.
        person: Only transfers with someone whose email contains this text.
        query: Text to look for in the note.
        since: Only transfers at or after this time (YYYY-MM-DD or YYYY-MM-DD HH:MM).
        until: Only transfers before this time (YYYY-MM-DD or YYYY-MM-DD HH:MM).
        page: Page number, starting at 1.
        page_size: Results per page (1-50).
    """
    me = session.user
    where = {"sent": "sender = ?", "received": "receiver = ?", "any": "(sender = ? OR receiver = ?)"}[direction]
    params: list[Any] = [me, me] if direction == "any" else [me]
    sql = "SELECT id, sender, receiver, amount_cents, note, created_at, request_id FROM transfers " \
          f"WHERE {where} AND note LIKE ? ESCAPE '\\'"
    params.append(like(query))
    if person:
        sql += " AND (CASE WHEN sender = ? THEN receiver ELSE sender END) LIKE ? ESCAPE '\\'"
        params += [me, like(person.strip().lower())]
    window, bounds = time_window("created_at", since=since, until=until)
    sql += window
    params += bounds
    return page_of(session.db("payments"), sql + " ORDER BY created_at DESC, id DESC", params, page, page_size,
                   _transfer_row)


@tool("payments", writes=True)
def payments_send(session: Session, to: str, amount: float, note: str = "") -> dict[str, Any]:
    """Send money from your wallet to someone's wallet.

    Args:
        to: The receiver's email address.
        amount: Dollars to send, e.g. 12.50.
        note: What it is for.
    """
    return _move(session, to, to_cents(amount), note)


@tool("payments", writes=False)
def payments_requests(
    session: Session, role: Literal["to_me", "from_me"] = "to_me", status: RequestStatus | None = "pending",
    page: int = 1, page_size: int = 10,
) -> dict[str, Any]:
    """Payment requests others sent you (to_me) or you sent others (from_me), newest first.

    Args:
        role: to_me lists requests you are asked to pay; from_me those you sent.
        status: Only requests with this status, or null for all.
        page: Page number, starting at 1.
        page_size: Results per page (1-50).
    """
    column = "payer" if role == "to_me" else "requester"
    sql = f"SELECT id, requester, payer, amount_cents, note, status, created_at FROM requests WHERE {column} = ?"
    params: list[Any] = [session.user]
    if status is not None:
        sql += " AND status = ?"
        params.append(status)
    return page_of(session.db("payments"), sql + " ORDER BY created_at DESC, id DESC", params, page, page_size,
                   _request_row)


@tool("payments", writes=True)
def payments_request(session: Session, from_person: str, amount: float, note: str = "") -> dict[str, Any]:
    """Ask someone to pay you.

    Args:
        from_person: The payer's email address.
        amount: Dollars requested.
        note: What it is for.
    """
    payer = from_person.strip().lower()
    if payer == session.user:
        raise ToolError("invalid_arguments", "You cannot request money from yourself.")
    _balance(session, payer)
    cur = session.db("payments").execute(
        "INSERT INTO requests (requester, payer, amount_cents, note, status, created_at) VALUES (?,?,?,?,?,?)",
        (session.user, payer, to_cents(amount), note.strip(), "pending", session.now.strftime(TIME_FORMAT)))
    return {"request_id": cur.lastrowid, "status": "pending"}


def _request(session: Session, request_id: int, column: str) -> Any:
    row = session.db("payments").execute(
        "SELECT id, requester, payer, amount_cents, note, status, created_at FROM requests "
        f"WHERE id = ? AND {column} = ?",  # column is 'payer' or 'requester', chosen by the caller's code
        (request_id, session.user)).fetchone()
    if row is None:
        raise ToolError("not_found", f"You have no such payment request {request_id}.")
    if row[5] != "pending":
        raise ToolError("conflict", f"Request {request_id} is already {row[5]}.")
    return row


@tool("payments", writes=True)
def payments_pay_request(session: Session, request_id: int) -> dict[str, Any]:
    """Pay a pending request someone sent you.

    Args:
        request_id: The request to pay.
    """
    row = _request(session, request_id, "payer")
    result = _move(session, row[1], row[3], row[4], request_id)
    session.db("payments").execute("UPDATE requests SET status = 'paid' WHERE id = ?", (request_id,))
    return {**result, "request_id": request_id, "status": "paid"}


@tool("payments", writes=True)
def payments_decline_request(session: Session, request_id: int) -> dict[str, Any]:
    """Decline a pending request someone sent you.

    Args:
        request_id: The request to decline.
    """
    _request(session, request_id, "payer")
    session.db("payments").execute("UPDATE requests SET status = 'declined' WHERE id = ?", (request_id,))
    return {"request_id": request_id, "status": "declined"}


@tool("payments", writes=True)
def payments_cancel_request(session: Session, request_id: int) -> dict[str, Any]:
    """Cancel a pending request you sent.

    Args:
        request_id: The request to cancel.
    """
    _request(session, request_id, "requester")
    session.db("payments").execute("UPDATE requests SET status = 'cancelled' WHERE id = ?", (request_id,))
    return {"request_id": request_id, "status": "cancelled"}
