"""Generated tools: typed schemas, labelled errors, the schema's constraints, action preconditions, searches and
aggregates that agree with SQL, and calls that never raise (hypothesis)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rollgym.core.toolschema import function_schema
from rollgym.envs.tools.api import Session
from rollgym.envs.tools.generated import catalog
from rollgym.envs.tools.generated.schema import AppSchema
from rollgym.envs.tools.generated.store import NOW, TODAY, quote
from rollgym.envs.tools.generated.tools import call


def _app(want: Any) -> AppSchema:
    """The first generated app whose schema has what a test needs."""
    return next(s for s in catalog.pool().schemas.values() if want(s))


def _session(s: AppSchema) -> Session:
    return Session("operator@toolgen.example", NOW, {s.app_id: catalog.app(s.app_id).copy()})


def _call(session: Session, s: AppSchema, tool: str, /, **arguments: Any) -> dict[str, Any]:
    return call(session, catalog.tools(s.app_id), f"{s.app_id}_{tool}", arguments)


def _kind(result: dict[str, Any]) -> str | None:
    return result.get("error", {}).get("type")


def _dump(session: Session, s: AppSchema) -> str:
    db = session.db(s.app_id)
    return json.dumps({e.table: db.execute(f"SELECT * FROM {quote(e.table)} ORDER BY id").fetchall()
                       for e in s.entities})


def test_schemas_come_from_the_typed_functions():
    s = _app(lambda s: s.item is not None)
    for spec in catalog.tools(s.app_id).values():
        assert function_schema(spec.fn, skip=("session",)) == spec.schema
    search = catalog.tools(s.app_id)[f"{s.app_id}_{s.record.name}_search"].schema["function"]["parameters"]
    assert search["properties"]["status"]["enum"] == [*s.statuses, None]
    assert search["properties"]["page_size"]["default"] == 10 and search["required"] == []
    create = catalog.tools(s.app_id)[f"{s.app_id}_{s.record.name}_create"].schema["function"]["parameters"]
    assert f"{s.party.name}_id" in create["required"] and "code" not in create["properties"]


def test_bad_arguments_get_one_labelled_sentence():
    s = _app(lambda s: s.party.has("email"))
    session = _session(s)
    before = _dump(session, s)
    party = s.party.name
    cases = [
        (f"{party}_serch", {}, "unknown_tool", "Did you mean"),
        (f"{party}_get", {}, "invalid_arguments", "missing required argument"),
        (f"{party}_get", {f"{party}_id": "one"}, "invalid_arguments", "must be an integer"),
        (f"{party}_get", {f"{party}_id": 1, "x": 2}, "invalid_arguments", "unknown argument"),
        (f"{party}_search", {"page_size": 500}, "invalid_arguments", "between 1 and 50"),
        (f"{party}_search", {"query": "q" * 400}, "invalid_arguments", "at most"),
        (f"{s.record.name}_search", {"status": "teleported"}, "invalid_arguments", "must be one of"),
        (f"{party}_create", {"name": "Ana Test", "email": "not-an-email"}, "invalid_arguments", "email address"),
        (f"{party}_create", {"name": "   ", "email": "ana@example.com"}, "invalid_arguments", "must not be empty"),
        (f"{party}_get", {f"{party}_id": 99999}, "not_found", "There is no"),
        (f"{party}_update", {f"{party}_id": 1}, "invalid_arguments", "at least one field"),
    ]
    for name, arguments, kind, words in cases:
        result = _call(session, s, name, **arguments)
        assert _kind(result) == kind and words in result["error"]["message"], (name, result)
        assert "\n" not in result["error"]["message"] and "SELECT" not in result["error"]["message"]
    assert _dump(session, s) == before


def test_the_schemas_constraints_are_enforced_by_the_tools():
    s = _app(lambda s: "delete" in s.party.ops and "delete" in s.record.ops and s.child is not None
             and "delete" in s.child.ops)
    session = _session(s)
    app = catalog.app(s.app_id)
    parties = app.table(s.party)
    taken = parties[1]["email"]
    assert _kind(_call(session, s, f"{s.party.name}_create", name="Ana Test", email=taken)) == "conflict"
    assert _kind(_call(session, s, f"{s.party.name}_update", **{f"{s.party.name}_id": parties[0]["id"],
                                                               "email": taken})) == "conflict"
    money = s.record.with_role("amount")[0]
    values: dict[str, Any] = {f"{s.party.name}_id": 999, money.name: 10.0}
    if s.item is not None:
        values[f"{s.item.name}_id"] = app.table(s.item)[0]["id"]
    for f in s.record.fields:
        if f.required and f.name not in values and f.role not in ("code", "status") and f.kind != "ref":
            values[f.name] = 1 if f.kind == "int" else TODAY
    assert _kind(_call(session, s, f"{s.record.name}_create", **values)) == "not_found"
    assert _kind(_call(session, s, f"{s.record.name}_create", **{**values, money.name: 10.001})) == \
        "invalid_arguments"
    held = app.table(s.record)[0][f"{s.party.name}_id"]
    refused = _call(session, s, f"{s.party.name}_delete", **{f"{s.party.name}_id": held})
    assert _kind(refused) == "conflict" and "delete" in refused["error"]["message"]
    kid = app.table(s.child)[0]
    record_id = kid[f"{s.record.name}_id"]
    assert _kind(_call(session, s, f"{s.record.name}_delete", **{f"{s.record.name}_id": record_id})) == "conflict"
    for k in (r for r in app.table(s.child) if r[f"{s.record.name}_id"] == record_id):
        assert _call(session, s, f"{s.child.name}_delete", **{f"{s.child.name}_id": k["id"]})["deleted"] is True
    assert _call(session, s, f"{s.record.name}_delete", **{f"{s.record.name}_id": record_id})["deleted"] is True
    assert _kind(_call(session, s, f"{s.record.name}_get", **{f"{s.record.name}_id": record_id})) == "not_found"


def test_actions_check_every_precondition_and_change_nothing_when_refused():
    s = _app(lambda s: s.counter is not None and s.actions[0].flag is not None and s.actions[0].party_flag)
    action = s.actions[0]
    app = catalog.app(s.app_id)
    tool = f"{s.record.name}_{action.verb}"
    key = f"{s.record.name}_id"
    rows = app.table(s.record)
    parties = {p["id"]: p for p in app.table(s.party)}
    stock = {i["id"]: i for i in app.table(s.item)}  # type: ignore[arg-type]
    quantity = s.record.with_role("quantity")[0].name
    wrong_status = next(r for r in rows if r["status"] not in action.sources)
    no_flag = next(r for r in rows if r["status"] in action.sources and not r[action.flag])
    good = next(r for r in rows if r["status"] in action.sources and r[action.flag]
                and parties[r[f"{s.party.name}_id"]][action.party_flag]
                and stock[r[f"{s.item.name}_id"]][s.counter] >= r[quantity])  # type: ignore[union-attr]
    session = _session(s)
    before = _dump(session, s)
    for row, words in ((wrong_status, "needs it"), (no_flag, "is false")):
        refused = _call(session, s, tool, **{key: row["id"]})
        assert _kind(refused) == "precondition_failed" and words in refused["error"]["message"], refused
    # an inactive party and an empty stock refuse too
    db = session.db(s.app_id)
    db.execute(f"UPDATE {quote(s.party.table)} SET {quote(action.party_flag)} = 0 WHERE id = ?",
               (good[f"{s.party.name}_id"],))
    assert "is not" in _call(session, s, tool, **{key: good["id"]})["error"]["message"]
    db.execute(f"UPDATE {quote(s.party.table)} SET {quote(action.party_flag)} = 1 WHERE id = ?",
               (good[f"{s.party.name}_id"],))
    item_id = good[f"{s.item.name}_id"]  # type: ignore[union-attr]
    db.execute(f"UPDATE {quote(s.item.table)} SET {quote(s.counter)} = 0 WHERE id = ?", (item_id,))  # type: ignore[union-attr,arg-type]
    assert "only 0" in _call(session, s, tool, **{key: good["id"]})["error"]["message"]
    session = _session(s)
    assert _dump(session, s) == before
    done = _call(session, s, tool, **{key: good["id"]})
    assert done["status"] == action.target and done[action.stamp] == TODAY
    left = _call(session, s, f"{s.item.name}_get", **{f"{s.item.name}_id": item_id})  # type: ignore[union-attr]
    assert left[s.counter] == stock[item_id][s.counter] - good[quantity]


def test_search_filters_pages_and_stats_agree_with_sql():
    s = _app(lambda s: "stats" in s.record.ops)
    session = _session(s)
    db = session.db(s.app_id)
    money = s.record.with_role("amount")[0].name
    status = s.statuses[1]
    found = _call(session, s, f"{s.record.name}_search", status=status, **{f"min_{money}": 20.0}, page_size=50)
    sql = db.execute(f"SELECT code FROM {quote(s.record.table)} WHERE status = ? AND {quote(money)} >= 2000 "
                     "ORDER BY code", (status,)).fetchall()
    assert [r["code"] for r in found["results"]] == [r[0] for r in sql] and found["total"] == len(sql)
    first = _call(session, s, f"{s.record.name}_search", page_size=3)
    second = _call(session, s, f"{s.record.name}_search", page_size=3, page=2)
    assert first["has_more"] and not {r["code"] for r in first["results"]} & {r["code"] for r in second["results"]}
    assert _call(session, s, f"{s.record.name}_search", query="%")["total"] == 0  # LIKE wildcards are literal
    stats = _call(session, s, f"{s.record.name}_stats", group_by="status", field=money)
    for group in stats["groups"]:
        total = db.execute(f"SELECT SUM({quote(money)}), COUNT(*) FROM {quote(s.record.table)} WHERE status = ?",
                           (group["status"],)).fetchone()
        assert group["count"] == total[1] and abs(group["sum"] - total[0] / 100) < 0.005


_APPS = [s.app_id for s in list(catalog.pool().schemas.values())[::50]]
_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False),
                    st.text(max_size=60), st.sampled_from(["2025-06-04", "2025-13-45", "%", "_", "'; DROP TABLE x;--",
                                                           "a@b.co", "x" * 400]),
                    st.lists(st.integers(), max_size=3),
                    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_tool_calls_never_raise(data: st.DataObject) -> None:
    app_id = data.draw(st.sampled_from(_APPS))
    tools = catalog.tools(app_id)
    name = data.draw(st.one_of(st.sampled_from(list(tools)), st.text(max_size=30)))
    props = list(tools[name].schema["function"]["parameters"]["properties"]) if name in tools else ["x"]
    arguments = data.draw(st.dictionaries(st.one_of(st.sampled_from(props), st.text(max_size=8)), _VALUES,
                                          max_size=5))
    session = Session("operator@toolgen.example", NOW, {app_id: catalog.app(app_id).copy()})
    result = call(session, tools, name, arguments)
    assert isinstance(result, dict)
    json.dumps(result)
    if "error" in result:
        assert set(result["error"]) == {"type", "message"} and result["error"]["type"] != "internal_error", result
