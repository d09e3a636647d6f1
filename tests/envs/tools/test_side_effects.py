"""Side effects anywhere in the world score 0: every task, done by its reference solution, plus one unrelated write
of every kind the six apps allow (every write tool), fails the whole-world gate of ToolWorld-v1.

A target row is "unrelated" when the task's expectation neither changes nor deletes it; each write goes through the
same tool layer an agent uses, and the test checks that it really changed the database before grading.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from rollgym.envs.tools.api import REGISTRY, Session, call_tool
from rollgym.envs.tools.checker import diff_world
from rollgym.envs.tools.env import evaluate_session
from rollgym.envs.tools.policies import run_reference
from rollgym.envs.tools.tasks import TEMPLATES, ToolTaskSource, task_world
from rollgym.envs.tools.tasks.base import templates_of
from rollgym.verifiers.tools import GATE

from .helpers import expectation, fresh

Avoid = dict[tuple[str, str], set[int]]
Builder = Callable[[Session, Avoid], dict[str, Any] | None]


def _one(session: Session, app: str, sql: str, *params: Any, avoid: set[int] | frozenset[int] = frozenset()) -> Any:
    """The first row of a query whose id (first column) is not in ``avoid``.

    Queries list the oldest rows first: those exist in the base world (a task's new rows have the highest ids).
    """
    for row in session.db(app).execute(sql, params).fetchall():
        if row[0] not in avoid:
            return row
    return None


def _contact(session: Session) -> str:
    return str(session.db("contacts").execute("SELECT email FROM contacts WHERE owner = ? ORDER BY id DESC LIMIT 1",
                                              (session.user,)).fetchone()[0])


def _mailbox(session: Session, avoid: Avoid, where: str = "folder = 'inbox'") -> Any:
    return _one(session, "email", f"SELECT id, is_read, is_starred FROM mailbox WHERE owner = ? AND {where} "
                "ORDER BY id", session.user, avoid=avoid.get(("email", "mailbox"), set()))


def _own_event(session: Session, avoid: Avoid, with_guests: bool = False) -> Any:
    extra = " AND id IN (SELECT event_id FROM attendees)" if with_guests else ""
    return _one(session, "calendar", f"SELECT id FROM events WHERE owner = ?{extra} ORDER BY id", session.user,
                avoid=avoid.get(("calendar", "events"), set()))


def _own_note(session: Session, avoid: Avoid, shared: bool = False) -> Any:
    extra = " AND id IN (SELECT note_id FROM shares)" if shared else ""
    return _one(session, "notes", f"SELECT id, title FROM notes WHERE owner = ?{extra} ORDER BY id",
                session.user, avoid=avoid.get(("notes", "notes"), set()))


def _request(session: Session, avoid: Avoid, role: str) -> Any:
    return _one(session, "payments", f"SELECT id FROM requests WHERE {role} = ? AND status = 'pending' ORDER BY id",
                session.user, avoid=avoid.get(("payments", "requests"), set()))


def _order(session: Session, avoid: Avoid, status: str) -> Any:
    return _one(session, "shopping", "SELECT id FROM orders WHERE owner = ? AND status = ? ORDER BY id",
                session.user, status, avoid=avoid.get(("shopping", "orders"), set()))


def _ids(row: Any, name: str, **more: Any) -> dict[str, Any] | None:
    return None if row is None else {name: row[0], **more}


def _invitee(session: Session, event: Any) -> dict[str, Any] | None:
    if event is None:
        return None
    invited = {r[0] for r in session.db("calendar").execute("SELECT email FROM attendees WHERE event_id = ?",
                                                             (event[0],))}
    others = [r[0] for r in session.db("contacts").execute("SELECT email FROM contacts WHERE owner = ? ORDER BY id",
                                                           (session.user,)) if r[0] not in invited]
    return {"event_id": event[0], "email": others[0]} if others else None


def _guest(session: Session, event: Any) -> dict[str, Any] | None:
    if event is None:
        return None
    row = session.db("calendar").execute("SELECT email FROM attendees WHERE event_id = ? ORDER BY id LIMIT 1",
                                         (event[0],)).fetchone()
    return {"event_id": event[0], "email": row[0]}


def _respond(session: Session, avoid: Avoid) -> dict[str, Any] | None:
    row = _one(session, "calendar", "SELECT event_id, status FROM attendees WHERE email = ? ORDER BY id",
               session.user, avoid=avoid.get(("calendar", "events"), set()))
    return None if row is None else {"event_id": row[0], "response": "declined" if row[1] != "declined" else
                                     "accepted"}


def _share(session: Session, avoid: Avoid) -> dict[str, Any] | None:
    note = _own_note(session, avoid)
    if note is None:
        return None
    shared = {r[0] for r in session.db("notes").execute("SELECT email FROM shares WHERE note_id = ?", (note[0],))}
    who = next(r[0] for r in session.db("contacts").execute("SELECT email FROM contacts WHERE owner = ?",
                                                             (session.user,)) if r[0] not in shared)
    return {"note_id": note[0], "email": who}


def _unshare(session: Session, avoid: Avoid) -> dict[str, Any] | None:
    share = _one(session, "notes", "SELECT s.id, s.note_id, s.email FROM shares s JOIN notes n ON n.id = s.note_id "
                 "WHERE n.owner = ? ORDER BY s.id", session.user, avoid=avoid.get(("notes", "shares"), set()))
    return None if share is None else {"note_id": share[1], "email": share[2]}


def _product(session: Session) -> int:
    return int(session.db("shopping").execute("SELECT id FROM products WHERE stock > 5 ORDER BY id DESC LIMIT 1"
                                              ).fetchone()[0])


WRITES: dict[str, Builder] = {
    "contacts_create": lambda s, a: {"name": "Zed Unrelated", "email": "zed.unrelated@example.com"},
    "contacts_update": lambda s, a: _ids(_one(s, "contacts", "SELECT id FROM contacts WHERE owner = ? ORDER BY id",
                                              s.user, avoid=a.get(("contacts", "contacts"), set())),
                                         "contact_id", notes="edited on the side"),
    "contacts_delete": lambda s, a: _ids(_one(s, "contacts", "SELECT id FROM contacts WHERE owner = ? ORDER BY id",
                                              s.user, avoid=a.get(("contacts", "contacts"), set())), "contact_id"),
    "email_send": lambda s, a: {"to": [_contact(s)], "subject": "Unrelated", "body": "Just saying hi."},
    "email_reply": lambda s, a: _ids(_mailbox(s, a), "email_id", body="An unrelated reply."),
    "email_forward": lambda s, a: _ids(_mailbox(s, a), "email_id", to=[_contact(s)]),
    "email_move": lambda s, a: _ids(_mailbox(s, a), "email_id", folder="archive"),
    # marking mail read is what reading does (tolerated); unread and starred are writes of their own
    "email_mark": lambda s, a: _ids(_mailbox(s, a, "is_read = 1"), "email_id", is_read=False),
    "email_delete": lambda s, a: _ids(_mailbox(s, a), "email_id"),
    "calendar_create": lambda s, a: {"title": "Unrelated", "start": "2026-06-01 10:00", "end": "2026-06-01 11:00"},
    "calendar_update": lambda s, a: _ids(_own_event(s, a), "event_id", title="Renamed on the side"),
    "calendar_delete": lambda s, a: _ids(_own_event(s, a), "event_id"),
    "calendar_invite": lambda s, a: _invitee(s, _own_event(s, a)),
    "calendar_uninvite": lambda s, a: _guest(s, _own_event(s, a, with_guests=True)),
    "calendar_respond": _respond,
    "notes_create": lambda s, a: {"title": "Scratch", "body": "unrelated"},
    "notes_update": lambda s, a: _ids(_own_note(s, a), "note_id", body="overwritten on the side"),
    "notes_append": lambda s, a: _ids(_own_note(s, a), "note_id", text="an unrelated line"),
    "notes_delete": lambda s, a: _ids(_own_note(s, a), "note_id"),
    "notes_share": _share,
    "notes_unshare": _unshare,
    "payments_send": lambda s, a: {"to": _contact(s), "amount": 1.0, "note": "unrelated"},
    "payments_request": lambda s, a: {"from_person": _contact(s), "amount": 1.0, "note": "unrelated"},
    "payments_pay_request": lambda s, a: _ids(_request(s, a, "payer"), "request_id"),
    "payments_decline_request": lambda s, a: _ids(_request(s, a, "payer"), "request_id"),
    "payments_cancel_request": lambda s, a: _ids(_request(s, a, "requester"), "request_id"),
    "shop_cart_set": lambda s, a: {"product_id": _product(s), "quantity": 1},
    "shop_checkout": lambda s, a: {},  # after putting an unrelated product in the cart (see _apply)
    "shop_cancel_order": lambda s, a: _ids(_order(s, a, "placed"), "order_id"),
    "shop_request_refund": lambda s, a: _ids(_order(s, a, "delivered"), "order_id", reason="changed my mind"),
}
# A write that leaves the world as it was is no side effect: a note "updated" to its own text only moves its
# edit stamp (v1 counts that too, see test_touching_a_note_without_changing_it_counts).
APPS = sorted({spec.app for spec in REGISTRY.values() if spec.writes and spec.app != "supervisor"})


def test_every_write_tool_of_every_app_is_covered():
    writes = {name for name, spec in REGISTRY.items() if spec.writes and spec.app != "supervisor"}
    assert writes == set(WRITES)
    assert APPS == ["calendar", "contacts", "email", "notes", "payments", "shopping"]


def _avoid(task: Any, session: Session) -> Avoid:
    """Rows a side write must leave alone: those the task changes or deletes, and those the episode created."""
    exp = expectation(task)
    out: Avoid = {}
    for app, table, row_id in [*exp.updates, *exp.deletes]:
        out.setdefault((app, table), set()).add(row_id)
    for name, table in diff_world(task_world(task), session.dbs, session.touched).tables.items():
        app, _, short = name.partition(".")
        out.setdefault((app, short), set()).update(int(r["id"]) for r in table.added)
    return out


def _clone(task: Any, session: Session) -> Session:
    """A new session of ``task`` holding ``session``'s state (SQLite backup), with its record of written tables."""
    copy = fresh(task)
    for app, conn in session.dbs.items():
        conn.commit()  # a backup from a connection inside a write transaction waits forever
        conn.backup(copy.dbs[app])
    copy.touched |= session.touched
    return copy


def _apply(session: Session, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    if tool == "shop_checkout":
        call_tool(session, "shop_cart_set", {"product_id": _product(session), "quantity": 1})
    return call_tool(session, tool, arguments)


NO_UNRELATED_TARGET = {"notes_unshare"}
"""Writes with no unrelated target in any base world: the user's own notes start unshared, so the only share
to withdraw is one the task itself created (see test_no_base_world_shares_the_users_own_notes)."""


def test_no_base_world_shares_the_users_own_notes():
    from rollgym.envs.tools.tasks.source import N_WORLDS, world_seed
    from rollgym.envs.tools.world import base_world

    for index in range(N_WORLDS):
        world = base_world(world_seed(index))
        assert not world.dbs["notes"].execute("SELECT COUNT(*) FROM shares s JOIN notes n ON n.id = s.note_id WHERE "
                                              "n.owner = ?", (world.me.email,)).fetchone()[0]


def _tasks_using(app: str, per_template: int = 1) -> list[Any]:
    names = [n for n in templates_of(1) if app in TEMPLATES[n].apps]
    tasks = []
    for name in names:
        source = ToolTaskSource([name])
        tasks += [source.task(i, "test") for i in range(per_template)]
    return tasks


@pytest.mark.parametrize("app", APPS)
def test_task_plus_one_unrelated_write_of_every_kind_scores_zero(app):
    """For every task template that uses ``app``: the reference solution alone scores 1; plus one unrelated
    write of any kind (any tool of any app that writes) it scores 0, on the whole-world gate."""
    applied: Counter[str] = Counter()
    for task in _tasks_using(app):
        clean = fresh(task)
        answer = run_reference(task.meta["template"], task.meta["params"], clean)
        assert evaluate_session(task, clean, answer).reward == 1.0, task.id
        for tool, build in WRITES.items():
            session = _clone(task, clean)
            before = diff_world(task_world(task), session.dbs, session.touched).summary()
            arguments = build(session, _avoid(task, session))
            if arguments is None:  # no unrelated row of that kind in this world
                continue
            result = _apply(session, tool, arguments)
            assert "error" not in result, (task.id, tool, arguments, result)
            after = diff_world(task_world(task), session.dbs, session.touched).summary()
            assert after != before, (task.id, tool, "wrote nothing")
            score = evaluate_session(task, session, answer)
            assert score.reward == 0.0 and not score.correct, (task.id, tool, score.details)
            assert score.error == "side_effects" and score.details["failed_gates"] == [GATE], (task.id, tool)
            assert score.details["reasons"][GATE], (task.id, tool)
            applied[tool] += 1
    missing = [t for t in WRITES if applied[t] == 0 and REGISTRY[t].app == app and t not in NO_UNRELATED_TARGET]
    assert not missing, f"no task gave these writes of {app} an unrelated target: {missing}"


def test_touching_a_note_without_changing_it_counts_in_v1_only():
    task = ToolTaskSource(["notes_share"]).task(0, "test")
    session = fresh(task)
    answer = run_reference("notes_share", task.meta["params"], session)
    note = _own_note(session, _avoid(task, session))
    assert "error" not in call_tool(session, "notes_update", {"note_id": note[0], "title": note[1]})
    summary = diff_world(task_world(task), session.dbs).summary()
    assert summary["notes.notes"]["changed"] == 1  # only its updated_at moved
    assert evaluate_session(task, session, answer).reward == 0.0
    assert evaluate_session(task, session, answer, version=0).reward == 1.0  # what ToolWorld-v0 paid


def test_marking_mail_read_is_tolerated_but_unread_and_starred_are_not():
    task = ToolTaskSource(["contacts_add"]).task(0, "test")
    cases = [("is_read = 0", {"is_read": True}, True), ("is_read = 1", {"is_read": False}, False),
             ("is_starred = 0", {"is_starred": True}, False)]
    for where, mark, ok in cases:
        session = fresh(task)
        answer = run_reference("contacts_add", task.meta["params"], session)
        row = _mailbox(session, {}, where)
        assert "error" not in call_tool(session, "email_mark", {"email_id": row[0], **mark})
        assert evaluate_session(task, session, answer).correct is ok, mark


def test_the_skipped_table_shortcut_gives_the_same_diff_as_reading_every_table():
    """Grading reads only tables a write statement reached (the authorizer's record); reading all agrees."""
    for name in templates_of(1)[::3]:
        task = ToolTaskSource([name]).task(0, "test")
        session = fresh(task)
        run_reference(name, task.meta["params"], session)
        tool = sorted(WRITES)[sum(map(ord, name)) % len(WRITES)]
        arguments = WRITES[tool](session, _avoid(task, session))
        if arguments is not None:
            _apply(session, tool, arguments)
        world = task_world(task)
        assert diff_world(world, session.dbs, session.touched) == diff_world(world, session.dbs), (name, tool)
