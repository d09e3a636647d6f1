"""The seeded knowledge graph behind the search corpus.

Six kinds of fictional entities (people, cities, regions, organisations, works,
events) with *functional* typed relations (each entity has at most one value per
relation, so a chain of relations names exactly one entity) and dated
attributes (years). Every fact also has a *placement* that says where the
corpus states it, which is what the question generator's dispersion knob reads:

* ``0`` (lead): in the subject's infobox and opening paragraph;
* ``1`` (body): only deep in the subject's article, past its first page;
* ``2`` (remote): not in the subject's article at all, only in the article of
  the relation's object (e.g. a city's list of people born there).

Every relation fact is stated in the object's article as well, so the corpus
always proves every fact. Worlds are cached per ``(size, seed)`` per process.
"""

from __future__ import annotations

import bisect
import random
from dataclasses import dataclass, field
from functools import lru_cache

from rollgym.core.errors import ConfigError
from rollgym.core.seeding import stable_int
from rollgym.envs.search.names import NameRegistry, acronym, initials

KINDS = ("region", "city", "person", "organisation", "work", "event")
# relation -> (subject kind, object kind)
RELATIONS: dict[str, tuple[str, str]] = {
    "region": ("city", "region"),
    "born_in": ("person", "city"),
    "employer": ("person", "organisation"),
    "mentor": ("person", "person"),
    "headquarters": ("organisation", "city"),
    "founder": ("organisation", "person"),
    "author": ("work", "person"),
    "publisher": ("work", "organisation"),
    "location": ("event", "city"),
    "organiser": ("event", "organisation"),
}
# attribute -> subject kind; all are years
ATTRIBUTES: dict[str, str] = {
    "city_founded": "city",
    "birth_year": "person",
    "joined": "person",
    "founded": "organisation",
    "published": "work",
    "held": "event",
}
SUBTYPES: dict[str, tuple[str, ...]] = {
    "region": ("province", "duchy", "coastal region", "highland region"),
    "city": ("port city", "market town", "river city", "mountain town", "capital city"),
    "person": ("physicist", "painter", "novelist", "engineer", "historian", "composer", "botanist", "architect",
               "cartographer", "poet", "merchant", "astronomer"),
    "organisation": ("institution",),
    "work": ("novel", "treatise", "poem cycle", "atlas", "memoir", "play", "symphony", "field guide"),
    "event": ("event",),
}
SHARES = {"region": 0.02, "city": 0.12, "person": 0.42, "organisation": 0.14, "work": 0.18, "event": 0.12}
PLACEMENT_WEIGHTS = (0.5, 0.3, 0.2)
DEFAULT_SIZE = 2000
MIN_SIZE = 200
MAX_SIZE = 200_000


@dataclass
class Entity:
    """One node of the graph; its article has the same id.

    Attributes:
        id: Document id, e.g. ``"d00042"``.
        kind: One of :data:`KINDS`.
        subtype: A finer description used in prose, e.g. ``"novelist"``.
        name: The unique display name and article title.
        aliases: Other unique names accepted as answers.
        attrs: Dated attributes (years), see :data:`ATTRIBUTES`.
        rels: Functional relations, relation name -> object entity id.
        placement: Fact name (relation or attribute) -> 0 lead, 1 body, 2 remote.
        pronoun: ``"he"``, ``"she"`` or ``"it"``, for prose.
    """

    id: str
    kind: str
    subtype: str
    name: str
    aliases: tuple[str, ...] = ()
    attrs: dict[str, int] = field(default_factory=dict)
    rels: dict[str, str] = field(default_factory=dict)
    placement: dict[str, int] = field(default_factory=dict)
    pronoun: str = "it"


@dataclass
class World:
    """A knowledge graph: entities by id, ids by kind, and the inverse edges."""

    size: int
    seed: int
    entities: dict[str, Entity]
    by_kind: dict[str, list[str]]
    inverse: dict[tuple[str, str], list[str]]  # (relation, object id) -> subject ids, in id order
    by_name: dict[str, str] = field(default_factory=dict)  # display name -> id

    def __post_init__(self) -> None:
        if not self.by_name:
            self.by_name = {ent.name: ent.id for ent in self.entities.values()}

    def entity(self, entity_id: str) -> Entity:
        """The entity with this id."""
        return self.entities[entity_id]

    def subjects(self, relation: str, object_id: str) -> list[str]:
        """Ids of every entity whose ``relation`` points at ``object_id``."""
        return self.inverse.get((relation, object_id), [])


def _pick_near(rng: random.Random, years: list[int], ids: list[str], lo: int, hi: int) -> str | None:
    """A random id whose year lies in ``[lo, hi]`` (``years`` sorted), or ``None``."""
    a, b = bisect.bisect_left(years, lo), bisect.bisect_right(years, hi)
    if a >= b:
        return None
    return ids[rng.randrange(a, b)]


def build_world(size: int = DEFAULT_SIZE, seed: int = 0) -> World:
    """Generate a world of about ``size`` entities (one article each), deterministically from ``seed``.

    Example:
        >>> w = build_world(300, seed=1)
        >>> len(w.entities) >= 290
        True
    """
    if not isinstance(size, int) or not MIN_SIZE <= size <= MAX_SIZE:
        raise ConfigError(f"world_size must be an integer between {MIN_SIZE} and {MAX_SIZE}, got {size!r}.")
    rng = random.Random(stable_int(f"search-world/{seed}"))  # a private stream, not the global one
    names = NameRegistry()
    entities: dict[str, Entity] = {}
    by_kind: dict[str, list[str]] = {k: [] for k in KINDS}
    counts = {k: max(3, round(size * SHARES[k])) for k in KINDS}

    def new(kind: str) -> Entity:
        eid = f"d{len(entities):05d}"
        pronoun = "it"
        if kind == "person":
            pronoun = "she" if rng.random() < 0.5 else "he"
        ent = Entity(eid, kind, rng.choice(SUBTYPES[kind]), names.unique(rng, kind), pronoun=pronoun)
        entities[eid] = ent
        by_kind[kind].append(eid)
        return ent

    def place(ent: Entity, fact: str, remote_ok: bool = True) -> None:
        weights = PLACEMENT_WEIGHTS if remote_ok else PLACEMENT_WEIGHTS[:2]
        ent.placement[fact] = rng.choices(range(len(weights)), weights)[0]

    def link(ent: Entity, rel: str, obj: str | None) -> bool:
        """Relate ``ent`` to ``obj`` by ``rel`` and place the fact; ``False`` (nothing done) without ``obj``."""
        if obj is None:
            return False
        ent.rels[rel] = obj
        place(ent, rel)
        return True

    for _ in range(counts["region"]):
        new("region")
    for _ in range(counts["city"]):
        city = new("city")
        city.rels["region"] = rng.choice(by_kind["region"])
        city.attrs["city_founded"] = rng.randrange(1000, 1750)
        place(city, "region")
        place(city, "city_founded", remote_ok=False)
    # people sorted by birth year so that mentors, founders and authors fit their dates
    births = sorted(rng.randrange(1700, 1960) for _ in range(counts["person"]))
    for year in births:
        person = new("person")
        person.attrs["birth_year"] = year
        person.rels["born_in"] = rng.choice(by_kind["city"])
        place(person, "born_in")
        place(person, "birth_year", remote_ok=False)
    people = by_kind["person"]
    for pid in people:
        person = entities[pid]
        link(person, "mentor",
             _pick_near(rng, births, people, person.attrs["birth_year"] - 50, person.attrs["birth_year"] - 15))
    founded = sorted(rng.randrange(1740, 1990) for _ in range(counts["organisation"]))
    for year in founded:
        org = new("organisation")
        org.subtype = org.name.split()[-1].lower()
        org.attrs["founded"] = year
        org.rels["headquarters"] = rng.choice(by_kind["city"])
        link(org, "founder", _pick_near(rng, births, people, year - 70, year - 20))
        place(org, "headquarters")
        place(org, "founded", remote_ok=False)
    orgs = by_kind["organisation"]
    for pid in people:
        person = entities[pid]
        start = person.attrs["birth_year"] + rng.randrange(20, 40)
        if link(person, "employer", _pick_near(rng, founded, orgs, 1700, start)):
            person.attrs["joined"] = start
            person.placement["joined"] = person.placement["employer"]
    for _ in range(counts["work"]):
        work = new("work")
        author = entities[rng.choice(people)]
        year = author.attrs["birth_year"] + rng.randrange(22, 70)
        work.attrs["published"] = year
        work.rels["author"] = author.id
        link(work, "publisher", _pick_near(rng, founded, orgs, 1700, year))
        place(work, "author")
        place(work, "published", remote_ok=False)
    for _ in range(counts["event"]):
        event = new("event")
        event.subtype = event.name.replace("Treaty of", "Treaty").replace("Battle of", "Battle").split()[-1].lower()
        year = rng.randrange(1760, 2000)
        event.attrs["held"] = year
        event.rels["location"] = rng.choice(by_kind["city"])
        link(event, "organiser", _pick_near(rng, founded, orgs, 1700, year))
        place(event, "location")
        place(event, "held", remote_ok=False)
    for ent in entities.values():
        _add_aliases(rng, ent, names)
    inverse: dict[tuple[str, str], list[str]] = {}
    for ent in entities.values():
        for rel, obj in ent.rels.items():
            inverse.setdefault((rel, obj), []).append(ent.id)
    return World(size, seed, entities, by_kind, inverse)


def _add_aliases(rng: random.Random, ent: Entity, names: NameRegistry) -> None:
    candidates: list[str] = []
    if ent.kind == "person":
        candidates.append(initials(ent.name))
    elif ent.kind == "organisation" and len(ent.name.split()) >= 2:
        candidates.append(acronym(ent.name))
    elif ent.kind == "city" and rng.random() < 0.3:
        candidates.append(names.unique(rng, "city"))  # a former name, rendered in the article
        ent.aliases = (candidates[0],)
        return
    ent.aliases = tuple(c for c in candidates if names.claim(c))


@lru_cache(maxsize=4)
def get_world(size: int = DEFAULT_SIZE, seed: int = 0) -> World:
    """The cached world for ``(size, seed)``: built once per process."""
    return build_world(size, seed)
