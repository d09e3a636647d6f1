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
    from rollgym.benchmarks import reliability

    groups = reliability.play_episodes("ToolWorld-v1", OracleAgent(), tasks=6, runs=2)
    assert [len(g.trajectories) for g in groups] == [2] * 6  # one group per task, one rollout per run
    oracle = reliability.summarize(groups, ks=(1, 2))
    assert oracle["episodes"] == 12 and oracle["tgc"] == 1.0 and oracle["sgc"] == 1.0
    assert oracle["pass^k"]["2"] == 1.0
    rows = reliability.outcomes(groups)
    assert {r.run for r in rows} == {0, 1} and all("@w" in r.scenario for r in rows)
    rand = reliability.summarize(reliability.play_episodes("ToolWorld-v1", RandomAgent(0), tasks=6, runs=1,
                                                           max_turns=10), ks=(1,))
    assert rand["tgc"] < 0.5


def test_toolgen_episodes_score_by_template_in_their_world():
    """ToolGen tasks name their world, not a scenario: the scenario is the template in that world."""
    from rollgym.agents.base import OracleAgent
    from rollgym.benchmarks import reliability

    groups = reliability.play_episodes("ToolGen-v0", OracleAgent(), tasks=3, runs=2, driver="async")
    rows = reliability.outcomes(groups)
    assert len(rows) == 6 and all(r.success for r in rows)
    assert all(r.scenario == f"{r.template}@{g.task.meta['world']}" for g in groups for r in reliability.outcomes([g]))
    assert reliability.summarize(groups, ks=(2,))["pass^k"]["2"] == 1.0


def test_playing_left_the_env_package():
    """envs may not import the engine: play_episodes lives in rollgym.benchmarks.reliability now."""
    import rollgym.envs.tools.metrics as metrics

    assert not hasattr(metrics, "play_episodes")
