"""Self-play on Kuhn poker with a model in both seats, SPIRAL's role-conditioned advantages, and a rating.

Run: python examples/selfplay_kuhn.py [--steps 3]

A tiny chat model (built from a config, no download) plays both seats of
KuhnPoker-v1's game through the self-play collector: one trajectory per seat, with
exact tokens. rollgym's GRPO trainer updates it with SPIRAL's role-conditioned
advantages (one running baseline per role). Then the checkpoints before and after
training are rated with the Bradley-Terry/Elo tool beside the Nash and random bots.
The tiny model is untrained, so expect it to lose to the Nash bot; the point is the
plumbing, end to end.
"""

from __future__ import annotations

import argparse
import copy
import tempfile

from rollgym.agents.backends.base import SamplingParams
from rollgym.agents.backends.hf import TransformersBackend
from rollgym.agents.backends.tiny import build_tiny_model
from rollgym.agents.chat import ChatAgent
from rollgym.benchmarks.ratings import fit_elo, seated_results
from rollgym.envs.games.kuhn import KuhnPoker, NashKuhnBot, RandomKuhnBot
from rollgym.rollout.selfplay import collect_seated, round_robin
from rollgym.train.grpo import GRPOConfig, GRPOTrainer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()

    backend = TransformersBackend.from_pretrained(str(build_tiny_model(tempfile.mkdtemp(), seed=0)))
    start = TransformersBackend(copy.deepcopy(backend.model), backend.tokenizer)  # the step-0 checkpoint
    agent = ChatAgent(backend, SamplingParams(max_tokens=12))

    def game() -> KuhnPoker:
        # the untrained model rarely names an action: one retry, then a random legal action is played for it
        return KuhnPoker(max_retries=1, illegal_move_policy="random")

    trainer = GRPOTrainer(backend.model, backend.tokenizer, GRPOConfig(advantage="rae", learning_rate=1e-4))
    for step in range(args.steps):
        groups = collect_seated(game, lambda: [agent, agent.spawn()], seeds=range(step * 4, step * 4 + 4),
                                group_size=2)
        stats = trainer.step(groups)
        rewards = {role: [t.reward for g in groups for t in g.trajectories if t.info["role"] == role]
                   for role in ("first", "second")}
        print(f"step {step}: rows {stats['rows']}, mean chips first {sum(rewards['first']) / 8:+.2f}, "
              f"second {sum(rewards['second']) / 8:+.2f}, role baselines {trainer.role_baselines.values}")

    players = {
        "nash": lambda: NashKuhnBot(seed=0),
        "random": lambda: RandomKuhnBot(seed=0),
        "tiny-step0": lambda: ChatAgent(start, SamplingParams(max_tokens=12)),
        f"tiny-step{args.steps}": lambda: ChatAgent(backend, SamplingParams(max_tokens=12)),
    }
    results = seated_results(round_robin(game, players, games_per_pair=6, seed=0))
    for name, rating in sorted(fit_elo(results, anchors={"random": 0.0}).items(), key=lambda kv: -kv[1].elo):
        print(f"{name:<12} Elo {rating.elo:7.0f}  [{rating.low:.0f}, {rating.high:.0f}]  games {rating.games}")


if __name__ == "__main__":
    main()
