"""Grading an episode from the database diff, AppWorld-style.

The checker compares the episode's databases with the cached base world (the
"before" state, which no tool can reach) and gets, per table, the rows that
were inserted, deleted or updated. A task's :class:`Expectation` lists the
required changes with normalised values; the episode passes only when

* every required change happened (the *goal* check),
* nothing else changed, apart from fields the apps update as a side effect
  (reading an email marks it read, a transfer moves balances) — the
  *collateral* check; an extra row, a deleted row or a changed field anywhere
  else fails it,
* and, for questions, the answer is exactly the expected value (the *answer*
  check): listing several candidates fails.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from rollgym.envs.tools.world import World

Key = tuple[str, str, int]
Row = dict[str, Any]
AnswerKind = Literal["none", "number", "text", "list", "datetime"]

# Fields the apps change as a side effect of permitted work: reading marks mail read, notes stamp their edit time,
# transfers move balances (the transfers themselves are checked), orders move stock (the orders are checked).
SIDE_EFFECT_FIELDS = {("email", "mailbox", "is_read"), ("notes", "notes", "updated_at"),
                      ("payments", "accounts", "balance_cents"), ("shopping", "products", "stock")}
# Tables whose new rows follow from a checked row: an inbox copy for each recipient of a checked message.
DERIVED_INSERTS = {("email", "mailbox")}


def normalise(value: Any) -> Any:
    """Case, outer whitespace and inner runs of whitespace do not matter in text."""
    return " ".join(value.casefold().split()) if isinstance(value, str) else value


Matcher = Callable[[Any], bool]


def contains(*parts: str) -> Matcher:
    """A field matcher: the text contains every part (normalised)."""
    return lambda value: isinstance(value, str) and all(normalise(p) in normalise(value) for p in parts)


def json_set(items: list[str] | set[str]) -> Matcher:
    """A field matcher: a JSON list holding exactly these strings, in any order and case."""
    wanted = {normalise(i) for i in items}

    def match(value: Any) -> bool:
        try:
            got = json.loads(value) if isinstance(value, str) else value
            return isinstance(got, list) and {normalise(i) for i in got} == wanted
        except (ValueError, TypeError):
            return False

    return match


def _matches(expected: Any, value: Any) -> bool:
    if callable(expected):
        return bool(expected(value))
    if isinstance(expected, float) or isinstance(value, float):
        return isinstance(value, (int, float)) and abs(float(value) - float(expected)) < 1e-6
    return bool(normalise(expected) == normalise(value))


@dataclass
class Expectation:
    """The changes a task requires and, for questions, the answer.

    ``updates`` maps a row key to the required new values of some fields;
    ``deletes`` holds row keys that must be gone; ``inserts`` lists new rows as
    ``(app, table, {field: value or matcher})``. Values compare after
    :func:`normalise`.
    """

    updates: dict[Key, Row] = field(default_factory=dict)
    deletes: set[Key] = field(default_factory=set)
    inserts: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    answer: Any = None
    answer_kind: AnswerKind = "none"


@dataclass
class Diff:
    """What changed between two sets of app databases, per table, keyed by row id."""

    inserted: dict[tuple[str, str], list[Row]] = field(default_factory=dict)
    deleted: dict[Key, Row] = field(default_factory=dict)
    updated: dict[Key, dict[str, tuple[Any, Any]]] = field(default_factory=dict)
    after: dict[Key, Row] = field(default_factory=dict)
    schema_changes: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """Whether nothing changed at all."""
        return not (self.inserted or self.deleted or self.updated or self.schema_changes)


def _tables(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]


def diff_world(world: World, after: dict[str, sqlite3.Connection],
               touched: set[tuple[str, str]] | None = None) -> Diff:
    """Row-level differences between the base ``world`` and an episode's databases.

    ``touched`` limits the comparison to tables that a write statement may have reached (an episode's
    :class:`~rollgym.envs.tools.api.Session` records them); ``None`` compares every table.
    """
    diff = Diff()
    for app, base in world.dbs.items():
        conn = after.get(app)
        tables = _tables(base)
        if conn is None or _tables(conn) != tables:
            diff.schema_changes.append(f"the tables of {app} changed")
            continue
        for table in tables:
            if touched is not None and (app, table) not in touched:
                continue
            old = world.table(app, table)
            new = {int(r[0]): tuple(r) for r in conn.execute(f'SELECT * FROM "{table}"')}  # names from sqlite_master
            if old == new:
                continue
            names = world.columns(app, table)
            added = [dict(zip(names, new[i])) for i in sorted(set(new) - set(old))]
            if added:
                diff.inserted[(app, table)] = added
            for i in set(old) - set(new):
                diff.deleted[(app, table, i)] = dict(zip(names, old[i]))
            for i in set(old) & set(new):
                if old[i] != new[i]:
                    diff.updated[(app, table, i)] = {
                        k: (a, b) for k, a, b in zip(names, old[i], new[i]) if a != b}
                    diff.after[(app, table, i)] = dict(zip(names, new[i]))
    return diff


@dataclass
class Verdict:
    """The outcome of grading: the three checks and what failed, in words."""

    goal: bool
    collateral: bool
    answer: bool
    failures: list[str]

    @property
    def success(self) -> bool:
        """All three checks passed."""
        return self.goal and self.collateral and self.answer

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form for ``info``."""
        return {"success": self.success, "goal": self.goal, "collateral": self.collateral, "answer": self.answer,
                "failures": list(self.failures[:20])}


_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{1,2}:\d{2}")


def _split_list(text: str) -> list[str]:
    parts = re.split(r"[,;\n]|\band\b", text)
    return [p.strip(" .\"'-*") for p in parts if p.strip(" .\"'-*")]


def check_answer(kind: AnswerKind, expected: Any, answer: str | None) -> bool:
    """Whether ``answer`` states exactly the expected value (and no competing one)."""
    if kind == "none":
        return True
    if not isinstance(answer, str) or len(answer) > 2000:
        return False
    if kind == "number":
        found = {round(float(n.replace(",", "")), 2) for n in _NUMBER.findall(answer)}
        return len(found) == 1 and abs(found.pop() - float(expected)) < 0.005
    if kind == "datetime":
        stamps = {datetime.strptime(d.replace("T", " "), "%Y-%m-%d %H:%M") for d in _DATETIME.findall(answer)}
        return stamps == {datetime.strptime(expected, "%Y-%m-%d %H:%M")}
    if kind == "text":
        return normalise(answer.strip(" .\"'")) == normalise(expected)
    return {normalise(p) for p in _split_list(answer)} == {normalise(e) for e in expected}


def grade(expectation: Expectation, diff: Diff, answer: str | None) -> Verdict:
    """Grade one episode: goal, collateral damage and answer."""
    failures: list[str] = list(diff.schema_changes)
    goal = collateral = not diff.schema_changes
    for key, fields in expectation.updates.items():
        row = diff.after.get(key)
        if row is None or not all(_matches(v, row[k]) for k, v in fields.items()):
            goal = False
            failures.append(f"{key[0]}.{key[1]} row {key[2]} was not changed as required")
    for key, changes in diff.updated.items():
        allowed = set(expectation.updates.get(key, {}))
        extra = [f for f in changes if f not in allowed and (key[0], key[1], f) not in SIDE_EFFECT_FIELDS]
        if extra:
            collateral = False
            failures.append(f"{key[0]}.{key[1]} row {key[2]}: unexpected change of {', '.join(extra)}")
    for key in expectation.deletes - set(diff.deleted):
        goal = False
        failures.append(f"{key[0]}.{key[1]} row {key[2]} was not deleted")
    for key in set(diff.deleted) - expectation.deletes:
        collateral = False
        failures.append(f"{key[0]}.{key[1]} row {key[2]} was deleted")
    unmatched = {k: list(v) for k, v in diff.inserted.items()}
    for app, table, fields in expectation.inserts:
        pool = unmatched.get((app, table), [])
        hit = next((r for r in pool if all(_matches(v, r.get(k)) for k, v in fields.items())), None)
        if hit is None:
            goal = False
            failures.append(f"no new {app}.{table} row matches {sorted(fields)}")
        else:
            pool.remove(hit)
    for (app, table), rows in unmatched.items():
        if rows and (app, table) not in DERIVED_INSERTS:
            collateral = False
            failures.append(f"{len(rows)} unexpected new row(s) in {app}.{table}")
    answer_ok = check_answer(expectation.answer_kind, expectation.answer, answer)
    if not answer_ok:
        failures.append("the answer is missing or wrong")
    return Verdict(goal, collateral, answer_ok, failures)
