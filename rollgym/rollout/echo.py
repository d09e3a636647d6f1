"""ECHO's rollout options for tree rollouts: branch width from entropy and confidence, and confidence pruning.

ECHO (Zhao et al., 2026, arXiv:2602.02150) grows a tree over a policy's samples and adds two
controls to entropy forking (:func:`rollgym.rollout.branching.agrow_tree` has the forking):

- **Adaptive branch width.** A fork point gets more children where the local entropy is high
  and the group is unsure, fewer where the group already agrees. Here (our parametrisation; the
  abstract names the ingredients, not a formula)::

      width = clamp(round(base * (h / h_ref) * 2 * (1 - c_group)), 1, max_width)

  ``h`` is the fork point's entropy (or surprisal, see :func:`~rollgym.rollout.branching.token_scores`),
  ``h_ref`` the mean score over the round's candidate points, ``c_group`` the mean
  :func:`sequence_confidence` of the tree's finished trajectories. At average entropy and
  ``c_group = 0.5`` the width is ``base``.
- **Online confidence pruning.** After each reply a branch's *tail confidence* (the mean
  probability of its last ``tail_window`` sampled tokens, :func:`tail_confidence`) is checked
  against ``prune_below``; a branch whose check fails ``patience`` times in a row (the count
  carries from a parent to its branches, so "persistently" spans the tree path) is pruned: a
  live episode stops there (``truncated``, ``info["truncated_by"] == "pruned"``), a finished one
  is not forked again. Pruned trajectories stay in the result with ``metrics["pruned"]`` set (their
  tokens were sampled); :func:`tree_stats` counts them. The pruner never prunes the last
  trajectory of a tree that is not pruned, so a tree always keeps one line of play. When a round's
  newest branches offer no fork point, the tree refills from the kept trajectories' unused points.

Token confidence is the probability of the sampled token, ``exp(logprob)``: ECHO uses the mean
mass of the top-k tokens, which the backends do not report; the sampled token's probability is
a one-sample stand-in for it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rollgym.core.errors import ConfigError

__all__ = ["EchoOptions", "Pruner", "branch_width", "sequence_confidence", "tail_confidence", "tree_stats"]


@dataclass(frozen=True)
class EchoOptions:
    """ECHO's rollout controls for :func:`~rollgym.rollout.branching.agrow_tree` (all off by default).

    Attributes:
        adaptive_width: Give each fork point :func:`branch_width` children instead of one.
        base_width, max_width: The width at average entropy and ``c_group = 0.5``, and its cap.
        prune_below: Tail-confidence threshold in (0, 1); ``None`` disables pruning.
        tail_window: Sampled tokens the tail confidence averages over.
        patience: Failed checks in a row (along the tree path) that prune a branch.
    """

    adaptive_width: bool = False
    base_width: int = 1
    max_width: int = 4
    prune_below: float | None = None
    tail_window: int = 8
    patience: int = 2

    def __post_init__(self) -> None:
        if not 1 <= self.base_width <= self.max_width:
            raise ConfigError(f"base_width must be in [1, max_width={self.max_width}], got {self.base_width}.")
        if self.prune_below is not None and not 0.0 < self.prune_below < 1.0:
            raise ConfigError(f"prune_below must be in (0, 1) or None, got {self.prune_below!r}.")
        if self.tail_window < 1 or self.patience < 1:
            raise ConfigError(f"tail_window and patience must be at least 1, got {self.tail_window} and "
                              f"{self.patience}.")


def _probabilities(turns: Sequence[Any]) -> list[float]:
    out: list[float] = []
    for turn in turns:
        ids, logprobs = list(getattr(turn, "output_ids", ())), list(getattr(turn, "output_logprobs", ()))
        if len(logprobs) == len(ids):
            out += [math.exp(min(0.0, float(lp))) for lp in logprobs]
    return out


def tail_confidence(turns: Sequence[Any], window: int, *, skip: int = 0) -> float | None:
    """Mean probability of the last ``window`` sampled tokens of ``turns``, after the first ``skip`` ones.

    ``skip`` leaves out a branch's shared prefix (its parent's tokens). ``None`` when nothing is left.

    Example:
        >>> class T: output_ids, output_logprobs = [1, 2, 3], [0.0, math.log(0.5), math.log(0.25)]
        >>> tail_confidence([T()], 2)
        0.375
    """
    probs = _probabilities(turns)[skip:]
    if not probs:
        return None
    tail = probs[-window:]
    return sum(tail) / len(tail)


def sequence_confidence(turns: Sequence[Any]) -> float | None:
    """The geometric-mean token probability of a trajectory, ``exp(mean logprob)``; ``None`` without tokens."""
    probs = _probabilities(turns)
    if not probs:
        return None
    return math.exp(sum(math.log(max(p, 1e-300)) for p in probs) / len(probs))


def branch_width(score: float, reference: float, group_confidence: float, *, base: int = 1,
                 max_width: int = 4) -> int:
    """Children of a fork point: ``clamp(round(base * (score / reference) * 2 * (1 - c)), 1, max_width)``.

    Example:
        >>> branch_width(2.0, 1.0, 0.25, base=1, max_width=4)   # twice the mean entropy, an unsure group
        3
        >>> branch_width(1.0, 1.0, 0.9)                          # a confident group: one child
        1
    """
    if not (math.isfinite(score) and math.isfinite(reference)) or reference <= 0:
        return base
    c = min(1.0, max(0.0, group_confidence))
    raw = base * (max(score, 0.0) / reference) * 2.0 * (1.0 - c)
    return int(min(max_width, max(1, math.floor(raw + 0.5))))


class Pruner:
    """The online pruning state of one tree (see the module docstring).

    ``streak[traj_id]`` is the number of failed checks in a row along the path to that branch;
    ``kept`` counts the tree's trajectories that are not pruned (live or finished).
    """

    def __init__(self, options: EchoOptions) -> None:
        self.options = options
        self.streak: dict[str, int] = {}
        self.pruned: set[str] = set()
        self.kept = 0

    @property
    def enabled(self) -> bool:
        return self.options.prune_below is not None

    def adopt(self, traj_id: str, parent_id: str | None) -> None:
        """Start tracking a new branch; it inherits its parent's streak."""
        self.streak[traj_id] = self.streak.get(parent_id, 0) if parent_id is not None else 0
        self.kept += 1

    def check(self, traj_id: str, turns: Sequence[Any], *, skip: int = 0) -> bool:
        """One check after a reply; ``True`` when the branch is pruned now (never the tree's last kept one)."""
        if not self.enabled or traj_id in self.pruned:
            return traj_id in self.pruned
        confidence = tail_confidence(turns, self.options.tail_window, skip=skip)
        if confidence is None:
            return False
        threshold = self.options.prune_below
        assert threshold is not None
        self.streak[traj_id] = self.streak.get(traj_id, 0) + 1 if confidence < threshold else 0
        if self.streak[traj_id] >= self.options.patience and self.kept > 1:
            self.pruned.add(traj_id)
            self.kept -= 1
            return True
        return False


def tree_stats(trajectories: Sequence[Any]) -> dict[str, float]:
    """Counts over one tree: trajectories, branches, pruned ones (stopped live or not forked again)."""
    pruned = [t for t in trajectories if t.metrics.get("pruned")]
    return {
        "trajectories": float(len(trajectories)),
        "branches": float(sum(t.parent_id is not None for t in trajectories)),
        "pruned": float(len(pruned)),
        "pruned_live": float(sum(t.info.get("truncated_by") == "pruned" for t in pruned)),
    }
