"""Dynamic sampling that refills the batch (DAPO): only informative groups reach the trainer, and the cost is counted.

A GRPO group whose rollouts all earned the same reward has zero advantage
everywhere: it costs a forward and backward pass and teaches nothing. DAPO
over-samples and filters such groups out *until the batch is full*, so every
step trains on the same number of informative groups. :class:`DynamicSampler`
does that over any function that samples groups (the collector, the TRL/verl
runners, :func:`~rollgym.train.adapters.episodes.play_groups`), with a cap on the
extra sampling, and reports what the refill cost (:class:`SamplingCost`).

Example::

    sampler = DynamicSampler(lambda n, round_: collect(agent, "Countdown-v0", n, 8, seed=round_),
                             target_groups=16, max_sample_factor=3.0)
    groups, cost = sampler()       # 16 groups whose rewards vary, unless the cap was hit
    cost.extra_rollouts            # rollouts sampled beyond 16 x 8
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from rollgym.core.errors import ConfigError
from rollgym.rollout.strategies import zero_variance
from rollgym.rollout.types import RolloutGroup

SampleFn = Callable[[int, int], Sequence[RolloutGroup]]


@dataclass(frozen=True)
class SamplingCost:
    """What filling one batch cost.

    Attributes:
        target_groups: Informative groups wanted.
        groups_kept: Informative groups returned (``< target_groups`` only when ``capped``).
        groups_sampled: Groups sampled in all rounds.
        rounds: Calls of the sampling function.
        rollouts_sampled: Rollouts in all sampled groups.
        extra_rollouts: ``rollouts_sampled`` beyond what ``target_groups`` groups hold without refilling.
        tokens_sampled: Policy-sampled tokens (loss mask 1) in all sampled groups.
        seconds: Wall time spent sampling.
        capped: Whether the cap stopped the refill before the batch was full.
    """

    target_groups: int
    groups_kept: int
    groups_sampled: int
    rounds: int
    rollouts_sampled: int
    extra_rollouts: int
    tokens_sampled: int
    seconds: float
    capped: bool

    @property
    def keep_rate(self) -> float:
        """The share of sampled groups that were informative."""
        return self.groups_kept / self.groups_sampled if self.groups_sampled else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The cost as a JSON-ready dict (with ``keep_rate``)."""
        return {**asdict(self), "keep_rate": round(self.keep_rate, 4)}


class DynamicSampler:
    """Sample groups until ``target_groups`` informative ones are in hand, or the cap is reached.

    Args:
        sample: ``sample(n, round) -> groups`` returns ``n`` freshly sampled groups (new tasks);
            ``round`` counts the calls of this sampler's lifetime, for seeding.
        target_groups: Informative groups per batch.
        max_sample_factor: Cap: at most ``ceil(max_sample_factor * target_groups)`` groups are sampled
            per batch (1 disables refilling: plain filtering).
        informative: Which groups to keep (default: rewards not all equal).
        min_round: Fewest groups asked for in one refill round.

    Each refill round asks for the missing groups divided by the keep rate seen so far in this
    batch (never fewer than ``min_round``, never past the cap). Informative groups beyond the
    target are dropped, so no batch carries groups sampled for an earlier one.
    """

    def __init__(self, sample: SampleFn, *, target_groups: int, max_sample_factor: float = 3.0,
                 informative: Callable[[RolloutGroup], bool] | None = None, min_round: int = 1) -> None:
        if not isinstance(target_groups, int) or target_groups < 1:
            raise ConfigError(f"target_groups must be an integer >= 1, got {target_groups!r}.")
        if not max_sample_factor >= 1:
            raise ConfigError(f"max_sample_factor must be >= 1, got {max_sample_factor!r}.")
        self.sample = sample
        self.target_groups = target_groups
        self.max_groups = math.ceil(max_sample_factor * target_groups)
        self.informative = informative or (lambda g: not zero_variance(g))
        self.min_round = max(1, int(min_round))
        self.rounds = 0
        self.history: list[SamplingCost] = []

    def __call__(self) -> tuple[list[RolloutGroup], SamplingCost]:
        """One batch: the informative groups (at most ``target_groups``) and what they cost."""
        started = time.perf_counter()
        kept: list[RolloutGroup] = []
        sampled = rollouts = tokens = rounds = 0
        while len(kept) < self.target_groups and sampled < self.max_groups:
            missing = self.target_groups - len(kept)
            rate = len(kept) / sampled if sampled else 1.0
            ask = missing if not sampled else math.ceil(missing / max(rate, 1.0 / self.max_groups))
            ask = min(max(ask, self.min_round), self.max_groups - sampled)
            groups = list(self.sample(ask, self.rounds))
            self.rounds += 1
            rounds += 1
            if not groups:
                break
            sampled += len(groups)
            for group in groups:
                rollouts += len(group.trajectories)
                tokens += sum(sum(t.loss_mask) for t in group.trajectories)
                if self.informative(group) and len(kept) < self.target_groups:
                    kept.append(group)
        size = max((g.target_size for g in kept), default=0) or (rollouts // sampled if sampled else 0)
        cost = SamplingCost(
            target_groups=self.target_groups, groups_kept=len(kept), groups_sampled=sampled, rounds=rounds,
            rollouts_sampled=rollouts, extra_rollouts=max(0, rollouts - self.target_groups * size),
            tokens_sampled=tokens, seconds=round(time.perf_counter() - started, 4),
            capped=len(kept) < self.target_groups,
        )
        self.history.append(cost)
        return kept, cost
