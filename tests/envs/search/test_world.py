"""The generated world and its corpus: deterministic, unique names, facts placed where their placement says."""

from __future__ import annotations

import pytest

from rollgym.core.errors import ConfigError
from rollgym.envs.search.corpus import build_corpus, fact_patterns, get_corpus, subject_patterns
from rollgym.envs.search.world import RELATIONS, build_world
from tests.conftest import require_module

require_module("bm25s")


def test_same_seed_same_world_and_other_seed_other_world():
    a, b, c = build_world(300, 5), build_world(300, 5), build_world(300, 6)
    assert [e.name for e in a.entities.values()] == [e.name for e in b.entities.values()]
    assert [e.rels for e in a.entities.values()] == [e.rels for e in b.entities.values()]
    assert [e.name for e in a.entities.values()] != [e.name for e in c.entities.values()]
    corpus_a, corpus_b = build_corpus(a), build_corpus(b)
    assert [d.text for d in corpus_a.docs] == [d.text for d in corpus_b.docs]


def test_names_and_aliases_are_unique_across_the_world():
    world = build_world(2000, 0)
    seen: set[str] = set()
    for ent in world.entities.values():
        for name in (ent.name, *ent.aliases):
            key = " ".join(name.lower().split())
            assert key not in seen, name
            seen.add(key)
    assert len(world.entities) >= 1990


def test_relations_are_typed_and_functional():
    world = build_world(600, 1)
    for ent in world.entities.values():
        for rel, obj in ent.rels.items():
            subject_kind, object_kind = RELATIONS[rel]
            assert ent.kind == subject_kind and world.entity(obj).kind == object_kind
            assert obj != ent.id


def test_every_fact_is_stated_where_its_placement_says():
    corpus = get_corpus(2000, 0)
    world = corpus.world
    counts = {0: 0, 1: 0, 2: 0}
    for ent in list(world.entities.values())[::7]:
        doc = corpus.by_id[ent.id]
        for rel, obj_id in ent.rels.items():
            obj = world.entity(obj_id)
            level = ent.placement[rel]
            counts[level] += 1
            forward = [p for p in fact_patterns(rel, ent.name) if p.search(doc.text)]
            if level == 2:
                assert not forward, (ent.name, rel)
            else:
                page = next(i for i, text in enumerate(doc.pages, 1) if any(p.search(text) for p in forward))
                assert (page == 1) if level == 0 else (page >= 2), (ent.name, rel, level, page)
                assert forward[0].search(doc.text).group("o") == obj.name
            # the object's article always states it, whatever the placement
            obj_text = corpus.by_id[obj_id].text
            assert any(m.group("s") == ent.name for p in subject_patterns(rel, obj.name) for m in p.finditer(obj_text))
    assert min(counts.values()) > 20  # every placement really occurs


def test_bad_world_size_is_one_clear_sentence():
    with pytest.raises(ConfigError, match="world_size must be an integer"):
        build_world(10)


def test_open_resolves_titles_and_aliases():
    corpus = get_corpus(2000, 0)
    ent = next(e for e in corpus.world.entities.values() if e.kind == "city" and e.aliases)
    assert corpus.resolve(ent.name.upper()).doc_id == ent.id
    assert corpus.resolve(ent.aliases[0]).doc_id == ent.id
    assert corpus.resolve(f"[[{ent.name}]]").doc_id == ent.id
    assert corpus.resolve("no such article") is None
