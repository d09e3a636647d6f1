"""Grading of generated tasks with the shared state-diff grader and the whole-world gate.

A generated task states its required end state as a ToolWorld
:class:`~rollgym.envs.tools.checker.Expectation` (rows to update with their new values,
rows to delete, rows to insert, the answer). :func:`grade` turns it into an allow-list
and grades the episode with :mod:`rollgym.verifiers.statediff` and
:mod:`rollgym.verifiers.rubric` over **every table of every app of the episode's world**
(the task's apps and the distractor apps beside them). Nothing is tolerated beyond the
required changes: the generated apps have no side effects that the expectation does not
spell out (an action's status, date stamp and stock change are all required values). The
reward is 1.0 when every required change happened, a question's answer is exactly right
and the gate ``apps_unchanged_beyond_task`` holds; else 0.0.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from rollgym.core.task import Score
from rollgym.envs.tools.checker import GATE, Expectation, check_answer
from rollgym.envs.tools.generated.catalog import app
from rollgym.verifiers.rubric import Criterion, GradeContext, Rubric, state_criteria
from rollgym.verifiers.statediff import Rule, StateDiff, added, changed, deleted, diff_snapshots, merge, snapshot

__all__ = ["GATE", "diff_apps", "grade", "rubric", "rules"]


def rules(expectation: Expectation) -> list[Rule]:
    """The allow-list of a task: exactly its required changes."""
    out: list[Rule] = []
    for (app_id, table, row_id), fields in expectation.updates.items():
        out.append(changed(f"{app_id}.{table}", {"id": row_id}, to=fields, required=True,
                           note=f"{app_id}.{table} row {row_id} was not changed as required"))
    for app_id, table, row_id in sorted(expectation.deletes):
        out.append(deleted(f"{app_id}.{table}", {"id": row_id}, required=True,
                           note=f"{app_id}.{table} row {row_id} was not deleted"))
    for app_id, table, fields in expectation.inserts:
        out.append(added(f"{app_id}.{table}", fields, required=True,
                         note=f"no new {app_id}.{table} row matches {sorted(fields)}"))
    return out


def rubric(expectation: Expectation) -> Rubric:
    """The criteria: ``required_changes``, ``answer`` for questions, and the gate ``apps_unchanged_beyond_task``."""
    criteria = state_criteria(rules(expectation), goal="required_changes", gate=GATE,
                              gate_description="no row of any app of the world changed beyond what the task asks")
    if expectation.answer_kind != "none":
        kind, value = expectation.answer_kind, expectation.answer
        criteria.insert(1, Criterion("answer", 1.0, lambda ctx: check_answer(kind, value, ctx.answer),
                                     f"the answer states exactly the expected {kind}"))
    return Rubric(criteria, partial_credit=False, asks_answer=expectation.answer_kind != "none")


def diff_apps(world: Iterable[str], dbs: dict[str, sqlite3.Connection],
              touched: set[tuple[str, str]] | None = None) -> StateDiff:
    """Every row added, changed or deleted in any table of the world's apps (tables named ``<app>.<table>``).

    ``touched`` (the session's record of tables a write statement reached) skips tables that cannot have
    changed; ``None`` reads every table. Both give the same diff.
    """
    parts = []
    for app_id in world:
        base = app(app_id).snapshot()
        conn = dbs.get(app_id)
        if conn is None:
            parts.append(StateDiff({}, (f"the database of {app_id} is missing",)))
            continue
        tables = None if touched is None else {t for a, t in touched if a == app_id}
        now = snapshot(lambda sql, params=(), c=conn: c.execute(sql, params).fetchall(), base.schema, tables)
        parts.append(diff_snapshots(base, now, prefix=f"{app_id}."))
    return merge(parts)


def grade(expectation: Expectation, diff: StateDiff, answer: str | None) -> Score:
    """Grade one episode: the required changes, the answer and the whole-world gate."""
    return rubric(expectation).grade(GradeContext(answer=answer, diff=diff))
