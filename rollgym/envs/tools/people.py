"""The world's people, and what an app's populate function draws from.

Both :mod:`~rollgym.envs.tools.world` (which builds a world) and the app modules (whose ``populate``
functions fill their databases) import this module, so imports inside the package run one way:
world -> apps -> people.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

from rollgym.envs.tools.api import TIME_FORMAT

FIRST_NAMES = [
    "Dana", "Omar", "Priya", "Lukas", "Mei", "Sofia", "Kwame", "Elena", "Tomás", "Aisha", "Jonas", "Hana",
    "Diego", "Nora", "Ravi", "Ingrid", "Yusuf", "Chloe", "Mateo", "Leila", "Felix", "Amara", "Kenji", "Zoe",
    "Ivan", "Lucia", "Samir", "Freya", "Marco", "Aiko", "Hugo", "Noor", "Pavel", "Greta", "Tariq", "Wren",
]
LAST_NAMES = [
    "Okafor", "Lindqvist", "Moreau", "Nakamura", "Silva", "Novak", "Haddad", "Kowalski", "Fischer", "Osei",
    "Romero", "Petrov", "Tanaka", "Brennan", "Iyer", "Costa", "Schmidt", "Ahmed", "Larsen", "Dubois",
]
N_PEOPLE = 24


@dataclass(frozen=True)
class Person:
    """Someone in the world; ``email`` is their id in every app."""

    name: str
    email: str
    phone: str


@dataclass
class WorldGen:
    """What an app's populate function draws from: the seed's RNG, the people, the user, the clock."""

    rng: np.random.Generator
    people: list[Person]
    me: Person
    now: datetime

    def others(self) -> list[Person]:
        """Everyone but the user."""
        return [p for p in self.people if p != self.me]

    def pick(self, items: list[Person], k: int) -> list[Person]:
        """``k`` distinct people drawn at random."""
        idx = self.rng.choice(len(items), size=min(k, len(items)), replace=False)
        return [items[int(i)] for i in idx]

    def when(self, days_back: float, days_ahead: float = 0.0, hours: tuple[int, int] = (8, 19)) -> str:
        """A random minute-rounded timestamp between ``now - days_back`` and ``now + days_ahead``."""
        day = int(self.rng.integers(-int(days_back), int(days_ahead) + 1))
        hour = int(self.rng.integers(hours[0], hours[1]))
        minute = int(self.rng.choice([0, 15, 30, 45]))
        moment = (self.now + timedelta(days=day)).replace(hour=hour, minute=minute)
        if days_ahead <= 0 and moment > self.now:
            moment -= timedelta(days=1)
        return moment.strftime(TIME_FORMAT)
