"""The apps' behaviour: pagination, validation, permissions, world generation and copies."""

from __future__ import annotations

import pytest

from rollgym.envs.tools.api import REGISTRY, ToolSpec, call_tool
from rollgym.envs.tools.checker import diff_world
from rollgym.envs.tools.env import new_session
from rollgym.envs.tools.tasks import ToolTaskSource, task_world
from rollgym.envs.tools.world import build_world
from rollgym.verifiers.tools import check_answer


@pytest.fixture
def task():
    return ToolTaskSource().task(1, "train")


def test_pagination_covers_every_result_once(task):
    session = new_session(task)
    first = call_tool(session, "email_search", {"folder": None, "page_size": 7})
    seen = []
    for page in range(1, first["total"] // 7 + 2):
        result = call_tool(session, "email_search", {"folder": None, "page_size": 7, "page": page})
        seen += [m["email_id"] for m in result["results"]]
        assert result["has_more"] == (page * 7 < first["total"])
    assert len(seen) == len(set(seen)) == first["total"]


def test_like_wildcards_are_literal(task):
    session = new_session(task)
    assert call_tool(session, "contacts_search", {"query": "%"})["total"] == 0
    assert call_tool(session, "contacts_search", {"query": ""})["total"] > 0


def test_payments_move_money_and_refuse_bad_amounts(task):
    session = new_session(task)
    me = call_tool(session, "whoami", {})["email"]
    friend = call_tool(session, "contacts_search", {})["results"][0]["email"]
    before = call_tool(session, "payments_balance", {})["balance"]
    sent = call_tool(session, "payments_send", {"to": friend, "amount": 12.5, "note": "x"})
    assert sent["balance"] == pytest.approx(before - 12.5)
    for amount in (0, -1, 0.001, 10**9):
        assert call_tool(session, "payments_send", {"to": friend, "amount": amount})["error"]["type"] in {
            "invalid_arguments", "insufficient_funds"}
    assert call_tool(session, "payments_send", {"to": me, "amount": 1})["error"]["type"] == "invalid_arguments"
    assert call_tool(session, "payments_send", {"to": "nobody@nowhere.org", "amount": 1})["error"]["type"] == \
        "not_found"


def test_invitees_cannot_edit_someone_elses_event(task):
    world = task_world(task)
    session = new_session(task)
    eid = world.dbs["calendar"].execute(
        "SELECT e.id FROM events e JOIN attendees a ON a.event_id = e.id WHERE a.email = ? AND e.owner != ?",
        (world.me.email, world.me.email)).fetchone()[0]
    assert call_tool(session, "calendar_get", {"event_id": eid})["event_id"] == eid
    assert call_tool(session, "calendar_update", {"event_id": eid, "title": "x"})["error"]["type"] == \
        "permission_denied"
    assert call_tool(session, "calendar_respond", {"event_id": eid, "response": "declined"})["event_id"] == eid


def test_shared_read_only_notes_can_be_read_not_edited(task):
    world = task_world(task)
    session = new_session(task)
    nid = world.dbs["notes"].execute("SELECT note_id FROM shares WHERE email = ? AND can_edit = 0",
                                     (world.me.email,)).fetchone()[0]
    assert call_tool(session, "notes_get", {"note_id": nid})["note_id"] == nid
    assert call_tool(session, "notes_append", {"note_id": nid, "text": "x"})["error"]["type"] == "permission_denied"


def test_checkout_creates_an_order_and_empties_the_cart(task):
    session = new_session(task)
    product = call_tool(session, "shop_search", {"sort": "price"})["results"][0]
    call_tool(session, "shop_cart_set", {"product_id": product["product_id"], "quantity": 2})
    order = call_tool(session, "shop_checkout", {})
    assert order["status"] == "placed" and order["total"] == pytest.approx(2 * product["price"])
    assert call_tool(session, "shop_cart", {})["items"] == []
    assert call_tool(session, "shop_checkout", {})["error"]["type"] == "conflict"
    assert call_tool(session, "shop_cancel_order", {"order_id": order["order_id"]})["status"] == "cancelled"


def test_unexpected_failures_hide_internals(task, monkeypatch):
    def broken(session):
        """Broken."""
        raise RuntimeError("SELECT secret FROM hidden_table")

    monkeypatch.setitem(REGISTRY, "broken", ToolSpec("broken", "test", False, broken,
                                                     {"function": {"name": "broken", "description": "b",
                                                                   "parameters": {"properties": {}, "required": []}}}))
    result = call_tool(new_session(task), "broken", {})
    assert result["error"]["type"] == "internal_error" and "SELECT" not in result["error"]["message"]


def test_worlds_are_deterministic_and_copies_are_isolated():
    a, b = build_world(7), build_world(7)
    for app in a.dbs:
        for table in [r[0] for r in a.dbs[app].execute("SELECT name FROM sqlite_master WHERE type = 'table'")]:
            assert a.table(app, table) == b.table(app, table), (app, table)
    assert a.now == b.now and a.people == b.people
    assert build_world(8).people != a.people
    copy = a.copy()
    copy["contacts"].execute("DELETE FROM contacts")
    assert diff_world(a, copy).table("contacts.contacts").deleted and diff_world(a, a.copy()).empty


@pytest.mark.parametrize("kind, expected, answer, ok", [
    ("number", 12.5, "$12.50", True),
    ("number", 12.5, "12.5 or 13", False),
    ("number", 1200, "1,200", True),
    ("number", 3, None, False),
    ("datetime", "2025-03-14 09:30", "It starts 2025-03-14 09:30.", True),
    ("datetime", "2025-03-14 09:30", "2025-03-14 09:30 or 2025-03-15 10:00", False),
    ("text", "Kettle", "kettle.", True),
    ("text", "Kettle", "Kettle, Pepper mill", False),
    ("list", ["A b", "C"], "c and a B", True),
    ("list", ["A b", "C"], "A b, C, D", False),
])
def test_answer_checks(kind, expected, answer, ok):
    assert check_answer(kind, expected, answer) is ok
