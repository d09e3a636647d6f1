"""collect() on the real Countdown and Sudoku envs with their oracle and random agents."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_collector import comparable

import rollgym
from rollgym.agents import OracleAgent, RandomAgent
from rollgym.benchmarks.metrics import summarize
from rollgym.rollout import collect, load_results

REAL_ENVS = ("Countdown-v0", "Sudoku4x4-v0", "Sudoku6x6-v0", "Sudoku-v0")


@pytest.mark.parametrize("env_id", REAL_ENVS)
def test_oracle_solves_and_random_fails_on_real_envs(env_id: str) -> None:
    rollgym.env_info(env_id)  # registered by import rollgym
    solved = collect(OracleAgent(), env_id, n_tasks=3, group_size=2, seed=0)
    assert all(t.status == "completed" and t.reward == 1.0 and t.correct for g in solved for t in g.trajectories)
    assert all(g.task is not None and g.task.env_id == env_id for g in solved)
    assert all(t.messages[-1]["role"] == "assistant" for g in solved for t in g.trajectories)
    random = summarize(collect(RandomAgent(), env_id, n_tasks=3, group_size=2, seed=0))
    assert random.failures == 0 and random.episodes == 6 and random.accuracy.value < 0.5


def test_real_env_runs_are_deterministic_and_resume(tmp_path: Path) -> None:
    out = tmp_path / "sudoku.jsonl"
    first = collect(RandomAgent(), "Sudoku4x4-v0", n_tasks=3, group_size=2, seed=5, out=str(out))
    assert comparable(first) == comparable(collect(RandomAgent(), "Sudoku4x4-v0", n_tasks=3, group_size=2, seed=5))
    lines = out.read_bytes().splitlines(keepends=True)
    out.write_bytes(b"".join(lines[:3]) + lines[3][:10])
    resumed = collect(RandomAgent(), "Sudoku4x4-v0", n_tasks=3, group_size=2, seed=5, out=str(out))
    assert comparable(resumed) == comparable(first)
    assert comparable(load_results(out).groups()) == comparable(first)
