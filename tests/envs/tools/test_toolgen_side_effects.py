"""Collateral damage zeroes the reward on generated apps: a task done by its reference solution scores 1; the
same plus one unrelated write of any kind (create, update, delete or a domain action, on any entity, in the
task's app or in a distractor app of the world), or a write the task did not ask for on the rows it touches,
scores 0 on the whole-world gate ``apps_unchanged_beyond_task``.

Every write goes through the same tools an agent calls, and the test checks that it really changed the world
before grading it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest

from rollgym.core.task import Task
from rollgym.envs.tools.api import Session
from rollgym.envs.tools.generated import catalog
from rollgym.envs.tools.generated.env import evaluate_session, new_session, world_tools
from rollgym.envs.tools.generated.grading import diff_apps
from rollgym.envs.tools.generated.policies import run_reference
from rollgym.envs.tools.generated.schema import AppSchema, Entity
from rollgym.envs.tools.generated.source import ToolGenTaskSource, expectation_of
from rollgym.envs.tools.generated.store import people
from rollgym.envs.tools.generated.templates import as_argument, eligible, fresh_value
from rollgym.envs.tools.generated.tools import call
from rollgym.verifiers.tools import GATE

Avoid = set[tuple[str, str, int]]


def _rows(session: Session, s: AppSchema, e: Entity) -> list[dict[str, Any]]:
    cur = session.db(s.app_id).execute(f'SELECT * FROM "{e.table}" ORDER BY id')
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def _free(session: Session, s: AppSchema, e: Entity, avoid: Avoid) -> list[dict[str, Any]]:
    """Rows of ``e`` the task neither touches nor created, that no other row refers to."""
    referred = {r[f.name] for other in s.entities for f in other.fields if f.kind == "ref" and f.ref == e.name
                for r in _rows(session, s, other)}
    return [r for r in _rows(session, s, e) if (s.app_id, e.table, r["id"]) not in avoid and r["id"] not in referred]


def _writes(session: Session, s: AppSchema, avoid: Avoid, rng: np.random.Generator) -> list[tuple[str, dict[str, Any]]]:
    """One unrelated write of every kind the app allows: ``(tool, arguments)``."""
    out: list[tuple[str, dict[str, Any]]] = []
    for e in s.entities:
        free = _free(session, s, e, avoid)
        any_row = [r for r in _rows(session, s, e) if (s.app_id, e.table, r["id"]) not in avoid]
        if "update" in e.ops and any_row:
            f = next(f for f in e.fields if f.editable and f.kind != "ref" and f.role not in ("code", "status"))
            value = fresh_value(f, any_row[0][f.name], rng)
            arguments = {f"{e.name}_id": any_row[0]["id"], f.name: as_argument(f, value)}
            out.append((f"{s.app_id}_{e.name}_update", arguments))
        if "delete" in e.ops and free:
            out.append((f"{s.app_id}_{e.name}_delete", {f"{e.name}_id": free[-1]["id"]}))
        if "create" in e.ops:
            arguments: dict[str, Any] = {}
            for f in e.fields:
                if not f.required or f.role in ("code", "status", "stamp"):
                    continue
                if f.kind == "ref":
                    arguments[f.name] = _rows(session, s, s.entity(f.ref))[0]["id"]
                elif f.name == "name" and e.role == "party":
                    taken = {r["email"] for r in _rows(session, s, e)}
                    person = next(p for p in people() if p.email not in taken)
                    arguments.update(name=person.name, email=person.email)
                elif f.name != "email":
                    value = f"Side item {int(rng.integers(1000))}" if f.role == "label" else fresh_value(f, None, rng)
                    arguments[f.name] = 1 if f.role == "quantity" else as_argument(f, value)
            out.append((f"{s.app_id}_{e.name}_create", arguments))
    records = [r for r in _rows(session, s, s.record) if (s.app_id, s.record.table, r["id"]) not in avoid]
    app = catalog.app(s.app_id)
    for action in s.actions:
        row = next((r for r in records if eligible(app, action, [r])), None)
        if row is not None:
            out.append((f"{s.app_id}_{s.record.name}_{action.verb}", {f"{s.record.name}_id": row["id"]}))
    return out


def _clone(task: Task, session: Session) -> Session:
    copy = new_session(task)
    for app_id, conn in session.dbs.items():
        conn.commit()
        conn.backup(copy.dbs[app_id])
    copy.touched |= session.touched
    return copy


def _avoid(task: Task, session: Session) -> Avoid:
    exp = expectation_of(task)
    out: Avoid = set(exp.updates) | set(exp.deletes)
    for name, table in diff_apps(task.meta["world"], session.dbs, session.touched).tables.items():
        app_id, _, short = name.partition(".")
        out |= {(app_id, short, int(r["id"])) for r in table.added}
    return out


def _tasks(split: str, n: int) -> list[Task]:
    source = ToolGenTaskSource(distractors=1)
    tasks = [source.task(i, split) for i in range(n)]
    return tasks + [ToolGenTaskSource(groups=["cross_app"], distractors=1).task(i, split) for i in range(3)]


@pytest.mark.parametrize("split", ["train", "test", "test_unseen"])
def test_task_plus_one_unrelated_write_of_every_kind_scores_zero(split):
    applied: Counter[str] = Counter()
    rng = np.random.default_rng(0)
    for task in _tasks(split, 8):
        clean = new_session(task)
        answer = run_reference(task, clean)
        assert evaluate_session(task, clean, answer).reward == 1.0, task.id
        tools = world_tools(task)
        avoid = _avoid(task, clean)
        for app_id in task.meta["world"]:
            where = "task_app" if app_id in task.meta["apps"] else "distractor_app"
            for tool, arguments in _writes(clean, catalog.schema(app_id), avoid, rng):
                session = _clone(task, clean)
                before = diff_apps(task.meta["world"], session.dbs).summary()
                result = call(session, tools, tool, arguments)
                assert "error" not in result, (task.id, tool, arguments, result)
                assert diff_apps(task.meta["world"], session.dbs).summary() != before, (task.id, tool, "no change")
                score = evaluate_session(task, session, answer)
                assert score.reward == 0.0 and not score.correct, (task.id, tool, score.details)
                assert score.error == "side_effects" and score.details["failed_gates"] == [GATE], (task.id, tool)
                op = tool.rsplit("_", 1)[-1] if tool.rsplit("_", 1)[-1] in ("create", "update", "delete") else "action"
                applied[f"{where}:{op}"] += 1
    for where in ("task_app", "distractor_app"):
        for op in ("create", "update", "delete", "action"):
            assert applied[f"{where}:{op}"] >= 3, applied


def test_writes_the_task_did_not_ask_for_on_its_own_rows_score_zero():
    """Another field of a row the task changes, a second copy of a row it creates, and an action it did not ask
    for on a row it changes: each fails the gate though every required change is there."""
    checked: Counter[str] = Counter()
    source = ToolGenTaskSource(groups=["edit", "action"], distractors=0)
    rng = np.random.default_rng(1)
    for index in range(40):
        task = source.task(index, "test")
        exp = expectation_of(task)
        session = new_session(task)
        answer = run_reference(task, session)
        tools = world_tools(task)
        for (app_id, table, row_id), fields in list(exp.updates.items())[:1]:
            s = catalog.schema(app_id)
            e = next(x for x in s.entities if x.table == table)
            if "update" not in e.ops:
                continue
            f = next((f for f in e.fields if f.editable and f.kind not in ("ref",) and f.name not in fields
                      and f.role not in ("code", "status", "stamp")), None)
            if f is None:
                continue
            extra = _clone(task, session)
            current = _rows(extra, s, e)
            old = next(r for r in current if r["id"] == row_id)[f.name]
            result = call(extra, tools, f"{app_id}_{e.name}_update",
                          {f"{e.name}_id": row_id, f.name: as_argument(f, fresh_value(f, old, rng))})
            assert "error" not in result, result
            score = evaluate_session(task, extra, answer)
            assert score.details["criteria"]["required_changes"] and score.reward == 0.0, (task.id, f.name)
            checked["another_field"] += 1
        if task.meta["kind"] in ("create_record", "create_party", "create_child"):
            twice = _clone(task, session)
            if task.meta["kind"] == "create_party":  # names and emails are unique: a namesake with another email
                s = catalog.schema(task.meta["apps"][0])
                params = task.meta["params"]
                result = call(twice, tools, f"{s.app_id}_{s.party.name}_create",
                              {"name": params["name"] + " Junior", "email": "junior." + params["email"]})
                assert "error" not in result, result
            else:
                run_reference(task, twice)
            score = evaluate_session(task, twice, answer)
            assert score.details["criteria"]["required_changes"] and score.reward == 0.0, task.id
            checked["second_copy"] += 1
    assert checked["another_field"] >= 5 and checked["second_copy"] >= 3, checked


def test_deleting_and_recreating_a_row_is_still_a_change():
    """A row deleted and inserted again with the same values gets a new id: the diff shows both, the gate fails."""
    source = ToolGenTaskSource(groups=["lookup"], distractors=0)
    task = next(t for t in (source.task(i, "test") for i in range(50))
                if "delete" in catalog.schema(t.meta["apps"][0]).party.ops)
    session = new_session(task)
    answer = run_reference(task, session)
    s = catalog.schema(task.meta["apps"][0])
    row = _free(session, s, s.party, set())[0]
    tools = world_tools(task)
    assert call(session, tools, f"{s.app_id}_{s.party.name}_delete", {f"{s.party.name}_id": row["id"]})["deleted"]
    again = {k: v for k, v in row.items() if k in ("name", "email")}
    assert "error" not in call(session, tools, f"{s.app_id}_{s.party.name}_create", again)
    score = evaluate_session(task, session, answer)
    assert score.reward == 0.0 and score.error == "side_effects"
