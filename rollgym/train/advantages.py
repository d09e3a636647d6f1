"""Group-relative advantages for GRPO and its variants.

Only usable rollouts (not failed or aborted) get an advantage; a failed
rollout is left out of its group's statistics rather than counted as reward 0.

Scaling (``scale``):

- ``"group"``: ``(r - mean_g) / (std_g + eps)``, GRPO as published;
- ``"batch"``: ``(r - mean_g) / (std_batch + eps)``, the group mean with one
  standard deviation over the whole batch (TRL's ``scale_rewards="batch"``);
- ``"none"``: ``r - mean_g``, mean-only, as in Dr. GRPO, which removes the
  difficulty bias that per-group scaling introduces.

``by_source`` chooses how external rollouts (``source="external:*"``, see
:mod:`rollgym.rollout.external`) are processed (ERILS):

- ``True`` (source-specific): on-policy rollouts (``"policy"``, ``"replay"``) are
  normalised by the on-policy members of their group alone; each external rollout
  is baselined against the *on-policy* group's statistics,
  ``(r_ext - mean_policy) / s``, where ``s`` is the on-policy standard deviation
  (``scale="group"``; 1 when the on-policy rewards are all equal, so an external
  success in a group that solved nothing gets advantage ``r_ext - mean_policy``),
  the batch standard deviation (``"batch"``) or 1 (``"none"``). An external rollout
  that beats the on-policy mean therefore always gets a positive advantage, and the
  on-policy advantages are exactly those of plain GRPO. A group without on-policy
  rollouts centres its external ones on their own mean.
- ``False`` (joint): one pool per group, as if every member were on-policy (the
  ablation that the ERILS paper reports collapsing).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import numpy as np

from rollgym.core.errors import ConfigError
from rollgym.rollout.strategies import zero_variance
from rollgym.rollout.types import RolloutGroup

__all__ = ["Scale", "group_advantages", "zero_variance"]

Scale = Literal["group", "batch", "none"]


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
        members = [(t.traj_id, float(t.reward), _is_policy(t.source)) for t in group.usable() if t.reward is not None]
        all_rewards.extend(r for _, r, _ in members)
        own = [m for m in members if m[2]]
        if not members:
            continue
        if not by_source:
            _centre(members, centred, stds)
        elif not own:  # no on-policy baseline in this group: external rollouts against each other
            _centre(members, centred, stds)
        else:
            mean, std = _centre(own, centred, stds)
            for traj_id, r, is_policy in members:
                if not is_policy:  # ERILS: judged against what the policy itself achieved on this task
                    centred[traj_id] = r - mean
                    stds[traj_id] = std if std > eps else 1.0 - eps  # all on-policy rewards equal: divide by 1
    if scale == "none" or not centred:
        return centred
    if scale == "group":
        return {k: v / (stds[k] + eps) for k, v in centred.items()}
    batch_std = float(np.std(all_rewards))  # over raw rewards, as TRL computes it
    return {k: v / (batch_std + eps) for k, v in centred.items()}


def _is_policy(source: str) -> bool:
    return source in ("policy", "replay")


def _centre(members: list[tuple[str, float, bool]], centred: dict[str, float],
            stds: dict[str, float]) -> tuple[float, float]:
    """Centre ``members`` on their own mean; returns ``(mean, std)``."""
    rewards = np.array([r for _, r, _ in members], dtype=np.float64)
    mean, std = float(rewards.mean()), float(rewards.std())
    for traj_id, r, _ in members:
        centred[traj_id] = r - mean
        stds[traj_id] = std
    return mean, std
