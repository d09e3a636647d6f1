"""The simulated world: seeded people and one SQLite database per hand-written app.

The six apps are :class:`~rollgym.envs.tools.api.App` s, the model ToolGen's generated apps share:
each app module holds the data (``SCHEMA``, its tables) and the code (``populate`` and its
``@tool`` operations) that :data:`APPS` puts together.

:func:`build_world` generates everything from a seed (people, messages,
events, balances, orders) into in-memory databases; :func:`base_world` builds
each seed once per process and caches it. An episode never regenerates
anything: :meth:`World.copy` clones the cached databases with SQLite's online
backup into fresh in-memory databases, which takes well under a millisecond per
app. The base world is the checker's "before" state and is never handed to a
tool.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

import numpy as np

from rollgym.envs.tools.api import App, copy_db, tools_of
from rollgym.envs.tools.apps import calendar, contacts, email, notes, payments, shopping
from rollgym.envs.tools.people import FIRST_NAMES, LAST_NAMES, N_PEOPLE, Person, WorldGen

__all__ = ["APPS", "APP_NAMES", "FIRST_NAMES", "LAST_NAMES", "N_PEOPLE", "Person", "World", "WorldGen", "base_world",
           "build_world"]

APPS = tuple(App(module.__name__.rpartition(".")[2], module.SCHEMA, module.populate,
                 tools_of(module.__name__.rpartition(".")[2]))
             for module in (contacts, email, calendar, payments, notes, shopping))
"""The six apps, in the order their databases are built (each draws its rows from its own seed stream)."""
APP_NAMES = tuple(app.name for app in APPS)


@dataclass
class World:
    """A generated world: its seed, frozen clock, people and the base database of every app."""

    seed: int
    now: datetime
    people: list[Person]
    me: Person
    dbs: dict[str, sqlite3.Connection]
    _tables: dict[tuple[str, str], dict[int, tuple[Any, ...]]] = field(default_factory=dict, repr=False)
    snapshots: dict[str, Any] = field(default_factory=dict, repr=False)
    """Per app, the grader's snapshot of the base database (see :func:`~rollgym.envs.tools.checker.world_snapshots`)."""

    def copy(self) -> dict[str, sqlite3.Connection]:
        """Fresh in-memory copies of every app database, for one episode."""
        return {app: copy_db(base) for app, base in self.dbs.items()}

    def table(self, app: str, table: str) -> dict[int, tuple[Any, ...]]:
        """Every row of a base table by id (cached: the base world never changes)."""
        key = (app, table)
        if key not in self._tables:
            self._tables[key] = {int(r[0]): tuple(r) for r in self.dbs[app].execute(f'SELECT * FROM "{table}"')}
        return self._tables[key]

    def columns(self, app: str, table: str) -> list[str]:
        """The column names of a base table."""
        return [d[0] for d in self.dbs[app].execute(f'SELECT * FROM "{table}" LIMIT 0').description]

    def person(self, email: str) -> Person:
        """The person with this email address."""
        return next(p for p in self.people if p.email == email)


def _people(rng: np.random.Generator) -> list[Person]:
    firsts = rng.choice(len(FIRST_NAMES), size=N_PEOPLE, replace=False)
    lasts = rng.choice(len(LAST_NAMES), size=N_PEOPLE, replace=True)
    people = []
    for f, la in zip(firsts, lasts):
        first, last = FIRST_NAMES[int(f)], LAST_NAMES[int(la)]
        mail = f"{first.lower().replace('á', 'a')}.{last.lower()}@example.com"
        phone = f"+1-555-{int(rng.integers(100, 1000))}-{int(rng.integers(1000, 10000))}"
        people.append(Person(f"{first} {last}", mail, phone))
    return people


def build_world(seed: int) -> World:
    """Generate the world of ``seed`` from scratch (tens of milliseconds); prefer :func:`base_world`."""
    root = np.random.SeedSequence(entropy=[int(seed), 0x70015])
    rng = np.random.Generator(np.random.PCG64(root))
    people = _people(rng)
    start = datetime(2025, 1, 6, 9, 0) + timedelta(days=int(rng.integers(0, 300)))
    now = start.replace(hour=int(rng.integers(8, 11)), minute=0)
    dbs = {}
    for index, app in enumerate(APPS):
        app_rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(seed), 0x70015, index + 1])))
        dbs[app.name] = app.build(WorldGen(app_rng, people, people[0], now))
    return World(seed, now, people, people[0], dbs)


@lru_cache(maxsize=16)
def base_world(seed: int) -> World:
    """The cached world of ``seed``, built once per process; never mutate its databases."""
    return build_world(seed)
