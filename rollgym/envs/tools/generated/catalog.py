"""The pool of generated apps, its splits, and lookup of apps, tools and templates by name.

The pool holds 8 variants of each of the 32 domains: 256 apps with distinct schemas
(distinct by :meth:`~rollgym.envs.tools.generated.schema.AppSchema.digest`, a hash of the
structure that leaves the app's name out). Six whole domains are held out: their 48 apps
form ``test_unseen``, and no schema of theirs is the schema of a ``train`` app. The other
208 apps serve ``train``, ``validation`` and ``test``, whose tasks are disjoint by content.

Generation 1 (``ToolGen-v1``) widens the pool to 32 variants of each domain, 1,024 apps: the 256
apps above, unchanged and under the same ids, and 24 more variants of each domain (768 apps, drawn
after them, distinct by digest from every earlier app; variants 16-31 take the names of
:data:`MORE_BRANDS`). The same six domains are held out: 192 apps in ``test_unseen``, 832 seen.
:func:`split_apps` and :func:`pool` take the generation; the lookups by id serve both.

Everything is built lazily and cached per process: a schema costs well under a
millisecond, an app's database and tools a few milliseconds, the first time they are used.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

import numpy as np

from rollgym.core.errors import ConfigError
from rollgym.core.seeding import stable_int
from rollgym.envs.tools.api import ToolSpec
from rollgym.envs.tools.generated.crossapp import CROSS_KINDS
from rollgym.envs.tools.generated.domains import BRANDS, DOMAINS, Domain
from rollgym.envs.tools.generated.kinds import KINDS, app_templates
from rollgym.envs.tools.generated.schema import AppSchema, generate_schema, renamed
from rollgym.envs.tools.generated.store import GenApp, build_app, party_people
from rollgym.envs.tools.generated.templates import GenTemplate
from rollgym.envs.tools.generated.tools import build_tools, tool_names

VARIANTS = 8
"""Apps per domain (generation 0)."""
VARIANTS_BY_GENERATION = (VARIANTS, 32)
"""Apps per domain of each generation (``ToolGen-v0``, ``ToolGen-v1``)."""
GENERATIONS = tuple(range(len(VARIANTS_BY_GENERATION)))
MORE_BRANDS = ("Saffron", "Thistle", "Harrow", "Larch", "Ember", "Fjord", "Heron", "Kestrel", "Linden", "Marigold",
               "Osprey", "Pebble", "Quarry", "Rowan", "Sorrel", "Tamarack")
"""Name prefixes of variants 16-31 of a domain (the first 16 take :data:`~.domains.BRANDS`)."""
N_UNSEEN_DOMAINS = 6
"""Domains held out for ``test_unseen``."""
SEEN_SPLITS = ("train", "validation", "test")
SPLITS = (*SEEN_SPLITS, "test_unseen")


@dataclass(frozen=True)
class Pool:
    """Every generated app's schema by id, and which apps each split draws from."""

    schemas: dict[str, AppSchema]
    seen: tuple[str, ...]
    unseen: tuple[str, ...]
    unseen_domains: tuple[str, ...]


def unseen_domains() -> tuple[str, ...]:
    """The held-out domains: the six whose keys hash lowest (a fixed, content-derived choice)."""
    ranked = sorted(DOMAINS, key=lambda d: hashlib.sha256(f"toolgen-unseen:{d.key}".encode()).hexdigest())
    return tuple(sorted(d.key for d in ranked[:N_UNSEEN_DOMAINS]))


def _variant(domain: Domain, variant: int, attempt: int) -> AppSchema:
    """Variant ``variant`` of ``domain``; from the 17th on, under a name of :data:`MORE_BRANDS`."""
    drawn = generate_schema(domain, variant, attempt)
    if variant < len(BRANDS):
        return drawn
    order = np.random.Generator(np.random.PCG64(stable_int(f"toolgen-more-brands:{domain.key}") % 2**63))
    brand = MORE_BRANDS[int(order.permutation(len(MORE_BRANDS))[(variant - len(BRANDS)) % len(MORE_BRANDS)])]
    return renamed(drawn, f"{brand.lower()}_{domain.key}", f"{brand} {domain.noun}")


@cache
def pool(generation: int = 0) -> Pool:
    """The app pool of a generation (built once per process; generation 1 extends generation 0's)."""
    if generation not in GENERATIONS:
        raise ConfigError(f"Unknown ToolGen generation {generation!r}; use one of {list(GENERATIONS)}.")
    held_out = unseen_domains()
    if generation == 0:
        schemas: dict[str, AppSchema] = {}
        seen: list[str] = []
        unseen: list[str] = []
        first = 0
    else:
        base = pool(generation - 1)
        schemas, seen, unseen = dict(base.schemas), list(base.seen), list(base.unseen)
        first = VARIANTS_BY_GENERATION[generation - 1]
    digests = {s.digest() for s in schemas.values()}
    for domain in DOMAINS:
        for variant in range(first, VARIANTS_BY_GENERATION[generation]):
            for attempt in range(50):
                schema = _variant(domain, variant, attempt)
                if schema.digest() not in digests:
                    break
            else:  # pragma: no cover - the variation space is far larger than 32 per domain
                raise AssertionError(f"no distinct schema for {domain.key} variant {variant}")
            assert schema.app_id not in schemas, schema.app_id
            digests.add(schema.digest())
            schemas[schema.app_id] = schema
            (unseen if domain.key in held_out else seen).append(schema.app_id)
    return Pool(schemas, tuple(seen), tuple(unseen), held_out)


def split_apps(split: str, generation: int = 0) -> tuple[str, ...]:
    """The apps a split of a generation draws its tasks from."""
    if split not in SPLITS:
        raise ConfigError(f"Unknown split {split!r}; use one of {', '.join(SPLITS)}.")
    return pool(generation).unseen if split == "test_unseen" else pool(generation).seen


def schema(app_id: str) -> AppSchema:
    """The schema of one app; a clear error for an unknown id."""
    found = pool().schemas.get(app_id)
    if found is None:  # an app of a later generation (building the wider pool only when one is asked for)
        found = pool(GENERATIONS[-1]).schemas.get(app_id)
    if found is None:
        import difflib

        close = difflib.get_close_matches(app_id, list(pool(GENERATIONS[-1]).schemas), n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else " See rollgym.envs.tools.generated.app_ids()."
        raise ConfigError(f"There is no generated app {app_id!r}.{hint}")
    return found


def app_ids(split: str | None = None, generation: int = 0) -> tuple[str, ...]:
    """Every generated app id of a generation, or those of one split."""
    return tuple(pool(generation).schemas) if split is None else split_apps(split, generation)


@cache
def app(app_id: str) -> GenApp:
    """The built app (base database and tools), cached per process."""
    return build_app(schema(app_id), tools(app_id))


@cache
def tools(app_id: str) -> dict[str, ToolSpec]:
    """The tools of one app by name, cached per process."""
    return build_tools(schema(app_id))


@cache
def templates(app_id: str) -> dict[str, GenTemplate]:
    """The single-app templates of one app by name, cached per process."""
    return dict(app_templates(schema(app_id)))


@cache
def members(app_id: str) -> frozenset[int]:
    """Which people of the shared pool are parties of the app."""
    return party_people(schema(app_id))


@lru_cache(maxsize=4096)
def template(name: str) -> GenTemplate:
    """A template by name: ``<app>:<kind>:<target>`` or ``x:<kind>:<app>+<app>...``."""
    head, _, rest = name.partition(":")
    if head == "x":
        kind, _, chain = rest.partition(":")
        if kind not in CROSS_KINDS:
            raise ConfigError(f"Unknown cross-app template kind {kind!r}.")
        return CROSS_KINDS[kind]([schema(a) for a in chain.split("+")])
    found = templates(head).get(name)
    if found is None:
        raise ConfigError(f"App {head!r} has no template {name!r}.")
    return found


def stats() -> dict[str, Any]:
    """Counts of the generated apps, their tools and templates (from the schemas; no database is built), for
    ``ToolGen-v0`` and (``v1_`` keys) ``ToolGen-v1``.

    Example:
        >>> counts = stats()
        >>> counts["generated_apps"] >= 200 and counts["tools"] >= 2000 and counts["templates"] >= 500
        True
    """
    p = pool()
    n_tools = sum(len(tool_names(s)) for s in p.schemas.values())
    per_kind: dict[str, int] = {k: 0 for k in KINDS}
    for s in p.schemas.values():
        for kind, cls in KINDS.items():
            per_kind[kind] += len(cls.targets(s))
    from rollgym.envs.tools import apps as _hand_apps  # noqa: F401  (registers the hand-written tools)
    from rollgym.envs.tools.api import REGISTRY
    from rollgym.envs.tools.tasks.base import templates_of

    wide = pool(GENERATIONS[-1])
    return {
        "generated_apps": len(p.schemas),
        "seen_apps": len(p.seen),
        "test_unseen_apps": len(p.unseen),
        "domains": len(DOMAINS),
        "unseen_domains": list(p.unseen_domains),
        "tools": n_tools,
        "templates": sum(per_kind.values()),
        "template_kinds": len(KINDS),
        "templates_per_kind": per_kind,
        "cross_app_kinds": len(CROSS_KINDS),
        "handwritten_apps": len({s.app for s in REGISTRY.values() if s.app != "supervisor"}),
        "handwritten_tools": len(REGISTRY),
        "handwritten_templates": len(templates_of(1)),
        "v1_generated_apps": len(wide.schemas),
        "v1_seen_apps": len(wide.seen),
        "v1_test_unseen_apps": len(wide.unseen),
        "v1_tools": sum(len(tool_names(s)) for s in wide.schemas.values()),
        "v1_templates": sum(len(cls.targets(s)) for s in wide.schemas.values() for cls in KINDS.values()),
    }
