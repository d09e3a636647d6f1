"""Group-relative advantages for GRPO and its variants.

Only usable rollouts (not failed or aborted) get an advantage; a failed
rollout is left out of its group's statistics rather than counted as reward 0.

Scaling (``scale``):

- ``"group"``: ``(r - mean_g) / (std_g + eps)``, GRPO as published;
- ``"batch"``: ``(r - mean_g) / (std_batch + eps)``, the group mean with one
  standard deviation over the whole batch (TRL's ``scale_rewards="batch"``);
- ``"none"``: ``r - mean_g``, mean-only, as in Dr. GRPO, which removes the
  difficulty bias that per-group scaling introduces.

``by_source=True`` computes the statistics separately for on-policy and
external rollouts within a group (the source-specific reward processing of
the external-rollout study); ``False`` pools them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Literal

import numpy as np

from rollgym.core.errors import ConfigError
from rollgym.rollout.strategies import zero_variance
from rollgym.rollout.types import RolloutGroup

__all__ = ["Scale", "group_advantages", "zero_variance"]

Scale = Literal["group", "batch", "none"]


def _source_key(source: str, by_source: bool) -> str:
    if not by_source:
        return "all"
    return "policy" if source in ("policy", "replay") else "external"


def group_advantages(
    groups: Iterable[RolloutGroup], *, scale: Scale = "group", by_source: bool = False, eps: float = 1e-6
) -> dict[str, float]:
    """Advantage of every usable rollout, keyed by ``traj_id``.

    Example:
        >>> from rollgym.rollout.types import Trajectory
        >>> ts = [Trajectory(f"t{i}", "g", i, "E-v0", "t", 0, reward=r) for i, r in enumerate([1.0, 0.0])]
        >>> adv = group_advantages([RolloutGroup("g", None, 2, ts)], scale="none")
        >>> adv["t0"], adv["t1"]
        (0.5, -0.5)
    """
    if scale not in ("group", "batch", "none"):
        raise ConfigError(f"scale must be 'group', 'batch' or 'none', got {scale!r}.")
    centred: dict[str, float] = {}
    stds: dict[str, float] = {}
    all_rewards: list[float] = []
    for group in groups:
        buckets: dict[str, list[tuple[str, float]]] = defaultdict(list)
        for traj in group.usable():
            if traj.reward is None:
                continue
            buckets[_source_key(traj.source, by_source)].append((traj.traj_id, float(traj.reward)))
        for members in buckets.values():
            rewards = np.array([r for _, r in members], dtype=np.float64)
            mean, std = float(rewards.mean()), float(rewards.std())
            for traj_id, r in members:
                centred[traj_id] = r - mean
                stds[traj_id] = std
                all_rewards.append(r)
    if scale == "none" or not centred:
        return centred
    if scale == "group":
        return {k: v / (stds[k] + eps) for k, v in centred.items()}
    batch_std = float(np.std(all_rewards))  # over raw rewards, as TRL computes it
    return {k: v / (batch_std + eps) for k, v in centred.items()}

