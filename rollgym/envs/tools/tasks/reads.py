"""Reads of the hidden base world that task templates sample parameters and state expectations with.

The oracle never calls these: a template's ``solve`` sees only the public parameters and the tools.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np

from rollgym.envs.tools.world import World


def rows(world: World, app: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """Run a read-only query on a base database."""
    return [tuple(r) for r in world.dbs[app].execute(sql, params).fetchall()]


def choose(rng: np.random.Generator, items: list[Any]) -> Any:
    """One item drawn uniformly, or ``None`` from an empty list."""
    return items[int(rng.integers(len(items)))] if items else None


def day_text(day: str) -> str:
    """``2025-03-14`` as ``Friday 2025-03-14``."""
    return f"{datetime.strptime(day[:10], '%Y-%m-%d'):%A} {day[:10]}"


def contact_names(world: World) -> list[str]:
    """Names in the user's address book (the people a prompt may name)."""
    return [r[0] for r in rows(world, "contacts", "SELECT name FROM contacts WHERE owner = ? ORDER BY name",
                               world.me.email)]


def email_of(world: World, name: str) -> str:
    """A person's email address by full name."""
    return next(p.email for p in world.people if p.name == name)
