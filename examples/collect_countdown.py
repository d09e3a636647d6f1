"""Collect groups of rollouts on Countdown-v0 and look at them as a GRPO trainer would.

Run: python examples/collect_countdown.py [results.jsonl]

A small custom agent (the oracle half of the time, random otherwise) plays 8
tasks, 4 times each (same task, same env seed within a group, a different agent
seed per rollout). Rerunning with the same results file resumes instead of
starting over.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

import rollgym  # noqa: F401  (registers Countdown-v0)
from rollgym.agents import OracleAgent, RandomAgent
from rollgym.benchmarks.metrics import summarize
from rollgym.rollout import collect, load_results


class CoinFlipAgent:
    """Any object with ``name``, ``reset(seed)`` and ``act(observation, info) -> str`` is an agent."""

    name = "coin-flip"

    def __init__(self) -> None:
        self.oracle, self.random = OracleAgent(), RandomAgent()
        self.rng = np.random.default_rng(0)

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)  # the collector gives every rollout its own seed
        self.random.reset(seed)

    def act(self, observation: str, info: dict) -> str:
        agent = self.oracle if self.rng.random() < 0.5 else self.random
        return agent.act(observation, info)


def main(out: Path) -> None:
    groups = collect(CoinFlipAgent(), "Countdown-v0", n_tasks=8, group_size=4, split="train", seed=0, out=str(out))
    for group in groups:
        rewards = np.array([t.reward for t in group.usable()], dtype=float)
        advantages = (rewards - rewards.mean()) / (rewards.std() + 1e-6)  # group-normalized, as in GRPO
        print(f"{group.task.id}: rewards {rewards.tolist()} advantages {np.round(advantages, 2).tolist()}")
    first = groups[0].trajectories[0]
    print(f"\nFirst rollout ({first.status}, reward {first.reward}):")
    for message in first.messages:
        print(f"  [{message['role']}] {message['content'][:100]!r}")
    summary = summarize(load_results(out).groups())
    print(f"\n{summary.episodes} episodes in {out}; accuracy {summary.accuracy.format(percent=True)}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as folder:
            main(Path(folder) / "countdown.jsonl")
