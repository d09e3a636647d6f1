"""Fictional names from syllable tables, unique across one world.

Every name is drawn from a seeded :class:`random.Random` (a private instance, never the global one); a
:class:`NameRegistry` refuses a name (or alias) that any entity of the world
already uses, so a name identifies one entity and an answer one entity.
"""

from __future__ import annotations

import random

ONSETS = ("b", "br", "c", "d", "dr", "f", "g", "gr", "h", "k", "kr", "l", "m", "n", "p", "r", "s", "sh", "st",
          "t", "th", "tr", "v", "vr", "w", "z", "")
VOWELS = ("a", "e", "i", "o", "u", "ae", "ei", "ou", "y", "ia", "io")
CODAS = ("", "", "", "n", "l", "r", "s", "th", "m", "nd", "rk", "st", "v", "x")
PLACE_ENDINGS = ("holm", "vara", "ford", "mere", "stead", "wick", "gard", "mont", "ora", "heim", "dale", "port",
                 "bury", "ith", "oss")
REGION_ENDINGS = ("ia", "land", "mark", "ora", "avia", "esse", "istan", "onia")
ORG_FORMS = ("{w} Institute", "{w} Press", "{w} Company", "{w} University", "{w} Society", "{w} Foundation",
             "{w} Works", "{w} Guild", "{w} Observatory", "{w} Bank", "{w} Trading House", "{w} Academy")
WORK_ADJECTIVES = ("Silent", "Crimson", "Hollow", "Distant", "Broken", "Quiet", "Amber", "Frozen", "Hidden",
                   "Gilded", "Restless", "Pale", "Burning", "Forgotten", "Salt", "Iron", "Ashen", "Last", "Narrow",
                   "Wandering", "Bitter", "Golden", "Sunken", "Patient")
WORK_NOUNS = ("Harbour", "Lantern", "Orchard", "Tide", "Winter", "Garden", "Archive", "Meridian", "Crossing",
              "Chorus", "Ledger", "Compass", "Threshold", "Season", "Cartographer", "Daughter", "Bell", "River",
              "Mirror", "Furnace", "Letters", "Atlas", "Weaver", "Shore")
WORK_FORMS = ("The {a} {n}", "{a} {n}", "The {n} of {w}", "A {a} {n}", "{w}'s {n}", "Beyond the {a} {n}",
              "The {n}s of {w}")
EVENT_FORMS = ("Treaty of {w}", "{w} Accord", "Siege of {w}", "{w} Exhibition", "{w} Congress", "Great {w} Fair",
               "{w} Uprising", "{w} Conference", "Battle of {w}", "{w} Festival")


def word(rng: random.Random, syllables: int) -> str:
    """A capitalised pseudo-word of ``syllables`` syllables, e.g. ``"Kelvar"``."""
    parts = []
    for _ in range(syllables):
        parts.append(rng.choice(ONSETS) + rng.choice(VOWELS))
    parts.append(rng.choice(CODAS))
    return "".join(parts).capitalize()


class NameRegistry:
    """Hands out names that no other entity (name or alias) of the world uses; compares case-insensitively."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def claim(self, name: str) -> bool:
        """Reserve ``name``; ``False`` when it is taken."""
        key = " ".join(name.lower().split())
        if key in self.used:
            return False
        self.used.add(key)
        return True

    def unique(self, rng: random.Random, make: str, tries: int = 200) -> str:
        """A fresh name of kind ``make`` (person, city, region, organisation, work, event)."""
        for attempt in range(tries):
            name = _draw(rng, make, extra=attempt // 50)
            if self.claim(name):
                return name
        raise RuntimeError(f"could not draw a unique {make} name; the syllable tables are too small")


def _draw(rng: random.Random, kind: str, extra: int) -> str:
    n = 1 + extra
    if kind == "person":
        return f"{word(rng, rng.randint(1, 2) + extra)} {word(rng, rng.randint(1, 2) + n - 1)}"
    if kind == "city":
        return word(rng, rng.randint(1, 2) + extra) + rng.choice(PLACE_ENDINGS)
    if kind == "region":
        return word(rng, 1 + extra) + rng.choice(REGION_ENDINGS)
    if kind == "organisation":
        return rng.choice(ORG_FORMS).format(w=word(rng, rng.randint(2, 3) + extra))
    if kind == "work":
        return rng.choice(WORK_FORMS).format(a=rng.choice(WORK_ADJECTIVES), n=rng.choice(WORK_NOUNS),
                                                  w=word(rng, 2 + extra))
    if kind == "event":
        return rng.choice(EVENT_FORMS).format(w=word(rng, rng.randint(2, 3) + extra))
    raise ValueError(f"unknown entity kind {kind!r}")


def initials(name: str) -> str:
    """``"Zorvan Kelt"`` -> ``"Z. Kelt"``: a short form accepted as an answer alias."""
    parts = name.split()
    return f"{parts[0][0]}. {' '.join(parts[1:])}" if len(parts) > 1 else name


def acronym(name: str) -> str:
    """``"Ostrel Trading House"`` -> ``"OTH"``."""
    return "".join(p[0] for p in name.split() if p[0].isupper())
