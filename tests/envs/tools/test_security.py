"""Security: injection has no effect, other users' data stays private, nothing leaves the world."""

from __future__ import annotations

import ast
import sqlite3
import sys
from pathlib import Path

import pytest

import rollgym.envs.tools as tools_pkg
from rollgym.envs.tools.api import REGISTRY, Session, call_tool
from rollgym.envs.tools.checker import diff_world
from rollgym.envs.tools.env import new_session
from rollgym.envs.tools.tasks import ToolTaskSource, task_world

PAYLOADS = ["' OR '1'='1", "'; DROP TABLE contacts; --", "x%' OR 1=1 --", '" OR ""="', "1; DELETE FROM accounts",
            "%", "_", "') UNION SELECT * FROM mailbox --"]


def _args_for(spec, payload):
    args = {}
    for name, prop in spec.schema["function"]["parameters"]["properties"].items():
        kind = prop["type"][0] if isinstance(prop["type"], list) else prop["type"]
        if "enum" in prop:
            args[name] = prop["enum"][0]
        elif kind == "string":
            args[name] = payload
        elif kind == "integer":
            args[name] = 1 if name in ("page", "page_size", "quantity") else 987654
        elif kind == "number":
            args[name] = 1.0
        elif kind == "boolean":
            args[name] = False
        elif kind == "array":
            args[name] = [payload]
    return args


@pytest.fixture
def task():
    return ToolTaskSource().task(0, "train")


def test_sql_injection_through_every_string_argument_has_no_effect(task):
    session = new_session(task)
    for name, spec in REGISTRY.items():
        if name == "complete_task":
            continue
        for payload in PAYLOADS:
            result = call_tool(session, name, _args_for(spec, payload))
            assert result.get("error", {}).get("type") != "internal_error", (name, payload, result)
            free_text = any(p.get("type") in ("string", ["string", "null"]) and "enum" not in p
                            for p in spec.schema["function"]["parameters"]["properties"].values())
            if "total" in result and free_text:  # searches treat the payload as literal text: nothing matches
                assert result["total"] == 0, (name, payload)
    diff = diff_world(task_world(task), session.dbs)
    assert not diff.schema_changes
    assert not any(t.deleted or t.changed for t in diff.tables.values()), diff.summary()
    for table in diff.tables.values():  # only literal payload text was stored (notes, messages and the like)
        for row in table.added:
            assert any(isinstance(v, str) and any(p in v for p in PAYLOADS) for v in row.values())


def test_schema_changes_are_refused_even_if_sql_got_through(task):
    session = new_session(task)
    with pytest.raises(sqlite3.DatabaseError, match="not authorized"):
        session.db("contacts").execute("DROP TABLE contacts")
    with pytest.raises(sqlite3.DatabaseError, match="not authorized"):
        session.db("contacts").execute("ATTACH DATABASE 'x.db' AS x")
    assert not diff_world(task_world(task), session.dbs).schema_changes


def _others_ids(world):
    me = world.me.email
    q = lambda app, sql: [r[0] for r in world.dbs[app].execute(sql, (me,) * sql.count("?"))]  # noqa: E731
    return {
        ("contacts_get", "contact_id"): q("contacts", "SELECT id FROM contacts WHERE owner != ?"),
        ("contacts_delete", "contact_id"): q("contacts", "SELECT id FROM contacts WHERE owner != ?"),
        ("email_read", "email_id"): q("email", "SELECT id FROM mailbox WHERE owner != ?"),
        ("email_delete", "email_id"): q("email", "SELECT id FROM mailbox WHERE owner != ?"),
        ("calendar_get", "event_id"): q("calendar", "SELECT id FROM events WHERE owner != ? AND id NOT IN "
                                        "(SELECT event_id FROM attendees WHERE email = ?)"),
        ("calendar_delete", "event_id"): q("calendar", "SELECT id FROM events WHERE owner != ?"),
        ("notes_get", "note_id"): q("notes", "SELECT id FROM notes WHERE owner != ? AND id NOT IN "
                                    "(SELECT note_id FROM shares WHERE email = ?)"),
        ("notes_delete", "note_id"): q("notes", "SELECT id FROM notes WHERE owner != ?"),
        ("shop_order", "order_id"): q("shopping", "SELECT id FROM orders WHERE owner != ?"),
        ("shop_cancel_order", "order_id"): q("shopping", "SELECT id FROM orders WHERE owner != ?"),
        ("payments_pay_request", "request_id"): q("payments", "SELECT id FROM requests WHERE payer != ?"),
        ("payments_cancel_request", "request_id"): q("payments", "SELECT id FROM requests WHERE requester != ?"),
    }


def test_other_users_private_records_are_out_of_reach(task):
    world = task_world(task)
    session = new_session(task)
    for (tool, field), ids in _others_ids(world).items():
        assert ids, tool
        for record in ids:
            result = call_tool(session, tool, {field: record})
            assert result["error"]["type"] in {"not_found", "permission_denied"}, (tool, record)
    assert diff_world(world, session.dbs).empty


def test_searches_only_return_the_users_own_or_shared_records(task):
    world = task_world(task)
    session = new_session(task)
    me = world.me.email
    contacts = call_tool(session, "contacts_search", {"page_size": 50})
    mine = {r[0] for r in world.dbs["contacts"].execute("SELECT id FROM contacts WHERE owner = ?", (me,))}
    assert {c["contact_id"] for c in contacts["results"]} <= mine
    for folder in ("inbox", "sent", None):
        mails = call_tool(session, "email_search", {"folder": folder, "page_size": 50})["results"]
        assert all(me in m["to"] or m["sender"] == me for m in mails)
    events = call_tool(session, "calendar_search", {"page_size": 50})["results"]
    assert all(e["owner"] == me or any(a["email"] == me for a in e["attendees"]) for e in events)
    transfers = call_tool(session, "payments_transfers", {"page_size": 50})["results"]
    assert all(me in (t["sender"], t["receiver"]) for t in transfers)


def test_tools_cannot_reach_the_checker_state(task):
    session = new_session(task)
    assert set(vars(session)) == {"user", "now", "dbs", "completed", "answer", "calls", "touched"}
    world = task_world(task)
    assert all(session.dbs[a] is not world.dbs[a] for a in world.dbs)
    before = world.table("contacts", "contacts")
    call_tool(session, "contacts_delete", {"contact_id": next(iter(
        c for c, row in before.items() if row[1] == world.me.email))})
    fresh = next(iter(world.dbs["contacts"].execute("SELECT COUNT(*) FROM contacts")))[0]
    assert fresh == len(before)  # the base world (the checker's "before") is untouched


def test_no_tool_touches_files_processes_or_the_network(task):
    events: list[tuple[str, tuple]] = []
    watching = [False]
    watched = ("open", "os.", "socket.", "subprocess.", "shutil.", "urllib.", "http.", "sqlite3.connect")

    def hook(event, args):
        if watching[0] and event.startswith(watched):
            events.append((event, args))

    sys.addaudithook(hook)
    session = new_session(task)
    for name, spec in REGISTRY.items():  # warm up lazy imports first
        call_tool(session, name, _args_for(spec, "../../etc/passwd"))
    watching[0] = True
    try:
        for name, spec in REGISTRY.items():
            for payload in ("../../etc/passwd", "file:///etc/passwd", "http://127.0.0.1:1/"):
                call_tool(session, name, _args_for(spec, payload))
    finally:
        watching[0] = False
    assert events == []


def test_app_code_imports_nothing_that_reaches_outside():
    banned = {"os", "socket", "subprocess", "shutil", "pathlib", "urllib", "http", "io", "requests", "ctypes"}
    root = Path(tools_pkg.__file__).parent
    for path in [*root.glob("apps/*.py"), root / "api.py"]:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not {n.split(".")[0] for n in names} & banned, (path.name, names)


def test_session_type_is_the_only_handle_tools_get():
    for spec in REGISTRY.values():
        first = next(iter(spec.fn.__annotations__))
        assert first == "session" and spec.fn.__annotations__[first] in ("Session", Session)
