"""State-diff grading for worlds kept in SQLite: the ToolWorld apps and the practice websites.

An episode is graded on what it did to the world, not on what the agent says it
did. The grader reads every table twice, at reset (the *before* state, which no
agent can reach) and at the end, and keys each row by its primary key (the rowid
when a table has none), which gives, per table, the rows **added**, **changed**
(with the old and new value of each column) and **deleted**: a :class:`StateDiff`.

A task states the changes it asks for and the ones it tolerates as :class:`Rule`\\ s
(:func:`added`, :func:`changed`, :func:`deleted`). :func:`explain` matches the
diff against them: a *required* rule that no change satisfies is missing (the goal
was not reached); a change that no rule allows is collateral damage, wherever it
happened, in any table. The allow-list therefore covers the whole world that the
site or app can write, not only the table the task targets.

:mod:`rollgym.verifiers.rubric` turns named, weighted criteria (among them the
whole-world gate built from an allow-list) into a :class:`~rollgym.core.task.Score`.

Example:
    >>> import sqlite3
    >>> before = sqlite3.connect(":memory:")
    >>> _ = before.executescript("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a');")
    >>> after = sqlite3.connect(":memory:")
    >>> before.backup(after)
    >>> _ = after.execute("UPDATE t SET v = 'b' WHERE id = 1")
    >>> diff = diff_databases({"db": before}, {"db": after})
    >>> diff.summary()
    {'db.t': {'added': 0, 'changed': 1, 'deleted': 0}}
    >>> explain(diff, [changed("db.t", {"id": 1}, to={"v": "b"}, required=True)]).ok
    True
    >>> explain(diff, []).unexplained
    ['db.t row (1,): v changed']
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Row = dict[str, Any]
Key = tuple[Any, ...]
Query = Callable[..., Sequence[Any]]
"""``query(sql, params=())`` returns the rows of one SQL statement (tuples or ``sqlite3.Row``)."""
Matcher = Callable[[Any], bool]
Where = Mapping[str, Any] | Callable[[Row], bool] | None
Op = Literal["add", "change", "delete"]


# -- values -------------------------------------------------------------------------


def normalise(value: Any) -> Any:
    """Case, outer whitespace and inner runs of whitespace do not matter in text; other values are kept.

    Example:
        >>> normalise("  Lunch   on Friday ")
        'lunch on friday'
    """
    return " ".join(value.casefold().split()) if isinstance(value, str) else value


def value_matches(expected: Any, value: Any) -> bool:
    """Whether a stored ``value`` satisfies ``expected``: a matcher (callable), a number, or text after
    :func:`normalise`.

    Example:
        >>> value_matches("Dana Okafor", " dana  okafor"), value_matches(2.5, 2.5000000001), value_matches(1, "1")
        (True, True, False)
    """
    if callable(expected):
        try:
            return bool(expected(value))
        except Exception:  # a matcher that cannot read the value does not match it
            return False
    if isinstance(expected, float) or isinstance(value, float):
        return (isinstance(value, (int, float)) and isinstance(expected, (int, float))
                and math.isclose(float(value), float(expected), abs_tol=1e-6))
    return bool(normalise(expected) == normalise(value))


def row_matches(where: Where, row: Row) -> bool:
    """Whether ``row`` satisfies ``where``: every field of a mapping (see :func:`value_matches`), a predicate,
    or anything when ``None``."""
    if where is None:
        return True
    if callable(where):
        try:
            return bool(where(row))
        except Exception:
            return False
    return all(k in row and value_matches(v, row[k]) for k, v in where.items())


# -- reading and diffing ----------------------------------------------------------


@dataclass(frozen=True)
class TableSchema:
    """One table: its columns in order, its key columns (empty: keyed by rowid) and its ``CREATE`` text."""

    name: str
    columns: tuple[str, ...]
    key: tuple[str, ...]
    sql: str


@dataclass(frozen=True)
class Snapshot:
    """Every row of every table of one database, by key; read once with :func:`snapshot`."""

    schema: Mapping[str, TableSchema]
    rows: Mapping[str, Mapping[Key, tuple[Any, ...]]]
    schema_sql: tuple[tuple[str, str, str], ...]


def read_schema(query: Query) -> dict[str, TableSchema]:
    """The tables of a database and their keys (needs ``PRAGMA``: read it from the *before* database)."""
    tables: dict[str, TableSchema] = {}
    for name, sql in query("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
                           "ORDER BY name"):
        info = list(query("SELECT name, pk FROM pragma_table_info(?) ORDER BY cid", (name,)))
        columns = tuple(str(r[0]) for r in info)
        key = tuple(str(r[0]) for r in sorted((r for r in info if r[1]), key=lambda r: int(r[1])))
        tables[str(name)] = TableSchema(str(name), columns, key, str(sql))
    return tables


def _schema_sql(query: Query) -> tuple[tuple[str, str, str], ...]:
    found = query("SELECT type, name, COALESCE(sql, '') FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' "
                  "ORDER BY type, name")
    return tuple((str(a), str(b), str(c)) for a, b, c in found)


def snapshot(query: Query, schema: Mapping[str, TableSchema] | None = None,
             tables: Iterable[str] | None = None) -> Snapshot:
    """Read every row of every table through ``query``.

    ``schema`` (from :func:`read_schema` on the *before* database) is needed where ``query`` may not run
    ``PRAGMA`` (an episode database behind an SQLite authorizer); without it the schema is read here.
    ``tables`` limits the reading to some tables; only pass it when the others provably cannot differ from
    the other side of the diff (:func:`diff_snapshots` skips tables a snapshot did not read).
    """
    schema = read_schema(query) if schema is None else schema
    wanted = None if tables is None else set(tables)
    rows: dict[str, dict[Key, tuple[Any, ...]]] = {}
    for name, table in schema.items():
        if wanted is not None and name not in wanted:
            continue
        quoted = '"' + name.replace('"', '""') + '"'
        if table.key:
            positions = [table.columns.index(k) for k in table.key]
            found = query(f"SELECT * FROM {quoted}")  # names come from sqlite_master, not from agents
            rows[name] = {tuple(r[i] for i in positions): tuple(r) for r in found}
        else:
            found = query(f"SELECT rowid, * FROM {quoted}")
            rows[name] = {(r[0],): tuple(r)[1:] for r in found}
    return Snapshot(schema, rows, _schema_sql(query))


@dataclass(frozen=True)
class RowChange:
    """A row that exists before and after with different values."""

    key: Key
    before: Row
    after: Row

    @property
    def columns(self) -> list[str]:
        """The columns whose value changed."""
        return [c for c in self.before if self.before[c] != self.after.get(c)]


@dataclass(frozen=True)
class TableDiff:
    """What changed in one table."""

    table: str
    added: tuple[Row, ...] = ()
    changed: tuple[RowChange, ...] = ()
    deleted: tuple[Row, ...] = ()
    key: tuple[str, ...] = ()

    def key_of(self, row: Row) -> Key:
        """A row's key values (its first two values where the table has no key columns)."""
        return tuple(row.get(k) for k in self.key) if self.key else tuple(row.values())[:2]

    @property
    def empty(self) -> bool:
        """Whether nothing changed."""
        return not (self.added or self.changed or self.deleted)


@dataclass(frozen=True)
class StateDiff:
    """Row-level differences between two states, per table (only tables that changed are listed)."""

    tables: Mapping[str, TableDiff] = field(default_factory=dict)
    schema_changes: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        """Whether nothing changed at all."""
        return not self.schema_changes and all(t.empty for t in self.tables.values())

    def table(self, name: str) -> TableDiff:
        """The changes of one table (empty when it did not change)."""
        return self.tables.get(name) or TableDiff(name)

    def summary(self) -> dict[str, dict[str, int]]:
        """Counts of added, changed and deleted rows per changed table (JSON-ready)."""
        return {name: {"added": len(t.added), "changed": len(t.changed), "deleted": len(t.deleted)}
                for name, t in sorted(self.tables.items()) if not t.empty}


def diff_snapshots(before: Snapshot, after: Snapshot, prefix: str = "") -> StateDiff:
    """The differences between two snapshots of one database; table names get ``prefix`` (e.g. ``"email."``).

    A table that either snapshot did not read (see :func:`snapshot`'s ``tables``) is taken as unchanged.
    """
    if before.schema_sql != after.schema_sql:
        return StateDiff({}, (f"the schema of {prefix.rstrip('.') or 'the database'} changed",))
    tables: dict[str, TableDiff] = {}
    for name, schema in before.schema.items():
        if name not in before.rows or name not in after.rows:
            continue
        old, new = before.rows[name], after.rows[name]
        if old == new:
            continue
        columns = schema.columns

        def row(values: tuple[Any, ...], columns: tuple[str, ...] = columns) -> Row:
            return dict(zip(columns, values))

        added = tuple(row(new[k]) for k in sorted(set(new) - set(old), key=_sort_key))
        deleted = tuple(row(old[k]) for k in sorted(set(old) - set(new), key=_sort_key))
        changes = tuple(RowChange(k, row(old[k]), row(new[k]))
                        for k in sorted(set(old) & set(new), key=_sort_key) if old[k] != new[k])
        tables[prefix + name] = TableDiff(prefix + name, added, changes, deleted, schema.key)
    return StateDiff(tables)


def _sort_key(key: Key) -> tuple[tuple[int, Any], ...]:
    return tuple((0, v) if isinstance(v, (int, float)) else (1, str(v)) for v in key)


def merge(diffs: Iterable[StateDiff]) -> StateDiff:
    """One diff of several databases (their table names must already differ, e.g. by prefix)."""
    tables: dict[str, TableDiff] = {}
    schema_changes: list[str] = []
    for d in diffs:
        tables.update(d.tables)
        schema_changes += d.schema_changes
    return StateDiff(tables, tuple(schema_changes))


def diff_against(bases: Mapping[str, Snapshot], after: Mapping[str, Any],
                 tables: Mapping[str, Iterable[str]] | None = None) -> StateDiff:
    """Diff named snapshots of the *before* databases against named ``sqlite3`` connections of the *after* ones
    (``{"email": conn, ...}``); tables are named ``"<db>.<table>"``.

    The schema comes from the before snapshot, so an *after* connection may deny ``PRAGMA``. ``tables`` (by
    database) limits which tables are read again (see :func:`snapshot`); ``None`` reads them all. A database
    missing from ``after`` counts as a schema change.
    """
    parts = []
    for name, base in bases.items():
        conn = after.get(name)
        if conn is None:
            parts.append(StateDiff({}, (f"the database {name} is missing",)))
            continue
        wanted = None if tables is None else tables.get(name, ())
        now = snapshot(lambda sql, params=(), c=conn: c.execute(sql, params).fetchall(), base.schema, wanted)
        parts.append(diff_snapshots(base, now, prefix=f"{name}."))
    return merge(parts)


def diff_databases(before: Mapping[str, Any], after: Mapping[str, Any]) -> StateDiff:
    """Diff named ``sqlite3`` connections (``{"email": conn, ...}``); tables are named ``"<db>.<table>"``.

    A database missing from ``after`` counts as a schema change.
    """
    bases = {name: snapshot(lambda sql, params=(), c=conn: c.execute(sql, params).fetchall())
             for name, conn in before.items()}
    return diff_against(bases, after)


@dataclass(frozen=True)
class Rule:
    """One kind of change a task asks for (``required``) or tolerates.

    Attributes:
        op: ``"add"``, ``"change"`` or ``"delete"``.
        table: The table's name as the diff names it (``"orders"``, ``"email.mailbox"``).
        where: Which rows: field values or matchers, or a predicate over the row (the new row for ``add``,
            the old row for ``change`` and ``delete``); ``None`` means any row.
        to: For ``change``: the new values the changed columns must have (values or matchers).
        columns: For ``change``: further columns that may change to anything.
        required: The change must happen: one distinct row satisfies the rule (a missing one fails the goal).
        limit: For tolerated rules: at most this many rows (``None``: any number).
        note: Words for reports, e.g. ``"the order is cancelled"``.
    """

    op: Op
    table: str
    where: Where = None
    to: Mapping[str, Any] = field(default_factory=dict)
    columns: frozenset[str] = frozenset()
    required: bool = False
    limit: int | None = None
    note: str = ""

    def describe(self) -> str:
        """The rule in words, for failure reports."""
        if self.note:
            return self.note
        verb = {"add": "a new row in", "change": "a changed row of", "delete": "a deleted row of"}[self.op]
        which = "" if self.where is None or callable(self.where) else f" with {sorted(self.where)}"
        return f"{verb} {self.table}{which}"


def added(table: str, where: Where = None, *, required: bool = False, limit: int | None = None,
          note: str = "") -> Rule:
    """A new row of ``table`` matching ``where`` is asked for (``required``) or tolerated (up to ``limit``)."""
    return Rule("add", table, where, required=required, limit=limit, note=note)


def changed(table: str, where: Where = None, *, to: Mapping[str, Any] | None = None, columns: Iterable[str] = (),
            required: bool = False, limit: int | None = None, note: str = "") -> Rule:
    """A row of ``table`` matching ``where`` gets the values ``to`` and may change ``columns`` besides."""
    return Rule("change", table, where, dict(to or {}), frozenset(columns), required, limit, note)


def deleted(table: str, where: Where = None, *, required: bool = False, limit: int | None = None,
            note: str = "") -> Rule:
    """A row of ``table`` matching ``where`` is to be (or may be) deleted."""
    return Rule("delete", table, where, required=required, limit=limit, note=note)


@dataclass(frozen=True)
class Explanation:
    """How a diff measures up to a task's rules.

    Attributes:
        missing: Required changes that did not happen, in words.
        unexplained: Changes that no rule allows (collateral damage), in words.
    """

    missing: list[str]
    unexplained: list[str]

    @property
    def ok(self) -> bool:
        """Every required change happened and nothing else changed."""
        return not self.missing and not self.unexplained


def _describe_key(table: str, key: Key) -> str:
    return f"{table} row {key}"


def explain(diff: StateDiff, rules: Sequence[Rule]) -> Explanation:
    """Match every change of ``diff`` against ``rules``.

    Required rules are taken first, in order, each by one distinct row that satisfies it (its ``where``,
    and for ``change`` its ``to`` values). Every other added or deleted row needs a tolerated rule with room
    left under its ``limit``; every changed row needs each changed column allowed by some ``change`` rule
    whose ``where`` matches the old row (a tolerated rule with ``to`` only when the new values match).
    """
    missing: list[str] = []
    unexplained = list(diff.schema_changes)
    used_rows: set[tuple[str, str, int]] = set()
    uses: dict[int, int] = {}

    def rows_of(op: Op, table: str) -> Sequence[Any]:
        t = diff.table(table)
        return {"add": t.added, "change": t.changed, "delete": t.deleted}[op]

    for rule in (r for r in rules if r.required):
        found = False
        for index, item in enumerate(rows_of(rule.op, rule.table)):
            mark = (rule.op, rule.table, index)
            if mark in used_rows:
                continue
            if rule.op == "change":
                ok = row_matches(rule.where, item.before) and row_matches(rule.to or None, item.after)
            else:
                ok = row_matches(rule.where, item)
            if ok:
                used_rows.add(mark)
                found = True
                break
        if not found:
            missing.append(rule.describe())

    def take(rule: Rule) -> bool:
        if rule.limit is not None and uses.get(id(rule), 0) >= rule.limit:
            return False
        uses[id(rule)] = uses.get(id(rule), 0) + 1
        return True

    tolerated = [r for r in rules if not r.required]
    for name, table in diff.tables.items():
        for op, items in (("add", table.added), ("delete", table.deleted)):
            for index, item in enumerate(items):
                if (op, name, index) in used_rows:
                    continue
                allowed_by = next((r for r in tolerated if r.op == op and r.table == name
                                   and row_matches(r.where, item) and take(r)), None)
                if allowed_by is None:
                    what = "new" if op == "add" else "deleted"
                    unexplained.append(f"{_describe_key(name, table.key_of(item))}: {what}")
        for change in table.changed:
            allowed: set[str] = set()
            for rule in rules:
                if rule.op != "change" or rule.table != name or not row_matches(rule.where, change.before):
                    continue
                if not rule.required and rule.to and not row_matches(rule.to, change.after):
                    continue
                if not rule.required and not take(rule):
                    continue
                allowed |= set(rule.to) | rule.columns
            extra = [c for c in change.columns if c not in allowed]
            if extra:
                unexplained.append(f"{_describe_key(name, change.key)}: {', '.join(extra)} changed")
    return Explanation(missing, unexplained)


__all__ = [
    "Explanation",
    "Matcher",
    "Query",
    "RowChange",
    "Rule",
    "Snapshot",
    "StateDiff",
    "TableDiff",
    "TableSchema",
    "added",
    "changed",
    "deleted",
    "diff_against",
    "diff_databases",
    "diff_snapshots",
    "explain",
    "merge",
    "normalise",
    "read_schema",
    "row_matches",
    "snapshot",
    "value_matches",
]
