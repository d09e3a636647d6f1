"""A generated app's SQLite database: its tables from the schema and seeded rows, built once and copied per episode.

A generated app is an :class:`~rollgym.envs.tools.api.App` like each hand-written ToolWorld app
(:func:`app_model`): the ``CREATE TABLE`` statements drawn from its schema, a populate function
and its typed tools.

:func:`build_app` creates the tables of an :class:`~rollgym.envs.tools.generated.schema.AppSchema`
(typed columns, ``NOT NULL``, ``UNIQUE``, ``CHECK`` on enums and references to other
tables) in an in-memory database and fills them from a seed derived from the schema's
digest: parties are drawn from one shared pool of people (so that apps share customers,
which cross-app tasks follow), items from the domain's catalogue, records with every
status and at least two that each action could apply to. An episode never rebuilds
anything: :meth:`GenApp.copy` clones the base database with SQLite's online backup.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

import numpy as np

from rollgym.core.seeding import stable_int
from rollgym.envs.tools.api import App, ToolSpec, base_snapshot, copy_db
from rollgym.envs.tools.generated.domains import PHRASES
from rollgym.envs.tools.generated.schema import AppSchema, Entity, Field
from rollgym.envs.tools.people import FIRST_NAMES, LAST_NAMES
from rollgym.verifiers.statediff import Snapshot

NOW = datetime(2025, 6, 4, 9, 30)
"""The frozen clock of every generated app (a Wednesday)."""
TODAY = NOW.strftime("%Y-%m-%d")
N_PEOPLE = 64


@dataclass(frozen=True)
class Person:
    """Someone in the shared pool of people; the same person may be a party of several apps."""

    name: str
    email: str


@lru_cache(maxsize=1)
def people() -> tuple[Person, ...]:
    """The shared pool: 64 people with distinct names (fixed, not seeded per app)."""
    rng = np.random.Generator(np.random.PCG64(stable_int("toolgen-people") % 2**63))
    picks = rng.choice(len(FIRST_NAMES) * len(LAST_NAMES), size=N_PEOPLE, replace=False)
    out = []
    for pick in sorted(int(p) for p in picks):
        first, last = FIRST_NAMES[pick // len(LAST_NAMES)], LAST_NAMES[pick % len(LAST_NAMES)]
        email = f"{first.lower().replace('á', 'a')}.{last.lower()}@example.com"
        out.append(Person(f"{first} {last}", email))
    return tuple(out)


def day(offset: int) -> str:
    """The date ``offset`` days from today, as ``YYYY-MM-DD``."""
    return (NOW + timedelta(days=int(offset))).strftime("%Y-%m-%d")


def quote(name: str) -> str:
    """An SQL identifier (names come from the schema, never from agents)."""
    return '"' + name.replace('"', '""') + '"'


_SQL_TYPES = {"text": "TEXT", "email": "TEXT", "date": "TEXT", "enum": "TEXT", "int": "INTEGER", "money": "INTEGER",
              "bool": "INTEGER", "ref": "INTEGER"}


def table_sql(schema: AppSchema, entity: Entity) -> str:
    """The ``CREATE TABLE`` statement of one entity."""
    columns = ["id INTEGER PRIMARY KEY"]
    for f in entity.fields:
        parts = [quote(f.name), _SQL_TYPES[f.kind]]
        if f.required:
            parts.append("NOT NULL")
        if f.unique:
            parts.append("UNIQUE")
        if f.kind == "enum":
            allowed = ", ".join("'" + v.replace("'", "''") + "'" for v in f.values)
            parts.append(f"CHECK ({quote(f.name)} IN ({allowed}))")
        if f.kind == "ref":
            parts.append(f"REFERENCES {quote(schema.entity(f.ref).table)}(id)")
        columns.append(" ".join(parts))
    return f"CREATE TABLE {quote(entity.table)} ({', '.join(columns)})"


@dataclass
class GenApp:
    """A built app: its schema, its base database (never handed to a tool) and, once read, its snapshot."""

    schema: AppSchema
    db: sqlite3.Connection
    model: App | None = field(default=None, repr=False)
    """The app as an :class:`~rollgym.envs.tools.api.App` (tables, populate, tools)."""
    _snapshot: list[Snapshot] = field(default_factory=list, repr=False)
    _tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict, repr=False)

    @property
    def app_id(self) -> str:
        """The app's id, e.g. ``maple_bakery``."""
        return self.schema.app_id

    def rows(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        """Run a read-only query on the base database."""
        return [tuple(r) for r in self.db.execute(sql, params).fetchall()]

    def table(self, entity: Entity) -> list[dict[str, Any]]:
        """Every row of an entity's base table as a dict (with ``id``), in id order; cached, so do not mutate."""
        if entity.table not in self._tables:
            names = ["id", *(f.name for f in entity.fields)]
            cols = ", ".join(quote(n) for n in names)
            found = self.rows(f"SELECT {cols} FROM {quote(entity.table)} ORDER BY id")
            self._tables[entity.table] = [dict(zip(names, r)) for r in found]
        return self._tables[entity.table]

    def copy(self) -> sqlite3.Connection:
        """A fresh in-memory copy of the base database, for one episode."""
        return copy_db(self.db)

    def snapshot(self) -> Snapshot:
        """The grader's snapshot of the base database (read once)."""
        if not self._snapshot:
            self._snapshot.append(base_snapshot(self.db))
        return self._snapshot[0]


def _value(f: Field, rng: np.random.Generator) -> Any:
    low, high = f.spread
    if f.kind == "int":
        return int(rng.integers(low, high + 1))
    if f.kind == "money":
        return int(rng.integers(low, high + 1)) * 100 + int(rng.integers(0, 100))
    if f.kind == "date":
        return day(int(rng.integers(low, high + 1)))
    if f.kind == "enum":
        return f.values[int(rng.integers(len(f.values)))]
    if f.kind == "bool":
        return int(rng.random() < 0.6)
    if f.kind == "text":
        if f.name == "phone":
            return f"+1-555-{int(rng.integers(100, 1000))}-{int(rng.integers(1000, 10000))}"
        a, b = (PHRASES[int(i)] for i in rng.choice(len(PHRASES), size=2, replace=False))
        return f"{a}, {b} #{int(rng.integers(10, 100))}"
    raise AssertionError(f.kind)


def _insert(conn: sqlite3.Connection, entity: Entity, row: dict[str, Any]) -> int:
    names = list(row)
    sql = (f"INSERT INTO {quote(entity.table)} ({', '.join(quote(n) for n in names)}) "
           f"VALUES ({', '.join('?' for _ in names)})")
    return int(conn.execute(sql, [row[n] for n in names]).lastrowid or 0)


def _data_rng(schema: AppSchema) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(stable_int(f"toolgen-data:{schema.digest()}") % 2**63))


def _draw_parties(rng: np.random.Generator) -> list[int]:
    """The first draw of an app's data: which people of the pool are its parties (indices, sorted)."""
    return sorted(int(i) for i in rng.choice(N_PEOPLE, size=int(rng.integers(12, 19)), replace=False))


def party_people(schema: AppSchema) -> frozenset[int]:
    """Which people of the shared pool are parties of the app (without building it; cross-app tasks use it)."""
    return frozenset(_draw_parties(_data_rng(schema)))


def _populate(conn: sqlite3.Connection, schema: AppSchema, rng: np.random.Generator) -> None:
    party, item, record, child = schema.party, schema.item, schema.record, schema.child
    pool = people()
    chosen = _draw_parties(rng)
    parties: list[tuple[int, dict[str, Any]]] = []
    for i in chosen:
        row: dict[str, Any] = {"name": pool[i].name, "email": pool[i].email}
        for f in party.fields[2:]:
            row[f.name] = _value(f, rng)
        if "active" in row and len(parties) < 3:
            row["active"] = 1  # the actions that need an active party have someone to act for
        parties.append((_insert(conn, party, row), row))
    items: list[tuple[int, dict[str, Any]]] = []
    if item is not None:
        from rollgym.envs.tools.generated.domains import DOMAINS

        names = next(d for d in DOMAINS if d.key == schema.domain).item_names
        k = min(len(names) - 2, int(rng.integers(7, 11)))
        for i in sorted(int(j) for j in rng.choice(len(names), size=k, replace=False)):
            row = {item.label: names[i]}
            for f in item.fields[1:]:
                row[f.name] = _value(f, rng)
            if schema.counter and len(items) == k - 2 and rng.random() < 0.5:
                row[schema.counter] = 0  # one item sold out, so that the stock precondition can bite
            items.append((_insert(conn, item, row), row))
    statuses = schema.statuses
    stamps = {a.target: a.stamp for a in schema.actions}
    # the last party and the last item hold no record, so that each can be deleted outright
    active = [pid for pid, row in parties[:-1] if row.get("active", 1)]
    codes = sorted(int(c) for c in rng.choice(8000, size=40, replace=False) + 1000)
    order = [int(c) for c in rng.permutation(len(codes))]
    # the first records are fixed patterns: two that the first action may take, one that needs its flag set
    # first, and two of every other status; the rest are random
    patterns = [(statuses[0], 1), (statuses[0], 1), (statuses[0], 0), (statuses[1], None), (statuses[1], None),
                (statuses[2], None), (statuses[2], None), (statuses[3], None), (statuses[3], None)]
    n_records = int(rng.integers(22, 33))
    record_ids = []
    stocked = [iid for iid, row in items[:-1] if not schema.counter or row[schema.counter] >= 3]
    for index in range(n_records):
        status, flag = patterns[index] if index < len(patterns) else (
            statuses[int(rng.choice(4, p=[0.35, 0.3, 0.2, 0.15]))], None)
        easy = index < 3
        owner = active if easy and active else [pid for pid, _ in parties[:-1]]
        row = {"code": f"{schema.code_prefix}-{codes[order[index]]}",
               f"{party.name}_id": owner[int(rng.integers(len(owner)))], "status": status}
        if item is not None:
            choices = stocked if easy and stocked else [iid for iid, _ in items[:-1]]
            row[f"{item.name}_id"] = choices[int(rng.integers(len(choices)))]
        for f in record.fields:
            if f.role in ("code", "status", "stamp") or f.kind == "ref":
                continue
            if f.role == "quantity":
                row[f.name] = 1 if easy else int(rng.integers(1, 4))
            elif f.role == "flag":
                row[f.name] = flag if flag is not None else int(rng.random() < 0.6)
            elif f.required or rng.random() < 0.85:
                row[f.name] = _value(f, rng)
        if status in (statuses[1], statuses[2]) and statuses[1] in stamps:
            row[stamps[statuses[1]]] = day(-int(rng.integers(5, 30)))
        if status in (statuses[2], statuses[3]) and status in stamps:
            row[stamps[status]] = day(-int(rng.integers(0, 5)))
        record_ids.append(_insert(conn, record, row))
    if child is not None:
        for _ in range(int(rng.integers(8, 16))):
            row = {f"{record.name}_id": record_ids[int(rng.integers(len(record_ids)))]}
            for f in child.fields[1:]:
                row[f.name] = _value(f, rng)
            _insert(conn, child, row)


def app_model(schema: AppSchema, tools: Mapping[str, ToolSpec]) -> App:
    """The app in the model every tool env shares: its tables, its seeded rows and ``tools``."""
    tables = ";\n".join(table_sql(schema, entity) for entity in schema.entities)
    return App(schema.app_id, tables, lambda conn, rng: _populate(conn, schema, rng), tools)


def build_app(schema: AppSchema, tools: Mapping[str, ToolSpec] | None = None) -> GenApp:
    """Create and fill the base database of ``schema`` (a few milliseconds); ``tools`` are the app's tools."""
    model = app_model(schema, tools or {})
    return GenApp(schema, model.build(_data_rng(schema)), model)
