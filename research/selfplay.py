"""Self-play on Kuhn poker: SPIRAL's role-conditioned advantages against per-seat GRPO.

One tabular softmax policy (two logits for each of the twelve information sets,
a card and the betting so far) plays both seats of
:class:`~rollgym.envs.games.kuhn.KuhnPoker` through the real self-play collector
(:func:`~rollgym.rollout.selfplay.collect_seated`: the game's parsing, turn order,
payoffs and per-seat trajectories). Each step plays ``group_size`` games on each of
``tasks_per_step`` deals and updates the policy by REINFORCE with one advantage per
seat's trajectory, computed by rollgym's own estimators:

- ``per-seat-grpo``: :func:`~rollgym.train.advantages.group_advantages` on
  :func:`~rollgym.rollout.selfplay.split_by_role` groups (each role's games of one
  deal, centred and scaled by their own mean and deviation);
- ``rae``: :func:`~rollgym.train.advantages.role_advantages`, SPIRAL's running
  per-role baseline (decay 0.95, Liu et al. 2025).

Both arms see the same deals and sampling seeds (paired) and the same number of
games. The metric is the exploitability of the final policy, computed exactly
(half the sum of both seats' best-response gains over the six deals; 0 at a Nash
equilibrium), lower is better.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import product
from typing import Any

import numpy as np

from research.runner import ArmResult, Experiment

ARMS = ("per-seat-grpo", "rae")
#: The decision points: (seat, history) with the two actions there.
DECISIONS: dict[tuple[str, ...], tuple[str, str]] = {
    (): ("check", "bet"), ("check",): ("check", "bet"), ("bet",): ("call", "fold"), ("check", "bet"): ("call", "fold")}
CARD_NAMES = ("Jack", "Queen", "King")


class TabularPolicy:
    """Logits per information set (card, history); a softmax over the two legal actions."""

    def __init__(self) -> None:
        self.logits = {(card, history): np.zeros(2) for card in range(3) for history in DECISIONS}

    def probs(self, card: int, history: tuple[str, ...]) -> np.ndarray:
        z = self.logits[card, history]
        e = np.exp(z - z.max())
        return np.asarray(e / e.sum())

    def strategy(self, card: int, history: tuple[str, ...]) -> dict[str, Fraction]:
        """As a :func:`~rollgym.envs.games.kuhn.kuhn_value` strategy (exact fractions of the float probabilities)."""
        p = self.probs(card, history)
        first, second = DECISIONS[history]
        return {first: Fraction(float(p[0])), second: 1 - Fraction(float(p[0]))}


class TabularAgent:
    """A seat's agent over the shared policy; remembers its choices for the update."""

    name = "tabular"

    def __init__(self, policy: TabularPolicy) -> None:
        self.policy = policy
        self.rng = np.random.default_rng(0)
        self.choices: list[tuple[tuple[int, tuple[str, ...]], int]] = []

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)
        self.choices = []

    def act(self, observation: str, info: dict[str, Any]) -> str:
        card, history = CARD_NAMES.index(str(info["card"])), tuple(info["history"])
        pick = int(self.rng.random() >= self.policy.probs(card, history)[0])
        self.choices.append(((card, history), pick))
        return f"Final Answer: {DECISIONS[history][pick]}"


def exploitability(policy: TabularPolicy) -> float:
    """Half the sum of both seats' best-response gains against ``policy`` in self-play (exact; 0 at equilibrium)."""
    from rollgym.envs.games.kuhn import kuhn_value

    def pure(choice: dict[tuple[int, tuple[str, ...]], str]) -> Any:
        return lambda card, history: {a: Fraction(int(a == choice[card, history])) for a in DECISIONS[history]}

    first_sets = [(c, h) for c in range(3) for h in ((), ("check", "bet"))]
    second_sets = [(c, h) for c in range(3) for h in (("check",), ("bet",))]
    best_first = max(kuhn_value(pure(dict(zip(first_sets, picks))), policy.strategy)
                     for picks in product(*(DECISIONS[h] for _, h in first_sets)))
    best_second = min(kuhn_value(policy.strategy, pure(dict(zip(second_sets, picks))))
                      for picks in product(*(DECISIONS[h] for _, h in second_sets)))
    return float(best_first - best_second) / 2


def prepare(config: dict[str, Any], workdir: Any) -> None:
    """Nothing to warm up: every run starts from the uniform policy."""
    return None


def run(ctx: Any, arm: str, seed: int, config: dict[str, Any]) -> ArmResult:
    from rollgym.envs.games.kuhn import KuhnPoker
    from rollgym.rollout.selfplay import play_seated, split_by_role
    from rollgym.train.advantages import RoleBaselines, group_advantages, role_advantages

    policy = TabularPolicy()
    agents = [TabularAgent(policy), TabularAgent(policy)]
    game = KuhnPoker()
    baselines = RoleBaselines(decay=config["rae_decay"])
    lr, per_step, size = config["learning_rate"], config["tasks_per_step"], config["group_size"]
    curve = [(0.0, exploitability(policy))]
    games = 0
    for step in range(config["steps"]):
        seeds = [seed * 1_000_003 + step * per_step + i for i in range(per_step)]
        choices: dict[str, list[tuple[tuple[int, tuple[str, ...]], int]]] = {}
        groups = []
        for task_seed in seeds:
            for episode in range(size):
                trajs = play_seated(game, agents, seed=task_seed, episode=episode, group_id=str(task_seed),
                                    traj_prefix=f"{task_seed}:")
                for traj, agent in zip(trajs, agents):
                    choices[traj.traj_id] = list(agent.choices)
                groups.append(trajs)
        games += per_step * size
        merged = _groups(groups, size)
        if arm == "rae":
            advantages = role_advantages(merged, baselines)
        else:
            advantages = group_advantages(split_by_role(merged), scale="group")
        grads = {key: np.zeros(2) for key in policy.logits}
        for traj_id, advantage in advantages.items():
            for key, pick in choices[traj_id]:
                grads[key] += advantage * (np.eye(2)[pick] - policy.probs(*key))
        n = len(advantages)
        for key, grad in grads.items():
            policy.logits[key] += lr * grad / max(1, n)
        if (step + 1) % config["eval_every"] == 0:
            curve.append((float(games), exploitability(policy)))
    final = curve[-1][1]
    bet_jack = float(policy.probs(0, ())[1])
    return ArmResult(final, {"games": float(games)}, curve, {"first_player_bluff": bet_jack})


def _groups(games: list[list[Any]], size: int) -> list[Any]:
    """The games of one deal (``size`` in a row) as one group with every seat's trajectory."""
    from rollgym.rollout.types import RolloutGroup

    out = []
    for start in range(0, len(games), size):
        members = [t for trajs in games[start:start + size] for t in trajs]
        out.append(RolloutGroup(members[0].group_id, None, len(members), members))
    return out


EXPERIMENT = Experiment(
    name="selfplay",
    title="Self-play on Kuhn poker: SPIRAL's role-conditioned advantages against per-seat GRPO",
    question="With one tabular policy in both seats of Kuhn poker and the same games, does SPIRAL's role-conditioned "
             "advantage estimation (a running baseline per role) reach a less exploitable policy than per-seat GRPO "
             "(each role centred on its own games of the deal)? Exploitability is in chips per game; lower is better.",
    metric="exploitability",
    arms=ARMS,
    baseline="per-seat-grpo",
    prepare=prepare,
    run=run,
    configs={
        "full": {"steps": 300, "tasks_per_step": 8, "group_size": 4, "learning_rate": 1.0, "rae_decay": 0.95,
                 "eval_every": 30},
        "quick": {"steps": 3, "tasks_per_step": 2, "group_size": 2, "learning_rate": 1.0, "rae_decay": 0.95,
                  "eval_every": 1},
    },
    secondary=("first_player_bluff",),
    seeds=8,
    x_label="self-play games",
    digits=4,
    notes="Compute: every arm plays the same games (steps x deals x games per deal) on the same deals and sampling "
          "seeds; only the advantage differs. The policy is tabular (24 logits). On a shared 2-core machine the 16 "
          "runs took 2.5 minutes at a light load and 13.7 minutes (up to 84 s a run) at load average 10; the "
          "results were the same. Exploitability 0 means a Nash equilibrium; the uniform policy it starts from is "
          "at 0.458.",
)
