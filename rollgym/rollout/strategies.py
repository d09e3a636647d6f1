"""Rollout strategies from recent work, implemented once over :class:`RolloutGroup`.

- :class:`MajorityVoteScorer` (TTRL, Zuo et al. 2025): for unlabelled tasks, the
  most common answer in a group becomes the pseudo-label and each rollout is
  rewarded 1 when it agrees. The true label is never used for reward; when
  known it is only logged, to measure label accuracy.
- :class:`VerifiedVoteScorer` (T^3RL): like majority voting, but a vote whose
  answer a tool verified counts ``verified_weight`` times. The signal is the
  env's typed ``info["verified"]`` (a bool; ``MATH*Tool``: code that ran printed the
  answer, and re-runs tie it to the problem: fresh instances of a templated problem, else a
  problem number changed;
  ``Search``: the answer is in a retrieved passage), or, for envs that cannot verify, a
  pluggable :class:`~rollgym.rollout.verification.Verifier`.
- :func:`drop_zero_variance` (DAPO's filter): groups whose rewards are all equal
  carry no GRPO signal and are dropped; :class:`~rollgym.rollout.dynamic.DynamicSampler`
  refills the batch to a full set of informative groups, with a cap on extra sampling.
- External rollouts (ERILS): :func:`~rollgym.rollout.external.mix_external`, with
  length control that re-scores cut text (:mod:`rollgym.rollout.external`).

Partial rollouts (APRIL) live in :mod:`rollgym.rollout.partial`, which owns in-flight episodes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from rollgym.core.errors import ConfigError
from rollgym.rollout.types import RolloutGroup, Trajectory
from rollgym.rollout.verification import Verifier, verdict

AnswerFn = Callable[[Trajectory], Any]


def parsed_answer(traj: Trajectory) -> Any:
    """The answer the env's verifier extracted (``info["parsed"]``), normalised for voting."""
    value = traj.info.get("parsed")
    if isinstance(value, str):
        return re.sub(r"\s+", " ", value.strip())
    if isinstance(value, list):
        return repr(value)
    return value


class MajorityVoteScorer:
    """TTRL: reward agreement with the group's most common answer.

    Args:
        answer_fn: Extracts a hashable answer from a rollout (default: the verifier's parsed answer).
        label_fn: Optional true label of a group, only to log ``label_accuracy``; never used for reward.
    """

    def __init__(self, answer_fn: AnswerFn = parsed_answer, label_fn: Callable[[RolloutGroup], Any] | None = None):
        self.answer_fn = answer_fn
        self.label_fn = label_fn

    def weight(self, traj: Trajectory, group: RolloutGroup) -> float:
        """How much one rollout's vote counts (1 for every rollout: plain majority voting)."""
        return 1.0

    def __call__(self, group: RolloutGroup) -> RolloutGroup:
        """Set ``pseudo_label`` and each usable rollout's reward; returns the same group."""
        votes: dict[Any, float] = {}
        answers: dict[str, Any] = {}
        for traj in group.usable():
            answer = self.answer_fn(traj)
            answers[traj.traj_id] = answer
            if answer is not None:
                votes[answer] = votes.get(answer, 0.0) + self.weight(traj, group)
        label = None
        if votes:
            top = max(votes.values())
            # ties go to the answer seen first, so the result does not depend on hashing
            in_order = (answers[t.traj_id] for t in group.usable())
            label = next(a for a in in_order if a is not None and votes.get(a) == top)
        group.pseudo_label = label
        for traj in group.usable():
            agrees = label is not None and answers[traj.traj_id] == label
            traj.reward_components["vote"] = float(agrees)
            traj.reward = float(agrees)
            traj.metrics["vote_share"] = (votes[label] / sum(votes.values())) if votes and label is not None else 0.0
        if self.label_fn is not None:
            truth = self.label_fn(group)
            for traj in group.trajectories:
                traj.metrics["label_correct"] = label is not None and label == truth
        return group


class VerifiedVoteScorer(MajorityVoteScorer):
    """T^3RL: verification-aware voting; a tool-verified rollout's vote counts ``verified_weight`` times.

    A rollout is verified when its env says so (``info["verified"] is True``, a bool; see
    :mod:`rollgym.rollout.verification`) or, where the env gives no bool, when ``verifier``
    returns ``True``. Each rollout records ``metrics["verified"]`` and ``metrics["verified_by"]``.

    The weight: one verified vote outweighs ``k`` agreeing unverified votes exactly when
    ``verified_weight > k``. The default, 5, follows the T^3RL paper's ablation, which reports a
    moderate weight (about 5) best; ``docs/experiments.md`` has a sweep on rollgym's tasks.

    Args:
        verified_weight: Vote weight of a verified rollout (at least 1; 1 is plain TTRL).
        verifier: Checks rollouts whose env gives no verdict (e.g. :class:`CodeCheckVerifier`).
        answer_fn, label_fn: As for :class:`MajorityVoteScorer`.
    """

    def __init__(self, verified_weight: float = 5.0, answer_fn: AnswerFn = parsed_answer,
                 label_fn: Callable[[RolloutGroup], Any] | None = None, *, verifier: Verifier | None = None):
        if not verified_weight >= 1.0:
            raise ConfigError(f"verified_weight must be at least 1, got {verified_weight}.")
        super().__init__(answer_fn, label_fn)
        self.verified_weight = float(verified_weight)
        self.verifier = verifier

    def weight(self, traj: Trajectory, group: RolloutGroup) -> float:
        """``verified_weight`` when the rollout is tool-verified, else 1."""
        ok, source = verdict(traj, group, self.verifier)
        traj.metrics["verified"] = ok
        traj.metrics["verified_by"] = source
        return self.verified_weight if ok else 1.0


def zero_variance(group: RolloutGroup, tol: float = 1e-12) -> bool:
    """Whether all usable members of a group got the same reward (no GRPO learning signal)."""
    rewards = [t.reward for t in group.usable() if t.reward is not None]
    return len(rewards) < 2 or max(rewards) - min(rewards) <= tol


def drop_zero_variance(groups: Iterable[RolloutGroup], tol: float = 1e-12) -> list[RolloutGroup]:
    """Dynamic sampling: keep only groups whose usable rewards are not all equal."""
    return [g for g in groups if not zero_variance(g, tol)]



# The ERILS helpers live in rollgym.rollout.external; these names stay importable from here.
from rollgym.rollout.external import EnvRescorer, mix_external, truncate_trajectory  # noqa: E402

__all__ = [
    "EnvRescorer",
    "MajorityVoteScorer",
    "VerifiedVoteScorer",
    "drop_zero_variance",
    "mix_external",
    "parsed_answer",
    "truncate_trajectory",
    "zero_variance",
]
