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

Self-play and multi-agent groups (:mod:`rollgym.rollout.selfplay`) hold every
seat's trajectory, each with ``info["role"]``. Two advantages for them:

- per-role GRPO: :func:`group_advantages` on
  :func:`~rollgym.rollout.selfplay.split_by_role` of the groups (each role
  centred on its own members' mean in that group);
- :func:`role_advantages`, SPIRAL's role-conditioned advantage estimation
  (RAE; Liu et al., "SPIRAL: Self-Play on Zero-Sum Games Incentivizes Reasoning
  via Multi-Agent Multi-Turn Reinforcement Learning", 2025, arXiv:2506.24119):
  one running baseline per (game, role), an exponential moving average of that
  role's returns, ``b <- alpha * b + (1 - alpha) * R`` (alpha = 0.95 in the
  paper), and the advantage ``A = R - b``. In a zero-sum game with a
  first-mover edge, the shared group mean credits the favoured role for its
  seat; the per-role baseline removes that edge from its advantage.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from rollgym.core.errors import ConfigError
from rollgym.rollout.strategies import zero_variance
from rollgym.rollout.types import RolloutGroup

__all__ = ["RoleBaselines", "Scale", "group_advantages", "role_advantages", "zero_variance"]

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


@dataclass
class RoleBaselines:
    """SPIRAL's per-(game, role) baselines: exponential moving averages of each role's return.

    ``decay`` is the paper's alpha (0.95); a baseline starts at 0. Keys are
    ``"<env_id>/<role>"``. The state is plain JSON (:meth:`to_dict`, :meth:`from_dict`)
    so that it goes into a checkpoint.

    Example:
        >>> b = RoleBaselines(decay=0.5)
        >>> b.update("Kuhn/first", 1.0), b.update("Kuhn/first", 1.0)
        (0.5, 0.75)
    """

    decay: float = 0.95
    values: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 0.0 <= self.decay < 1.0:
            raise ConfigError(f"decay must be in [0, 1), got {self.decay!r}.")

    def update(self, key: str, reward: float) -> float:
        """Fold ``reward`` into ``key``'s baseline; return the new baseline."""
        value = self.decay * self.values.get(key, 0.0) + (1.0 - self.decay) * float(reward)
        self.values[key] = value
        return value

    def to_dict(self) -> dict[str, Any]:
        return {"decay": self.decay, "values": dict(self.values)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RoleBaselines:
        return cls(decay=float(data["decay"]), values={str(k): float(v) for k, v in data["values"].items()})


def role_advantages(groups: Iterable[RolloutGroup], baselines: RoleBaselines) -> dict[str, float]:
    """SPIRAL's role-conditioned advantages (RAE) of every usable rollout, keyed by ``traj_id``.

    For each rollout in order, the baseline of its (env id, ``info["role"]``) is updated with its
    return, then ``A = R - b`` (Algorithm 1 of Liu et al., 2025, arXiv:2506.24119). ``baselines``
    carries the running averages from one training step to the next. A rollout without a role
    counts as role ``""``.

    Example:
        >>> from rollgym.rollout.types import Trajectory
        >>> ts = [Trajectory(f"t{i}", "g", i, "K", "t", 0, reward=r, info={"role": role})
        ...       for i, (r, role) in enumerate([(1.0, "first"), (-1.0, "second")])]
        >>> role_advantages([RolloutGroup("g", None, 2, ts)], RoleBaselines(decay=0.5))
        {'t0': 0.5, 't1': -0.5}
    """
    advantages: dict[str, float] = {}
    for group in groups:
        for traj in group.usable():
            if traj.reward is None:
                continue
            key = f"{traj.env_id}/{traj.info.get('role', '')}"
            baseline = baselines.update(key, float(traj.reward))
            advantages[traj.traj_id] = float(traj.reward) - baseline
    return advantages
