"""Abandoned episodes count in every aggregate: leaving a losing hand unfinished never beats losing it.

The attack (issue 41): a bundle whose agent crashes out of the Kuhn poker hands it expects to lose verified with
a better mean reward than the same play finishing them, because failed rollouts were left out of the mean. Now a
rollout without a result counts as the entry's lowest reward (-2 chips in Kuhn poker, 0 for rewards in [0, 1]).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rollgym.agents import AGENTS, OracleAgent
from rollgym.benchmarks.metrics import counted_reward, summarize
from rollgym.benchmarks.runner import AgentSpec, run_suite
from rollgym.benchmarks.suite import load_suite
from rollgym.leaderboard.verify import verify_bundle


class Quitter(OracleAgent):
    """Plays the oracle, but walks out (raises) of every hand dealt a Jack: the hands it expects to lose."""

    name = "quitter"

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if info.get("card") == "Jack":
            raise RuntimeError("walking away from a bad hand")
        return super().act(observation, info)


def _run(agent: str, folder: Path) -> dict[str, Any]:
    return run_suite(load_suite("quick"), AgentSpec(agent=agent), folder, only=["kuhn-nash"])


def test_a_bundle_that_abandons_its_losing_hands_scores_no_better_than_finishing_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(AGENTS, "quitter", Quitter)
    honest = _run("oracle", tmp_path / "honest")["entries"]["kuhn-nash"]
    quitting = _run("quitter", tmp_path / "quitter")["entries"]["kuhn-nash"]
    assert quitting["failures"] > 0 and honest["failures"] == 0
    report = verify_bundle(tmp_path / "quitter")
    assert report.ok, report.reasons  # the bundle is genuine: the verifier recomputes the same mean
    verified = report.summary["entries"]["kuhn-nash"]
    # every abandoned hand counts as the worst loss, -2 chips, so quitting can only lower the mean
    assert verified["mean_reward"]["value"] <= honest["mean_reward"]["value"]
    assert verified["mean_reward"]["value"] == pytest.approx(quitting["mean_reward"]["value"])
    assert verified["episodes"] == honest["episodes"] == 12


def test_counted_reward_keeps_scored_episodes_and_floors_the_rest() -> None:
    def traj(reward: float | None, status: str, **info: Any) -> SimpleNamespace:
        return SimpleNamespace(reward=reward, status=status, info=info, correct=False)

    assert counted_reward(traj(1.0, "completed")) == 1.0
    assert counted_reward(traj(None, "failed"), -2.0) == -2.0
    assert counted_reward(traj(None, "aborted")) == 0.0
    assert counted_reward(traj(0.0, "truncated"), -1.0) == -1.0  # cut off by a step cap: no verdict
    assert counted_reward(traj(0.0, "truncated", correct=False), -1.0) == 0.0  # the env's own verdict

    group = SimpleNamespace(trajectories=[traj(1.0, "completed"), traj(None, "failed")])
    assert summarize([group]).mean_reward.value == pytest.approx(0.5)
    assert summarize([group], abandoned_reward=-2.0).mean_reward.value == pytest.approx(-0.5)
