"""Question synthesis: each question's answer is unique in the world, re-derived here independently."""

from __future__ import annotations

import random

import pytest

from rollgym.core.errors import ConfigError
from rollgym.envs.search.corpus import get_corpus
from rollgym.envs.search.questions import QuestionSpec, generate_question, plan_key
from rollgym.envs.search.source import DIFFICULTIES, QA_MIX, SearchTaskSource
from tests.conftest import require_module

require_module("bm25s")

SPECS = [*DIFFICULTIES.values(), *(s for s, _ in QA_MIX), QuestionSpec("chain", 4, None),
         QuestionSpec("intersection", 1, 0, 3), QuestionSpec("tree", 2, 1), QuestionSpec("chain", 2, 2)]


def _denote(world, expr):
    """An independent walk over the graph: every value ``expr`` can denote."""
    if "name" in expr:
        return {ent.id for ent in world.entities.values() if ent.name == expr["name"]}
    out = set()
    for subject in _denote(world, expr["of"]):
        ent = world.entities[subject]
        table = ent.rels if "rel" in expr else ent.attrs
        key = expr.get("rel") or expr.get("attr")
        if key in table:
            out.add(table[key])
    return out


def _solutions(world, plan):
    if plan["topology"] == "chain":
        return _denote(world, plan["target"])
    values = [_denote(world, c["value"]) if "rel" in c else None for c in plan["constraints"]]
    found = set()
    for ent in world.entities.values():
        if ent.kind != plan["kind"]:
            continue
        if all((ent.rels.get(c["rel"]) in v) if v is not None else ent.attrs.get(c["attr"]) == c["value"]
               for c, v in zip(plan["constraints"], values)):
            found.add(ent.id)
    return found


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.topology}-{s.hops}-{s.dispersion}-{s.constraints}")
def test_every_answer_is_unique_and_re_derivable(spec):
    corpus = get_corpus(2000, 0)
    world = corpus.world
    rng = random.Random(str(spec))
    for _ in range(15):
        q = generate_question(world, corpus, spec, rng)
        solutions = _solutions(world, q.plan)
        assert len(solutions) == 1, (q.text, solutions)
        (only,) = solutions
        gold = world.entities[only].name if isinstance(only, str) else str(only)
        assert q.answer == gold
        assert gold.lower() not in q.text.lower()
        assert q.hops == spec.hops
        if spec.dispersion is not None:
            assert q.dispersion == spec.dispersion
        assert q.dispersion == max(e["placement"] for e in q.evidence)
        assert q.documents == len({e["doc_id"] for e in q.evidence}) >= 1


def test_plans_name_the_structure_but_never_the_answer():
    source = SearchTaskSource([(QuestionSpec("chain", 2, None), 1.0)], 2000, 0)
    for index in range(20):
        task = source.task(index)
        assert task.answer["text"] not in str(task.meta)
        assert task.answer["text"] not in task.prompt


def test_tasks_are_stable_and_splits_are_disjoint():
    source = SearchTaskSource(list(QA_MIX), 2000, 0)
    assert source.task(3, "train") == source.task(3, "train")
    train = {plan_key(source.task(i, "train").meta["plan"]) for i in range(40)}
    test = {plan_key(source.task(i, "test").meta["plan"]) for i in range(40)}
    assert not train & test
    assert len(train) > 35


def test_bad_specs_are_refused_with_a_clear_sentence():
    with pytest.raises(ConfigError, match="hops for a chain"):
        QuestionSpec("chain", 9)
    with pytest.raises(ConfigError, match="topology must be one of"):
        QuestionSpec("star", 1)
    with pytest.raises(ConfigError, match="dispersion must be"):
        QuestionSpec("chain", 1, 7)


def test_min_distractors_is_honoured():
    corpus = get_corpus(2000, 0)
    q = generate_question(corpus.world, corpus, QuestionSpec("chain", 2, None, min_distractors=5), random.Random(0))
    assert q.distractors >= 5
