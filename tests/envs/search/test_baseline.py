"""Difficulty is real: the scripted retrieve-and-read baseline gets worse as hops and dispersion rise."""

from __future__ import annotations

import gymnasium as gym

import rollgym  # noqa: F401  (registers the ids)
from rollgym.agents.search_baseline import SearchBaselineAgent, best_candidate
from tests.conftest import require_module

require_module("bm25s")

N = 80  # questions per level; 480 in all


def accuracy(**kwargs) -> float:
    env = gym.make("Search-v1", **kwargs)
    agent = SearchBaselineAgent()
    total = 0.0
    for index in range(N):
        obs, info = env.reset(options={"task_index": index})
        agent.reset()
        done = False
        while not done:
            obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
            done = terminated or truncated
        total += reward
    return total / N


def test_accuracy_falls_as_hops_rise():
    by_hops = [accuracy(topology="chain", hops=h, dispersion=None) for h in (1, 2, 3)]
    assert by_hops[0] >= 0.3, by_hops  # the baseline is a real reader, not a strawman
    assert by_hops[0] > by_hops[1] >= by_hops[2], by_hops


def test_accuracy_falls_as_dispersion_rises():
    by_dispersion = [accuracy(topology="chain", hops=1, dispersion=d) for d in (0, 1, 2)]
    assert by_dispersion[0] >= 0.6, by_dispersion
    assert by_dispersion[0] > by_dispersion[1] > by_dispersion[2], by_dispersion


def test_best_candidate_prefers_the_sentence_that_matches_the_question():
    texts = ["Ana Vel visited [[Tam]]. Ana Vel was born in [[Kor]].", "[[Ana Vel]] wrote [[Lore]]."]
    assert best_candidate("Where was Ana Vel born?", texts) == "Kor"
    assert best_candidate("In what year was Ana Vel born?", ["Ana Vel was born in the year 1870."]) == "1870"
    assert best_candidate("Where was Ana Vel born?", ["Nothing here."]) is None
