"""Talk to UserSim-v1's simulated user: one conversation, one policy violation, and pass^k as tau2 reports it.

Run: python examples/usersim_conversation.py

1. The oracle serves a dual-control task: it asks for the account email and each detail, finds the app locked
   on the user's phone, asks the user to unlock it, confirms the transfer, and finishes. The transcript shows
   both channels: the user's replies and the tool results.
2. The same work without asking for confirmation first scores 0: the state is right, the conversation is not.
3. A flaky agent (the oracle on some tries, random otherwise) plays 6 test tasks 4 times each; pass@k rises with
   k while pass^k (all k tries solve the task, the reliability tau2 reports) falls.
"""

from __future__ import annotations

import numpy as np

import rollgym
from rollgym.agents import OracleAgent, RandomAgent
from rollgym.benchmarks.report import summarize_groups
from rollgym.envs.usersim.policies import ScriptedPolicy
from rollgym.rollout import collect


def show_conversation() -> None:
    env = rollgym.make("UserSim-v1", scenarios=["send_money"], variants=["dual"])
    agent = OracleAgent()
    observation, info = env.reset(seed=0)
    print(f"user:  {observation}")
    done = False
    while not done:
        action = agent.act(observation, info)
        print(f"agent: {action}")
        observation, reward, terminated, truncated, info = env.step(action)
        print(f"{'user' if info['channel'] == 'user' else 'tools'}: {observation.strip()}")
        done = terminated or truncated
    print(f"reward {reward}, checks {info['details']['criteria']}\n")
    env.close()


def skip_the_confirmation() -> None:
    env = rollgym.make("UserSim-v1", scenarios=["send_money"], variants=["facts"])
    sloppy = ScriptedPolicy(confirm=False)
    observation, info = env.reset(seed=0)
    done = False
    while not done:
        observation, reward, terminated, truncated, info = env.step(sloppy(observation, info))
        done = terminated or truncated
    failed = [name for name, passed in info["details"]["criteria"].items() if not passed]
    print(f"without confirmation: reward {reward}, failed {failed}\n")
    env.close()


class FlakyAgent:
    """The oracle with probability ``skill`` per episode, the random agent otherwise."""

    name = "flaky"

    def __init__(self, skill: float = 0.7) -> None:
        self.skill = skill
        self.oracle, self.random = OracleAgent(), RandomAgent()
        self.use_oracle = True

    def reset(self, seed: int | None = None) -> None:
        self.use_oracle = bool(np.random.default_rng(seed).random() < self.skill)
        self.random.reset(seed)

    def act(self, observation: str, info: dict) -> str:
        return (self.oracle if self.use_oracle else self.random).act(observation, info)


def pass_hat_k() -> None:
    groups = collect(FlakyAgent(), "UserSim-v1", n_tasks=6, group_size=4, split="test", seed=0)
    summary = summarize_groups(groups)
    for k in ("1", "2", "4"):
        print(f"k={k}: pass@k {summary['pass_at_k'][k]['value']:.2f}   pass^k {summary['pass_hat_k'][k]['value']:.2f}")


if __name__ == "__main__":
    show_conversation()
    skip_the_confirmation()
    pass_hat_k()
