"""Exporters: rollout groups in the shapes TRL, verl and plain JSONL consumers expect.

All exporters keep only usable rollouts (failed and aborted ones are never
silently scored 0) unless asked otherwise, and keep the G members of a group
next to each other in ``sample_idx`` order, as GRPO trainers require.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rollgym.core.io import write_jsonl_atomic
from rollgym.rollout.types import RolloutGroup, Trajectory


def _members(groups: Iterable[RolloutGroup], include_unusable: bool) -> list[Trajectory]:
    out: list[Trajectory] = []
    for group in groups:
        members = group.trajectories if include_unusable else group.usable()
        out.extend(sorted(members, key=lambda t: t.sample_idx))
    return out


def to_trl(groups: Iterable[RolloutGroup], *, include_unusable: bool = False) -> dict[str, list[Any]]:
    """The dict a TRL ``rollout_func`` returns: ``prompt_ids``, ``completion_ids``, ``logprobs``, ``env_mask``.

    Extra keys (``env_reward``, ``status``, ``group_id``, ``task_id``) reach TRL's reward
    functions as keyword arguments; ``lambda env_reward, **kw: env_reward`` uses the env's reward.

    Example:
        >>> to_trl([])["prompt_ids"]
        []
    """
    members = _members(groups, include_unusable)
    return {
        "prompt_ids": [list(t.prompt_ids) for t in members],
        "completion_ids": [list(t.completion_ids) for t in members],
        "logprobs": [list(t.logprobs) for t in members],
        "env_mask": [list(t.loss_mask) for t in members],
        "env_reward": [t.reward for t in members],
        "status": [t.status for t in members],
        "group_id": [t.group_id for t in members],
        "task_id": [t.task_id for t in members],
    }


def to_verl(groups: Iterable[RolloutGroup], *, include_unusable: bool = False) -> list[dict[str, Any]]:
    """One dict per rollout with the fields of verl's ``AgentLoopOutput``.

    ``response_mask`` is the loss mask (1 for model tokens, 0 for env tokens),
    ``reward_score`` the episode reward, and ``extra_fields`` carries the group id
    (verl groups GRPO rows by ``uid``), status and step rewards.
    """
    rows = []
    for t in _members(groups, include_unusable):
        rows.append({
            "prompt_ids": list(t.prompt_ids),
            "response_ids": list(t.completion_ids),
            "response_mask": list(t.loss_mask),
            "response_logprobs": list(t.logprobs),
            "reward_score": t.reward,
            "num_turns": len(t.turns),
            "metrics": dict(t.metrics),
            "extra_fields": {"uid": t.group_id, "status": t.status, "step_rewards": list(t.step_rewards),
                             "task_id": t.task_id, "source": t.source},
        })
    return rows


def write_jsonl(groups: Iterable[RolloutGroup], path: str | Path) -> Path:
    """Write one group per line, atomically (temp file, then rename); return the path."""
    return write_jsonl_atomic(path, (group.to_dict() for group in groups))


def read_jsonl(path: str | Path) -> list[RolloutGroup]:
    """Groups written by :func:`write_jsonl`."""
    with open(path, encoding="utf-8") as handle:
        return [RolloutGroup.from_dict(json.loads(line)) for line in handle if line.strip()]
