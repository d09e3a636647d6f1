"""Comparison questions that decompose into independent look-ups: "which of A, B and C was founded first?".

Each question names ``k`` entities of one kind and asks which of them comes first (or last) by a dated
attribute: people by ``birth_year``, organisations and cities by their founding year, works by
``published``, events by ``held``. Answering needs the year of every named entity, and no look-up depends
on another, so an agent can make all of them in one tool round (HyperEyes' "search wider, not longer").

The plan (``task_meta["plan"]``) names the entities, the attribute and the order, never the answer. The
years are distinct, so the answer is unique. ``reference_rounds`` is the number of tool rounds a parallel
reader needs (each round opens the next page of every article whose year it has not found yet: the
deepest page that states a year); ``sequential_rounds`` is what one call per round needs (the sum of
those pages).
"""

from __future__ import annotations

import json
import random
from typing import Any

from rollgym.core.config import check_int
from rollgym.core.errors import ConfigError
from rollgym.core.seeding import content_digest, draw_in_split
from rollgym.core.sources import UnboundedSource
from rollgym.core.task import Task
from rollgym.envs.search.corpus import Corpus, fact_patterns, get_corpus

#: kind -> (dated attribute, plural noun, "first" verb phrase, "last" verb phrase)
COMPARABLE: dict[str, tuple[str, str, str, str]] = {
    "person": ("birth_year", "people", "was born first", "was born last"),
    "organisation": ("founded", "organisations", "was founded first", "was founded most recently"),
    "city": ("city_founded", "cities", "was founded first", "was founded most recently"),
    "work": ("published", "works", "was first published earliest", "was first published most recently"),
    "event": ("held", "events", "took place first", "took place most recently"),
}
ORDERS = ("first", "last")
MIN_ENTITIES, MAX_ENTITIES = 2, 8
PROMPT_SUFFIX = (
    "\n\nThe facts are fictional: look each one up in the encyclopaedia with the search, open and find tools. "
    "The look-ups do not depend on each other, so you may make several tool calls in one reply. When you know "
    "the answer, reply with <answer>...</answer> holding only the name."
)


def fact_page(corpus: Corpus, entity_id: str, attr: str) -> int | None:
    """The first page (1-based) of the entity's own article that states ``attr``, or ``None`` when none does."""
    doc = corpus.by_id[entity_id]
    patterns = fact_patterns(attr, doc.title)
    for number, text in enumerate(doc.pages, start=1):
        if any(p.search(text) for p in patterns):
            return number
    return None


def comparison_key(plan: dict[str, Any]) -> str:
    """The split key of a plan: the set of entities, the attribute and the order (not the listing order)."""
    return json.dumps({"attr": plan["attr"], "order": plan["order"], "entities": sorted(plan["entities"])},
                      sort_keys=True)


def render_comparison(plan: dict[str, Any]) -> str:
    """The question text of a comparison plan."""
    _, noun, first, last = COMPARABLE[plan["kind"]]
    names = [f'"{name}"' for name in plan["entities"]]
    listed = f"{', '.join(names[:-1])} or {names[-1]}"
    return f"Which of these {noun} {first if plan['order'] == 'first' else last}: {listed}?"


def draw_comparison(corpus: Corpus, entities: int, rng: random.Random, max_tries: int = 500) -> dict[str, Any]:
    """A comparison of ``entities`` entities with distinct, findable years: plan, answer id and pages.

    Raises:
        ConfigError: when the world has too few entities of any kind for such a question.
    """
    world = corpus.world
    for _ in range(max_tries):
        kind = rng.choice(sorted(COMPARABLE))
        attr = COMPARABLE[kind][0]
        pool = [e for e in world.by_kind[kind] if attr in world.entity(e).attrs]
        if len(pool) < entities:
            continue
        chosen = rng.sample(pool, entities)
        years = [world.entity(e).attrs[attr] for e in chosen]
        if len(set(years)) != entities:
            continue
        pages = [fact_page(corpus, e, attr) for e in chosen]
        if any(p is None for p in pages):
            continue
        order = rng.choice(ORDERS)
        best = min if order == "first" else max
        answer_id = chosen[years.index(best(years))]
        plan = {"topology": "comparison", "kind": kind, "attr": attr, "order": order,
                "entities": [world.entity(e).name for e in chosen]}
        return {"plan": plan, "answer_id": answer_id, "ids": chosen, "pages": pages}
    raise ConfigError(f"Could not draw a comparison of {entities} entities in a world of {len(world.entities)} "
                      "articles; use fewer entities or a larger world_size.")


class ComparisonTaskSource(UnboundedSource):
    """Comparison questions over the world ``(world_size, world_seed)``, with ``min_entities`` to
    ``max_entities`` entities each (drawn uniformly per task). Splits are disjoint by the compared set."""

    family = "search-comparison"

    def __init__(self, world_size: int, world_seed: int, min_entities: int = 3, max_entities: int = 5,
                 env_id: str = "SearchParallel-v0") -> None:
        check_int("min_entities", min_entities, MIN_ENTITIES, MAX_ENTITIES)
        check_int("max_entities", max_entities, MIN_ENTITIES, MAX_ENTITIES)
        if min_entities > max_entities:
            raise ConfigError(f"min_entities ({min_entities}) must not exceed max_entities ({max_entities}).")
        self.world_size, self.world_seed = world_size, world_seed
        self.min_entities, self.max_entities = min_entities, max_entities
        self.env_id = env_id
        self.corpus = get_corpus(world_size, world_seed)
        self.stream = f"search-comparison/{world_size}/{world_seed}/{min_entities}-{max_entities}"

    def task(self, index: int, split: str = "train") -> Task:
        """Question ``index`` of ``split``, the same every time."""
        world = self.corpus.world

        def candidate(np_rng: Any) -> dict[str, Any]:
            rng = random.Random(int(np_rng.integers(2**63)))
            return draw_comparison(self.corpus, rng.randint(self.min_entities, self.max_entities), rng)

        drawn, _ = draw_in_split(self.stream, split, index, candidate, lambda d: comparison_key(d["plan"]))
        plan, pages = drawn["plan"], drawn["pages"]
        answer_ent = world.entity(drawn["answer_id"])
        evidence = [{"doc_id": e, "subject": e, "fact": plan["attr"], "placement": world.entity(e).placement.get(
            plan["attr"], 0)} for e in drawn["ids"]]
        meta = {
            "topology": "comparison", "hops": 1, "entities": len(plan["entities"]), "documents": len(evidence),
            "dispersion": max(e["placement"] for e in evidence), "distractors": len(plan["entities"]) - 1,
            "constraints": 0, "answer_kind": answer_ent.kind, "plan": plan,
            "reference_rounds": max(pages), "sequential_rounds": sum(pages),
            "world_size": self.world_size, "world_seed": self.world_seed,
        }
        answer = {"text": answer_ent.name, "aliases": list(answer_ent.aliases), "entity_id": answer_ent.id,
                  "evidence": evidence}
        task_id = f"{self.env_id}/{split}/{index}/{content_digest(comparison_key(plan))}"
        return Task(task_id, self.env_id, render_comparison(plan) + PROMPT_SUFFIX, answer, meta)
