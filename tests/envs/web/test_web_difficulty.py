"""The web difficulty levels through a real Chromium: each level's tasks take the reference solution more actions."""

from __future__ import annotations

import statistics
from typing import Any

from rollgym.agents import OracleAgent
from rollgym.rollout import run_episode


def test_web_levels_take_the_oracle_more_actions(web_env: Any) -> None:
    ladder = web_env.difficulty
    assert ladder.names == ("lookup", "short-change", "long-change")
    actions = []
    for k in range(len(ladder)):
        turns = []
        for index in range(2):  # two templates of each level
            traj, task = run_episode(web_env, OracleAgent(), seed=0, options={"difficulty": k, "task_index": index})
            assert traj.correct and traj.info["difficulty"] == k, (task.id, traj.info.get("details"))
            assert task.meta["template"] in ladder.levels[k].knobs["templates"]
            turns.append(traj.metrics["num_turns"])
        actions.append(statistics.mean(turns))
    assert actions[0] < actions[1] < actions[2], actions
