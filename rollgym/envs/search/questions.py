"""Question synthesis over the knowledge graph, with a proof of each answer.

A question is a *plan* over the graph, written in JSON so that it can travel in
``info["task_meta"]`` (it names the question's starting entities and relations,
never the answer). Expressions::

    {"name": "Ana Vel"}                     an entity named in the question
    {"rel": "born_in", "of": EXPR}          the object of a functional relation
    {"attr": "birth_year", "of": EXPR}      a dated attribute (a year)

Topologies:

* ``chain``: ``{"topology": "chain", "target": EXPR}``; hops = nesting depth.
* ``intersection``: the one entity of a kind that satisfies every constraint
  ``{"rel": r, "value": {"name": ...}}`` or ``{"attr": a, "value": year}``; hops 1.
* ``tree``: an intersection whose constraint values are themselves chains;
  hops = 1 + the deepest value chain.

Difficulty has two knobs: topology with hops, and *dispersion* (the largest
placement of any fact the proof uses: 0 all in lead paragraphs, 1 some past an
article's first page, 2 some only in another entity's article). The evidence
path lists, per fact, the article that states it; an intersection adds each
constraint value's article, whose list of subjects yields the candidates.
``documents`` counts the distinct evidence articles; ``distractors`` counts the
other entities of the answer's kind linked from them.

:func:`evaluate_plan` computes every answer a plan admits; a question is kept
only when there is exactly one, and that answer is not named in the question.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from typing import Any

from rollgym.core.config import check_choice, check_int
from rollgym.core.errors import ConfigError
from rollgym.envs.search.corpus import Corpus
from rollgym.envs.search.world import ATTRIBUTES, RELATIONS, World

TOPOLOGIES = ("chain", "intersection", "tree")
KIND_WORDS = {"person": "person", "organisation": "organisation", "work": "work", "event": "event",
              "city": "city", "region": "region"}
# the first phrase of each relation has the form "the X of {x}"
NOUN_PHRASES: dict[str, tuple[str, ...]] = {
    "region": ("the region of {x}", "the region in which {x} lies"),
    "born_in": ("the birthplace of {x}", "the city where {x} was born"),
    "employer": ("the employer of {x}", "the organisation that {x} joined"),
    "mentor": ("the mentor of {x}", "the teacher of {x}"),
    "headquarters": ("the seat of {x}", "the city where {x} has its headquarters"),
    "founder": ("the founder of {x}", "the person who founded {x}"),
    "author": ("the author of {x}", "the creator of {x}"),
    "publisher": ("the publisher of {x}", "the organisation that published {x}"),
    "location": ("the venue of {x}", "the city that hosted {x}"),
    "organiser": ("the organiser of {x}", "the organisation that organised {x}"),
}
QUESTIONS: dict[str, tuple[str, ...]] = {
    "region": ("In which region does {x} lie?", "Which region contains {x}?"),
    "born_in": ("In which city was {x} born?", "Where was {x} born?"),
    "employer": ("Which organisation did {x} join?", "Which organisation employed {x}?"),
    "mentor": ("Who was the mentor of {x}?", "Under whom did {x} study?"),
    "headquarters": ("In which city does {x} have its headquarters?", "Where is {x} headquartered?"),
    "founder": ("Who founded {x}?", "Who was the founder of {x}?"),
    "author": ("Who created {x}?", "Who was the author of {x}?"),
    "publisher": ("Which organisation published {x}?", "Who was the publisher of {x}?"),
    "location": ("In which city did {x} take place?", "Where was {x} held?"),
    "organiser": ("Which organisation organised {x}?", "Who organised {x}?"),
    "city_founded": ("In what year was {x} founded?",),
    "birth_year": ("In what year was {x} born?",),
    "joined": ("In what year did {x} join an organisation?",),
    "founded": ("In what year was {x} founded?",),
    "published": ("In what year was {x} first published?",),
    "held": ("In what year did {x} take place?",),
}
CONSTRAINTS: dict[str, str] = {
    "region": "lies in {v}", "born_in": "was born in {v}", "employer": "joined {v}",
    "mentor": "studied under {v}", "headquarters": "is headquartered in {v}", "founder": "was founded by {v}",
    "author": "was written by {v}", "publisher": "was published by {v}", "location": "took place in {v}",
    "organiser": "was organised by {v}", "city_founded": "was founded in {v}", "birth_year": "was born in {v}",
    "founded": "was founded in {v}", "published": "was first published in {v}", "held": "took place in {v}",
}
# year attributes usable as a constraint of an intersection ("joined" is only asked about, with its employer)
CONSTRAINT_ATTRS = ("city_founded", "birth_year", "founded", "published", "held")


@dataclass(frozen=True)
class QuestionSpec:
    """What kind of question to draw.

    Attributes:
        topology: ``"chain"``, ``"intersection"`` or ``"tree"``.
        hops: Relations to follow (chain: 1 to 5; intersection: 1; tree: 2 to 4).
        dispersion: 0, 1 or 2 (see the module docstring), or ``None`` for any.
        constraints: Constraints of an intersection or tree (2 or 3).
        min_distractors: The least number of other entities of the answer's kind linked from the evidence.
    """

    topology: str = "chain"
    hops: int = 1
    dispersion: int | None = 0
    constraints: int = 2
    min_distractors: int = 0

    def __post_init__(self) -> None:
        check_choice("topology", self.topology, TOPOLOGIES)
        low, high = {"chain": (1, 5), "intersection": (1, 1), "tree": (2, 4)}[self.topology]
        check_int(f"hops for a {self.topology} question", self.hops, low, high)
        check_choice("dispersion", self.dispersion, (0, 1, 2), allow_none=True)
        check_choice("constraints", self.constraints, (2, 3))
        check_int("min_distractors", self.min_distractors, 0, 50)


@dataclass
class Question:
    """A generated question with its proof."""

    text: str
    plan: dict[str, Any]
    answer_id: str | None  # the answer entity's id, or None for a year
    answer: str
    aliases: list[str]
    answer_kind: str
    hops: int
    dispersion: int
    evidence: list[dict[str, Any]] = field(default_factory=list)  # [{"doc_id", "subject", "fact"}]
    documents: int = 0
    distractors: int = 0


# -- evaluation ---------------------------------------------------------------
def evaluate_expr(world: World, expr: dict[str, Any], by_name: dict[str, str]) -> list[Any]:
    """Every value an expression can denote (entity ids or years)."""
    if "name" in expr:
        entity_id = by_name.get(expr["name"])
        return [entity_id] if entity_id is not None else []
    values: list[Any] = []
    for subject in evaluate_expr(world, expr["of"], by_name):
        if not isinstance(subject, str):
            continue
        ent = world.entity(subject)
        if "rel" in expr and expr["rel"] in ent.rels:
            values.append(ent.rels[expr["rel"]])
        elif "attr" in expr and expr["attr"] in ent.attrs:
            values.append(ent.attrs[expr["attr"]])
    return values


def evaluate_plan(world: World, plan: dict[str, Any]) -> list[Any]:
    """Every answer the plan admits in ``world``, in a fixed order; a sound question has exactly one."""
    by_name = world.by_name
    if plan["topology"] == "chain":
        return sorted(set(evaluate_expr(world, plan["target"], by_name)), key=str)
    allowed = [set(evaluate_expr(world, c["value"], by_name)) if "rel" in c else None for c in plan["constraints"]]
    candidates: list[Any] = []
    for entity_id in world.by_kind[plan["kind"]]:
        ent = world.entity(entity_id)
        ok = True
        for c, values in zip(plan["constraints"], allowed):
            if values is not None:
                ok = ent.rels.get(c["rel"]) in values
            else:
                ok = ent.attrs.get(c["attr"]) == c["value"]
            if not ok:
                break
        if ok:
            candidates.append(entity_id)
    return candidates


# -- rendering ----------------------------------------------------------------
def _named(world: World, entity_id: str) -> str:
    ent = world.entity(entity_id)
    if ent.kind == "work":
        return f'the {ent.subtype} "{ent.name}"'
    if ent.kind in ("organisation", "event") and not ent.name.startswith(("The ", "A ")):
        return f"the {ent.name}"
    return ent.name


def _phrase(world: World, expr: dict[str, Any], by_name: dict[str, str], rng: random.Random) -> str:
    if "name" in expr:
        return _named(world, by_name[expr["name"]])
    templates = NOUN_PHRASES[expr["rel"]]
    # around a nested phrase only the "the X of ..." form (each relation's first) reads well
    template = rng.choice(templates) if "name" in expr["of"] else templates[0]
    return template.format(x=_phrase(world, expr["of"], by_name, rng))


def render_question(world: World, plan: dict[str, Any], rng: random.Random) -> str:
    """The natural-language question of a plan."""
    by_name = world.by_name
    if plan["topology"] == "chain":
        target = plan["target"]
        fact = target.get("rel") or target["attr"]
        text = rng.choice(QUESTIONS[fact]).format(x=_phrase(world, target["of"], by_name, rng))
    else:
        parts = []
        for c in plan["constraints"]:
            if "rel" in c:
                parts.append(CONSTRAINTS[c["rel"]].format(v=_phrase(world, c["value"], by_name, rng)))
            else:
                parts.append(CONSTRAINTS[c["attr"]].format(v=c["value"]))
        text = f"Which {KIND_WORDS[plan['kind']]} {', '.join(parts[:-1])} and {parts[-1]}?"
    return text[0].upper() + text[1:]


# -- generation ----------------------------------------------------------------
def _facts_of_chain(world: World, expr: dict[str, Any], by_name: dict[str, str]) -> list[tuple[str, str]]:
    """``(subject id, fact)`` pairs the chain's proof reads, innermost first."""
    if "name" in expr:
        return []
    inner = _facts_of_chain(world, expr["of"], by_name)
    subject = evaluate_expr(world, expr["of"], by_name)[0]
    return [*inner, (subject, expr.get("rel") or expr["attr"])]


def _evidence(world: World, facts: list[tuple[str, str]]) -> list[dict[str, Any]]:
    out = []
    for subject_id, fact in facts:
        ent = world.entity(subject_id)
        level = ent.placement.get(fact, 0)
        where = ent.rels[fact] if level == 2 and fact in ent.rels else subject_id
        if fact == "joined" and level == 2:
            where = ent.rels["employer"]
        out.append({"doc_id": where, "subject": subject_id, "fact": fact, "placement": level})
    return out


_LINK = re.compile(r"\[\[([^\]]+)\]\]")


def _count_distractors(corpus: Corpus, evidence: list[dict[str, Any]], answer_id: str | None, kind: str) -> int:
    others: set[str] = set()
    for doc_id in {e["doc_id"] for e in evidence}:
        for title in _LINK.findall(corpus.by_id[doc_id].text):
            linked = corpus.by_title.get(title.lower())
            if linked and linked != answer_id and corpus.by_id[linked].kind == kind:
                others.add(linked)
    return len(others)


def _chain_plan(world: World, hops: int, rng: random.Random) -> tuple[dict[str, Any], list[str]] | None:
    kinds = [k for k in ("person", "organisation", "work", "event", "city") if world.by_kind[k]]
    current = rng.choice(world.by_kind[rng.choice(kinds)])
    expr: dict[str, Any] = {"name": world.entity(current).name}
    visited = [current]
    for step in range(hops):
        ent = world.entity(current)
        options = sorted(r for r, o in ent.rels.items() if o not in visited)
        if step == hops - 1 and (not options or rng.random() < 0.35):  # a year answer about a third of the time
            options = sorted(ent.attrs)
        if not options:
            return None
        fact = rng.choice(options)
        if fact in ent.rels:
            expr = {"rel": fact, "of": expr}
            current = ent.rels[fact]
            visited.append(current)
        else:
            expr = {"attr": fact, "of": expr}
    return {"topology": "chain", "target": expr}, visited


def _backward_chain(world: World, target_id: str, depth: int, rng: random.Random,
                    avoid: set[str]) -> tuple[dict[str, Any], list[str]] | None:
    """An expression of ``depth`` relations that denotes ``target_id``, built by walking inverse edges."""
    expr_ids = [target_id]
    path: list[str] = []
    current = target_id
    for _ in range(depth):
        options = [(rel, s) for rel in RELATIONS for s in world.subjects(rel, current) if s not in avoid
                   and s not in expr_ids]
        if not options:
            return None
        rel, subject = rng.choice(options)
        path.append(rel)
        expr_ids.append(subject)
        current = subject
    expr: dict[str, Any] = {"name": world.entity(current).name}
    for rel in reversed(path):
        expr = {"rel": rel, "of": expr}
    return expr, expr_ids


def _intersection_plan(world: World, spec: QuestionSpec, rng: random.Random) -> tuple[dict[str, Any], str] | None:
    kind = rng.choice(("person", "person", "organisation", "work", "event", "city"))
    answer_id = rng.choice(world.by_kind[kind])
    ent = world.entity(answer_id)
    facts = sorted(ent.rels) + [a for a in sorted(ent.attrs) if a in CONSTRAINT_ATTRS]
    if len(facts) < spec.constraints:
        return None
    chosen = rng.sample(facts, spec.constraints)
    depth = spec.hops - 1
    constraints: list[dict[str, Any]] = []
    avoid = {answer_id}
    deep_done = False
    for fact in chosen:
        if fact in ent.rels:
            value_id = ent.rels[fact]
            value: dict[str, Any] = {"name": world.entity(value_id).name}
            # a tree: at least one constraint value is a chain of the full depth, others may be shorter
            d = depth if not deep_done else rng.randint(0, depth)
            if d > 0:
                built = _backward_chain(world, value_id, d, rng, avoid)
                if built is None:
                    if not deep_done:
                        return None
                else:
                    value, ids = built
                    avoid.update(ids)
                    deep_done = deep_done or d == depth
            constraints.append({"rel": fact, "value": value})
        else:
            constraints.append({"attr": fact, "value": ent.attrs[fact]})
    if depth > 0 and not deep_done:
        return None
    topology = "tree" if depth > 0 else "intersection"
    return {"topology": topology, "kind": kind, "constraints": constraints}, answer_id


def _intersection_facts(world: World, plan: dict[str, Any], answer_id: str,
                        by_name: dict[str, str]) -> list[tuple[str, str]]:
    facts: list[tuple[str, str]] = []
    for c in plan["constraints"]:
        if "rel" in c:
            facts += _facts_of_chain(world, c["value"], by_name)
            facts.append((answer_id, c["rel"]))
        else:
            facts.append((answer_id, c["attr"]))
    return facts


def _constraint_lists(world: World, plan: dict[str, Any], evidence: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Intersections are solved from the constraint values' articles, which list every subject pointing at them."""
    by_name = world.by_name
    out = list(evidence)
    for c in plan.get("constraints", []):
        if "rel" in c:
            value_id = evaluate_expr(world, c["value"], by_name)[0]
            out.append({"doc_id": value_id, "subject": value_id, "fact": f"subjects of {c['rel']}", "placement": 0})
    return out


def plan_depth(plan: dict[str, Any]) -> int:
    """The hops of a plan (see the module docstring)."""
    def depth(expr: dict[str, Any]) -> int:
        return 0 if "name" in expr else 1 + depth(expr["of"])

    if plan["topology"] == "chain":
        return depth(plan["target"])
    return 1 + max((depth(c["value"]) for c in plan["constraints"] if "rel" in c), default=0)


def answer_aliases(world: World, answer: Any) -> tuple[str, list[str]]:
    """The gold answer text and the other texts accepted for it."""
    if isinstance(answer, int):
        return str(answer), []
    ent = world.entity(answer)
    return ent.name, list(ent.aliases)


def generate_question(world: World, corpus: Corpus, spec: QuestionSpec, rng: random.Random,
                      max_tries: int = 2000) -> Question:
    """Draw a question that fits ``spec`` and has exactly one answer in ``world``.

    Raises:
        ConfigError: when no such question turns up in ``max_tries`` draws (the world is too small for the spec).
    """
    by_name = world.by_name
    for _ in range(max_tries):
        if spec.topology == "chain":
            drawn = _chain_plan(world, spec.hops, rng)
            if drawn is None:
                continue
            plan, _visited = drawn
            facts = _facts_of_chain(world, plan["target"], by_name)
        else:
            made = _intersection_plan(world, spec, rng)
            if made is None:
                continue
            plan, answer_id = made
            facts = _intersection_facts(world, plan, answer_id, by_name)
        answers = evaluate_plan(world, plan)
        if len(answers) != 1:
            continue
        evidence = _constraint_lists(world, plan, _evidence(world, facts))
        dispersion = max(e["placement"] for e in evidence)
        if spec.dispersion is not None and dispersion != spec.dispersion:
            continue
        answer = answers[0]
        text = render_question(world, plan, rng)
        gold, aliases = answer_aliases(world, answer)
        if any(re.search(rf"\b{re.escape(a.lower())}\b", text.lower()) for a in (gold, *aliases)):
            continue
        gold_id = answer if isinstance(answer, str) else None
        kind = world.entity(answer).kind if gold_id else "year"
        distractors = _count_distractors(corpus, evidence, gold_id, kind) if gold_id else 0
        if distractors < spec.min_distractors:
            continue
        return Question(text, plan, gold_id, gold, aliases, kind, plan_depth(plan), dispersion, evidence,
                        len({e["doc_id"] for e in evidence}), distractors)
    raise ConfigError(f"Could not draw a question for {spec} in a world of {len(world.entities)} articles; "
                      "relax the spec (fewer hops, dispersion=None) or use a larger world_size.")


def plan_key(plan: dict[str, Any]) -> str:
    """A canonical string of a plan, used to put questions into splits."""
    return json.dumps(plan, sort_keys=True)


def attribute_subject_kind(fact: str) -> str:
    """The kind of entity a fact (relation or attribute) is about."""
    return RELATIONS[fact][0] if fact in RELATIONS else ATTRIBUTES[fact]
