"""TGC, SGC, pass^k and per-template breakdowns."""

from __future__ import annotations

import pytest

from rollgym.envs.tools.metrics import (
    EpisodeResult,
    pass_hat_k,
    per_template,
    scenario_goal_completion,
    summarize,
    task_goal_completion,
)


def results(spec):
    """spec: (task, template, scenario, [success per run])."""
    return [EpisodeResult(t, tpl, sc, ok, run) for t, tpl, sc, oks in spec for run, ok in enumerate(oks)]


DATA = results([("t1", "a", "s1", [True, True, False, True]), ("t2", "a", "s1", [True, True, True, True]),
                ("t3", "b", "s2", [False, False, True, False])])


def test_task_goal_completion_is_the_share_of_successful_episodes():
    assert task_goal_completion(DATA) == pytest.approx(8 / 12)
    assert task_goal_completion([]) == 0.0


def test_scenario_goal_completion_needs_every_task_of_a_run():
    # s1 passes in runs 0, 1, 3; s2 only in run 2 -> 4 of 8 (scenario, run) pairs
    assert scenario_goal_completion(DATA) == pytest.approx(4 / 8)


def test_pass_hat_k_matches_the_combinatorial_definition():
    assert pass_hat_k(DATA, 1) == pytest.approx((3 / 4 + 1 + 1 / 4) / 3)
    assert pass_hat_k(DATA, 2) == pytest.approx((3 / 6 + 1 + 0) / 3)
    assert pass_hat_k(DATA, 4) == pytest.approx(1 / 3)
    assert pass_hat_k(DATA, 5) == 0.0
    with pytest.raises(ValueError):
        pass_hat_k(DATA, 0)


def test_per_template_and_summary():
    table = per_template(DATA)
    assert table["a"] == {"tgc": pytest.approx(7 / 8), "episodes": 8}
    summary = summarize(DATA, ks=(1, 2))
    assert summary["episodes"] == 12 and set(summary["pass^k"]) == {"1", "2"}


def test_playing_the_oracle_and_a_random_agent_end_to_end():
    from rollgym.agents.base import OracleAgent, RandomAgent
    from rollgym.envs.tools.metrics import play_episodes

    oracle = summarize(play_episodes("ToolWorld-v1", OracleAgent(), tasks=6, runs=2), ks=(1, 2))
    assert oracle["tgc"] == 1.0 and oracle["sgc"] == 1.0 and oracle["pass^k"]["2"] == 1.0
    rand = summarize(play_episodes("ToolWorld-v1", RandomAgent(0), tasks=6, runs=1, max_turns=10), ks=(1,))
    assert rand["tgc"] < 0.5
