"""Suite summaries: per-entry and per-difficulty metrics with 95% intervals, and Elo per game ladder.

Everything here is a pure function of the rollout groups, so a verifier that
replays a bundle recomputes the same summary, to the last digit, from the
transcripts alone (the claimed summary is never trusted).

Per entry: accuracy (Wilson interval), mean reward, pass@k, best-of-k and pass^k
for k = 1 .. group size (bootstrap intervals over tasks, seeded), and a row per
difficulty bucket; a rollout that ended without a result (failed, aborted, or
cut off before the env's verdict) counts as the entry's lowest reward
(:func:`abandoned_reward`). Per ladder (game entries with a ``rating``): the agent's Elo
fitted by :func:`~rollgym.benchmarks.ratings.fit_elo` from its games against the
anchored opponents; a win scores 1, a draw 0.5, a loss or a failed rollout 0.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from rollgym.benchmarks.metrics import (
    bootstrap_interval,
    counted_reward,
    expected_best_of_k,
    pass_hat_k,
    summarize,
    unit_interval,
    wilson_interval,
)
from rollgym.benchmarks.suite import SuiteEntry
from rollgym.core.estimate import Estimate
from rollgym.core.registration import env_info
from rollgym.rollout.types import RolloutGroup

#: The name the rated agent has in its ladder's games.
AGENT_PLAYER = "agent"
N_RESAMPLES = 2000


def _estimate(values: Sequence[float], seed: int = 0, unit: bool = False) -> dict[str, float]:
    if not values:
        return {"value": math.nan, "low": math.nan, "high": math.nan}
    interval = unit_interval if unit else bootstrap_interval
    low, high = interval(values, 0.95, N_RESAMPLES, seed)
    method = "bootstrap+wilson" if unit else "bootstrap"
    return Estimate(float(np.mean(values)), low, high, len(values), method).to_dict()


def _scored_rewards(group: RolloutGroup, abandoned_reward: float = 0.0) -> list[float]:
    """Rewards of a group with an abandoned rollout counted as ``abandoned_reward`` (it never helps best-of-k)."""
    return [counted_reward(t, abandoned_reward) for t in group.trajectories]


def abandoned_reward(entry: SuiteEntry, groups: list[RolloutGroup]) -> float:
    """What a rollout without a result counts in ``entry``'s aggregates: a loss, never better than finishing.

    The env's lowest reward (its class's ``lowest_reward(kwargs)``, 0 where it declares none: rewards in [0, 1]),
    or the lowest reward any of the entry's rollouts got, whichever is lower.
    """
    lowest = 0.0
    info = env_info(entry.env_id)
    module, _, name = info.entry_point.partition(":")
    declared = getattr(getattr(importlib.import_module(module), name, None), "lowest_reward", None)
    if callable(declared):
        lowest = float(declared({**info.kwargs, **entry.env_kwargs}))
    seen = [float(t.reward) for g in groups for t in g.trajectories if t.reward is not None]
    return min([lowest, *seen])


def summarize_groups(groups: list[RolloutGroup], abandoned: float = 0.0) -> dict[str, Any]:
    """Accuracy, mean reward, pass@k, best-of-k and pass^k of some groups, JSON-ready; a rollout without a
    result counts ``abandoned`` (see :func:`~rollgym.benchmarks.metrics.counted_reward`)."""
    base = summarize(groups, seed=0, n_resamples=N_RESAMPLES, abandoned_reward=abandoned).to_dict()
    groups = [g for g in groups if g.trajectories]
    best: dict[str, Any] = {}
    hat: dict[str, Any] = {}
    if groups:
        smallest = min(len(g.trajectories) for g in groups)
        for k in range(1, smallest + 1):
            best[str(k)] = _estimate([expected_best_of_k(_scored_rewards(g, abandoned), k) for g in groups])
            per_task = [
                pass_hat_k(len(g.trajectories), sum(1 for t in g.trajectories if t.correct), k) for g in groups
            ]
            hat[str(k)] = _estimate(per_task, unit=True)
    return {**base, "best_of_k": best, "pass_hat_k": hat}


def game_score(reward: float | None) -> float:
    """A game's score for the agent from its reward: 1 for a win, 0.5 for a draw, else 0."""
    if reward is None:
        return 0.0
    if reward >= 1.0:
        return 1.0
    return 0.5 if reward >= 0.5 else 0.0


def game_points(trajectory: Any) -> float:
    """The agent's points in a game trajectory: ``info["details"]["points"]`` (1 / 0.5 / 0), which the
    game envs report whatever their ``reward_scheme``; from the reward for results recorded before they did."""
    details = trajectory.info.get("details") if trajectory.usable else None
    if isinstance(details, dict) and isinstance(details.get("points"), (int, float)):
        return float(details["points"])
    return game_score(trajectory.reward) if trajectory.usable else 0.0


def summarize_entry(entry: SuiteEntry, groups: list[RolloutGroup]) -> dict[str, Any]:
    """The entry's metrics, plus one row per difficulty bucket, JSON-ready."""
    abandoned = abandoned_reward(entry, groups)
    by_difficulty: dict[str, list[RolloutGroup]] = {}
    for group in groups:
        by_difficulty.setdefault(entry.difficulty_of(group.task), []).append(group)
    difficulties = {}
    for bucket in sorted(by_difficulty, key=_bucket_order):
        rows = by_difficulty[bucket]
        trajectories = [t for g in rows for t in g.trajectories]
        correct = sum(1 for t in trajectories if t.correct)
        low, high = wilson_interval(correct, len(trajectories))
        rewards = [counted_reward(t, abandoned) for t in trajectories]
        difficulties[bucket] = {
            "tasks": len(rows),
            "episodes": len(trajectories),
            "accuracy": {"value": correct / len(trajectories) if trajectories else math.nan, "low": low, "high": high},
            "mean_reward": _estimate(rewards),
        }
    summary = {
        "env_id": entry.env_id,
        "metrics": list(entry.metrics),
        **summarize_groups(groups, abandoned),
        "difficulty_key": entry.difficulty,
        "by_difficulty": difficulties,
    }
    if entry.rating:
        trajectories = [t for g in groups for t in g.trajectories]
        points = sum(game_points(t) for t in trajectories)
        summary["games"] = {
            "ladder": entry.rating["ladder"],
            "opponent": entry.rating["opponent"],
            "opponent_elo": float(entry.rating["elo"]),
            "played": len(trajectories),
            "points": points,
        }
    return summary


def _bucket_order(bucket: str) -> tuple[int, float, str]:
    try:
        return (0, float(bucket), bucket)
    except ValueError:
        return (1, 0.0, bucket)


def ladder_ratings(entries: list[SuiteEntry], groups_by_entry: dict[str, list[RolloutGroup]]) -> dict[str, Any]:
    """The agent's Elo per ladder, fitted from its games against the ladder's anchored opponents."""
    from rollgym.benchmarks.ratings import GameResult, fit_elo

    ladders: dict[str, tuple[list[GameResult], dict[str, float]]] = {}
    for entry in entries:
        if not entry.rating or entry.name not in groups_by_entry:
            continue
        games, anchors = ladders.setdefault(str(entry.rating["ladder"]), ([], {}))
        opponent = f"opponent:{entry.rating['opponent']}"
        anchors[opponent] = float(entry.rating["elo"])
        for group in groups_by_entry[entry.name]:
            for t in group.trajectories:
                games.append(GameResult(AGENT_PLAYER, opponent, game_points(t)))
    ratings: dict[str, Any] = {}
    for ladder, (games, anchors) in sorted(ladders.items()):
        if not games:
            continue
        fitted = fit_elo(games, anchors)[AGENT_PLAYER]
        ratings[ladder] = {
            "elo": fitted.elo,
            "low": fitted.low,
            "high": fitted.high,
            "games": fitted.games,
            "points": fitted.points,
            "perfect": fitted.perfect,
            "anchors": {k.split(":", 1)[1]: v for k, v in anchors.items()},
        }
    return ratings


def headline(entries_summary: dict[str, dict[str, Any]]) -> float:
    """The leaderboard's overall score: the mean over entries of accuracy (mean reward where accuracy is
    not among the entry's metrics)."""
    values = []
    for summary in entries_summary.values():
        key = "accuracy" if "accuracy" in summary.get("metrics", ["accuracy"]) else "mean_reward"
        value = summary[key]["value"]
        if value is not None and not math.isnan(value):
            values.append(float(value))
    return float(np.mean(values)) if values else math.nan
