"""Rollout strategies from recent work, implemented once over :class:`RolloutGroup`.

- :class:`MajorityVoteScorer` (TTRL, Zuo et al. 2025): for unlabelled tasks, the
  most common answer in a group becomes the pseudo-label and each rollout is
  rewarded 1 when it agrees. The true label is never used for reward; when
  known it is only logged, to measure label accuracy.
- :class:`VerifiedVoteScorer` (T^3RL): like majority voting, but a vote whose
  answer was checked by a tool (``info["verified"]``, e.g. code execution that
  reproduced the answer) counts ``verified_weight`` times.
- :func:`mix_external` (external higher-reward rollouts, the ERILS setting):
  adds rollouts from a stronger external policy (another model or an oracle
  agent) to on-policy groups, only when they beat the group, with their length
  controlled: ``length="truncate"`` cuts them to the on-policy token budget,
  ``"select"`` keeps only those that fit, ``"none"`` keeps them whole. Pair
  with ``group_advantages(by_source=True)`` for source-specific reward
  processing, or ``False`` for joint processing.
- :func:`drop_zero_variance` (dynamic sampling, DAPO): groups whose rewards
  are all equal carry no GRPO signal and are dropped.

Partial rollouts (APRIL) live in :mod:`rollgym.rollout.partial`, which owns in-flight episodes.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

from rollgym.core.errors import ConfigError
from rollgym.rollout.types import RolloutGroup, Trajectory

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

    def weight(self, traj: Trajectory) -> float:
        """How much one rollout's vote counts."""
        return 1.0

    def __call__(self, group: RolloutGroup) -> RolloutGroup:
        """Set ``pseudo_label`` and each usable rollout's reward; returns the same group."""
        votes: dict[Any, float] = {}
        answers: dict[str, Any] = {}
        for traj in group.usable():
            answer = self.answer_fn(traj)
            answers[traj.traj_id] = answer
            if answer is not None:
                votes[answer] = votes.get(answer, 0.0) + self.weight(traj)
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
    """T^3RL: verification-aware voting; a tool-verified answer's vote counts ``verified_weight`` times."""

    def __init__(self, verified_weight: float = 2.0, answer_fn: AnswerFn = parsed_answer,
                 label_fn: Callable[[RolloutGroup], Any] | None = None):
        if verified_weight < 1.0:
            raise ConfigError(f"verified_weight must be at least 1, got {verified_weight}.")
        super().__init__(answer_fn, label_fn)
        self.verified_weight = verified_weight

    def weight(self, traj: Trajectory) -> float:
        """``verified_weight`` when ``info["verified"]`` is true, else 1."""
        return self.verified_weight if traj.info.get("verified") is True else 1.0


def _completion_tokens(traj: Trajectory) -> int:
    return len(traj.completion_ids) or sum(len(t.output_ids) for t in traj.turns)


def truncate_trajectory(traj: Trajectory, max_tokens: int) -> Trajectory:
    """A copy of ``traj`` whose completion is cut to ``max_tokens`` tokens, marked ``truncated``.

    The reward is kept as scored on the full rollout (the external policy did reach
    it), and ``metrics["truncated_from"]`` records the original length.
    """
    n = _completion_tokens(traj)
    if n <= max_tokens:
        return traj
    return dataclasses.replace(
        traj,
        completion_ids=traj.completion_ids[:max_tokens],
        loss_mask=traj.loss_mask[:max_tokens],
        logprobs=traj.logprobs[:max_tokens],
        status="truncated",
        metrics={**traj.metrics, "truncated_from": n},
    )


def mix_external(
    groups: Sequence[RolloutGroup],
    external: dict[str, list[Trajectory]],
    *,
    per_group: int = 1,
    only_if_better: bool = True,
    length: Literal["none", "truncate", "select"] = "truncate",
    budget: int | Literal["max", "mean"] = "max",
    replace_worst: bool = False,
) -> list[RolloutGroup]:
    """Add external rollouts to on-policy groups (keyed by ``task_id``); returns new groups.

    Args:
        external: Rollouts of a stronger policy per task id; their ``source`` is set to
            ``"external:<name>"`` if it is ``"policy"``.
        per_group: Most external rollouts added to one group.
        only_if_better: Add an external rollout only when its reward beats the group's best.
        length: Length control relative to the on-policy budget (see the module docstring).
        budget: The on-policy length budget: an explicit token count, or the group's
            ``"max"`` or ``"mean"`` completion length.
        replace_worst: Replace the lowest-reward on-policy members instead of growing the group.
    """
    if length not in ("none", "truncate", "select"):
        raise ConfigError(f"length must be 'none', 'truncate' or 'select', got {length!r}.")
    mixed = []
    for group in groups:
        task_id = group.task.id if group.task is not None else next(
            (t.task_id for t in group.trajectories if t.task_id), None)
        candidates = list(external.get(task_id or "", []))
        own = group.usable()
        best = max((t.reward for t in own if t.reward is not None), default=float("-inf"))
        lengths = [_completion_tokens(t) for t in own] or [0]
        limit = budget if isinstance(budget, int) else (max(lengths) if budget == "max" else
                                                         int(sum(lengths) / len(lengths)))
        chosen: list[Trajectory] = []
        for ext in sorted(candidates, key=lambda t: -(t.reward or 0.0)):
            if len(chosen) >= per_group:
                break
            if only_if_better and (ext.reward is None or ext.reward <= best):
                continue
            if length == "select" and _completion_tokens(ext) > limit:
                continue
            if length == "truncate":
                ext = truncate_trajectory(ext, limit)
            source = ext.source if ext.source.startswith("external:") else "external:teacher"
            chosen.append(dataclasses.replace(ext, source=source, group_id=group.group_id))
        members = list(group.trajectories)
        if replace_worst and chosen:
            ranked = sorted(members, key=lambda t: (t.usable, t.reward if t.reward is not None else -1e18))
            drop = {t.traj_id for t in ranked[: len(chosen)]}
            members = [t for t in members if t.traj_id not in drop]
        start = max((t.sample_idx for t in members), default=-1) + 1
        for i, ext in enumerate(chosen):
            members.append(dataclasses.replace(ext, sample_idx=start + i, traj_id=f"{group.group_id}-ext{i}"))
        mixed.append(dataclasses.replace(group, trajectories=members, target_size=max(group.target_size,
                                                                                      len(members))))
    return mixed


def zero_variance(group: RolloutGroup, tol: float = 1e-12) -> bool:
    """Whether all usable members of a group got the same reward (no GRPO learning signal)."""
    rewards = [t.reward for t in group.usable() if t.reward is not None]
    return len(rewards) < 2 or max(rewards) - min(rewards) <= tol


def drop_zero_variance(groups: Iterable[RolloutGroup], tol: float = 1e-12) -> list[RolloutGroup]:
    """Dynamic sampling: keep only groups whose usable rewards are not all equal."""
    return [g for g in groups if not zero_variance(g, tol)]
