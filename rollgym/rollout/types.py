"""Rollout data: :class:`Turn`, :class:`Trajectory` and :class:`RolloutGroup`.

These are the records the collector produces and trainers, exporters and
metrics consume (see DESIGN.md, "Rollout data"). Token fields are plain lists of
ints and floats, empty for text-only agents (oracle, random, human); every
record converts to a JSON-safe dict and back without loss.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from rollgym.core.task import Task

Status = Literal["completed", "truncated", "aborted", "failed"]
STATUSES: tuple[str, ...] = ("completed", "truncated", "aborted", "failed")
UNUSABLE_STATUSES: frozenset[str] = frozenset({"failed", "aborted"})


#: Types that :func:`to_jsonable` returns unchanged (floats are checked for NaN and infinity).
_PLAIN: frozenset[type] = frozenset({str, int, bool, type(None)})


def to_jsonable(value: Any) -> Any:
    """Convert ``value`` into plain JSON types: dicts with string keys, lists, str, int, float, bool, None.

    numpy scalars and arrays become Python numbers and lists, tuples and sets become
    lists, dataclasses become dicts, and anything else becomes its ``repr``. Floats
    that JSON cannot hold (NaN, infinities) become ``None``. The conversion is
    idempotent, so a record equals itself after a trip through JSON.

    Example:
        >>> to_jsonable({"n": np.int64(3), "xs": (1.5, np.float32(2.0)), 4: {5}})
        {'n': 3, 'xs': [1.5, 2.0], '4': [5]}
    """
    kind = type(value)  # exact types first: infos are mostly plain dicts, lists, strings and numbers
    if kind is str or kind is bool or value is None:
        return value
    if kind is int:
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is dict:
        return {k if type(k) is str else str(k): v if type(v) in _PLAIN else to_jsonable(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [v if type(v) in _PLAIN else to_jsonable(v) for v in value]
    if isinstance(value, (str, bool)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, np.generic):
        return to_jsonable(value.item())
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        items = [to_jsonable(v) for v in value]
        try:
            return sorted(items)
        except TypeError:
            return sorted(items, key=repr)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(dataclasses.asdict(value))
    if hasattr(value, "to_dict"):
        return to_jsonable(value.to_dict())
    return repr(value)


def _ints(values: Any) -> list[int]:
    return list(map(int, values or ()))


def _floats(values: Any) -> list[float]:
    return list(map(float, values or ()))


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


@dataclass
class Turn:
    """One call of the policy inside an episode, and the env's answer to it.

    Attributes:
        prompt_ids: The full context the policy saw at this call (token ids).
        output_ids: The tokens the policy sampled.
        output_logprobs: The behaviour logprob of each sampled token; empty when unknown.
        obs_ids: The env's tokens appended after the output (tool results, next observation).
        reward: The reward ``env.step`` returned for this action.
        policy_version: The weights version that sampled the output (the oldest one, when a
            paused generation was resumed after an update); ``None`` for scripted agents.
        finish_reason: Why generation stopped (``"stop"``, ``"length"``, ``"tool"``, ``"abort"``);
            ``None`` for agents that do not generate tokens.

        output_versions: The weights version of each output token, only when they differ
            (a partial rollout resumed across an update); empty otherwise.

    Token lists are empty for text-only agents.
    """

    prompt_ids: list[int] = field(default_factory=list)
    output_ids: list[int] = field(default_factory=list)
    output_logprobs: list[float] = field(default_factory=list)
    obs_ids: list[int] = field(default_factory=list)
    reward: float | None = None
    policy_version: int | None = None
    finish_reason: str | None = None
    output_versions: list[int] = field(default_factory=list)

    def token_versions(self) -> list[int]:
        """The weights version of each output token; empty when the turn has no known version."""
        if self.output_versions and len(self.output_versions) == len(self.output_ids):
            return list(self.output_versions)
        if self.policy_version is None:
            return []
        return [self.policy_version] * len(self.output_ids)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict of the turn."""
        return {
            "prompt_ids": _ints(self.prompt_ids),
            "output_ids": _ints(self.output_ids),
            "output_logprobs": _floats(self.output_logprobs),
            "obs_ids": _ints(self.obs_ids),
            "reward": _optional_float(self.reward),
            "policy_version": None if self.policy_version is None else int(self.policy_version),
            "finish_reason": self.finish_reason,
            "output_versions": _ints(self.output_versions),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Turn:
        """Build a turn from :meth:`to_dict` output."""
        return cls(
            prompt_ids=_ints(data.get("prompt_ids")),
            output_ids=_ints(data.get("output_ids")),
            output_logprobs=_floats(data.get("output_logprobs")),
            obs_ids=_ints(data.get("obs_ids")),
            reward=_optional_float(data.get("reward")),
            policy_version=data.get("policy_version"),
            finish_reason=data.get("finish_reason"),
            output_versions=_ints(data.get("output_versions")),
        )


@dataclass
class Trajectory:
    """One episode of one agent on one task: what a trainer or an evaluation consumes.

    Attributes:
        traj_id: Unique id of this rollout, stable across a resumed run.
        group_id: Id of the :class:`RolloutGroup` (same task, same seed) it belongs to;
            explicit, never derived from prompt tokens.
        sample_idx: Position in the group, ``0 .. G-1``.
        source: ``"policy"``, ``"external:<name>"`` (e.g. a teacher's rollout) or ``"replay"``.
        env_id: The env id it was played on.
        task_id: The :attr:`Task.id` it played; ``None`` when the env failed before a task existed.
        seed: The seed given to ``env.reset``.
        prompt_ids: Tokens of the first prompt (the first turn's ``prompt_ids``).
        completion_ids: Everything after the prompt: each turn's output, then the env's tokens.
        loss_mask: One entry per completion token; 1 where the policy sampled it, 0 for env tokens.
        logprobs: One entry per completion token; the behaviour logprob, 0.0 where the mask is 0.
        reward: The episode return (sum of step rewards); ``None`` when the episode failed,
            so that a crash is never mistaken for a score of 0.
        step_rewards: The reward of every ``env.step``, in order.
        reward_components: Named parts of the reward, when the env reports them.
        status: ``"completed"`` (the env terminated), ``"truncated"`` (an env or collector cap),
            ``"aborted"`` (stopped by the collector, e.g. stale weights) or ``"failed"`` (an
            exception or timeout; ``info["error"]`` says which and why).
        turns: One :class:`Turn` per agent action.
        messages: The chat transcript: ``{"role": "system"|"user"|"assistant", "content": str}``.
        info: The final step's ``info`` (``correct``, ``parsed``, ``error``, ...), JSON-safe.
        metrics: Measurements: ``num_turns``, ``agent_s``, ``env_s`` (seconds).
        parent_id: For a branch of a tree rollout (:mod:`rollgym.rollout.branching`), the ``traj_id`` it
            was forked from; ``None`` for an ordinary rollout (or a tree's root).
        fork_turn: The turn the branch left its parent at (it redrew that turn's reply).
        fork_token: How many tokens of that reply it kept from the parent (0: the whole reply redrawn).
        shared_tokens: How many leading ``completion_ids`` it shares with its parent; ``loss_mask`` and
            ``logprobs`` are 0 over them, so a shared token is trained once, in the parent.
    """

    traj_id: str
    group_id: str
    sample_idx: int
    env_id: str
    task_id: str | None
    seed: int | None
    source: str = "policy"
    prompt_ids: list[int] = field(default_factory=list)
    completion_ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    reward: float | None = None
    step_rewards: list[float] = field(default_factory=list)
    reward_components: dict[str, float] = field(default_factory=dict)
    status: Status = "completed"
    turns: list[Turn] = field(default_factory=list)
    messages: list[dict[str, str]] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    parent_id: str | None = None
    fork_turn: int | None = None
    fork_token: int | None = None
    shared_tokens: int = 0

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"Trajectory.status must be one of {', '.join(STATUSES)}, got {self.status!r}.")
        if not (self.source == "policy" or self.source == "replay" or self.source.startswith("external:")):
            raise ValueError(f"Trajectory.source must be 'policy', 'replay' or 'external:<name>', got {self.source!r}.")
        if not (len(self.completion_ids) == len(self.loss_mask) == len(self.logprobs)):
            raise ValueError(
                "completion_ids, loss_mask and logprobs must have the same length, got "
                f"{len(self.completion_ids)}, {len(self.loss_mask)} and {len(self.logprobs)}."
            )

    @property
    def usable(self) -> bool:
        """Whether the rollout may be trained on or counted (not failed or aborted)."""
        return self.status not in UNUSABLE_STATUSES

    @property
    def correct(self) -> bool:
        """Whether the episode solved its task.

        The env's own verdict, ``info["correct"]``, which every env's terminal step
        reports (for games: the agent won; a draw is not correct). There is no
        fallback on the reward's sign: a rollout whose final info has no boolean
        ``correct`` (it was truncated before the end, or failed) is not correct.
        A failed or aborted rollout is never correct.
        """
        if not self.usable:
            return False
        return self.info.get("correct") is True

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict of the trajectory (numpy values converted); branch fields only for branches."""
        out = {
            "traj_id": self.traj_id,
            "group_id": self.group_id,
            "sample_idx": int(self.sample_idx),
            "source": self.source,
            "env_id": self.env_id,
            "task_id": self.task_id,
            "seed": None if self.seed is None else int(self.seed),
            "prompt_ids": _ints(self.prompt_ids),
            "completion_ids": _ints(self.completion_ids),
            "loss_mask": _ints(self.loss_mask),
            "logprobs": _floats(self.logprobs),
            "reward": _optional_float(self.reward),
            "step_rewards": _floats(self.step_rewards),
            "reward_components": {str(k): float(v) for k, v in self.reward_components.items()},
            "status": self.status,
            "turns": [t.to_dict() for t in self.turns],
            "messages": [{"role": str(m["role"]), "content": str(m["content"])} for m in self.messages],
            "info": to_jsonable(self.info),
            "metrics": to_jsonable(self.metrics),
        }
        if self.parent_id is not None:
            out |= {"parent_id": self.parent_id, "fork_turn": self.fork_turn, "fork_token": self.fork_token,
                    "shared_tokens": int(self.shared_tokens)}
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trajectory:
        """Build a trajectory from :meth:`to_dict` output."""
        return cls(
            traj_id=str(data["traj_id"]),
            group_id=str(data["group_id"]),
            sample_idx=int(data["sample_idx"]),
            source=str(data.get("source", "policy")),
            env_id=str(data["env_id"]),
            task_id=data.get("task_id"),
            seed=None if data.get("seed") is None else int(data["seed"]),
            prompt_ids=_ints(data.get("prompt_ids")),
            completion_ids=_ints(data.get("completion_ids")),
            loss_mask=_ints(data.get("loss_mask")),
            logprobs=_floats(data.get("logprobs")),
            reward=_optional_float(data.get("reward")),
            step_rewards=_floats(data.get("step_rewards")),
            reward_components={str(k): float(v) for k, v in (data.get("reward_components") or {}).items()},
            status=data.get("status", "completed"),
            turns=[Turn.from_dict(t) for t in data.get("turns") or []],
            messages=[dict(m) for m in data.get("messages") or []],
            info=dict(data.get("info") or {}),
            metrics=dict(data.get("metrics") or {}),
            parent_id=None if data.get("parent_id") is None else str(data["parent_id"]),
            fork_turn=None if data.get("fork_turn") is None else int(data["fork_turn"]),
            fork_token=None if data.get("fork_token") is None else int(data["fork_token"]),
            shared_tokens=int(data.get("shared_tokens") or 0),
        )


@dataclass
class RolloutGroup:
    """G rollouts of the same task with the same seed: the unit of GRPO-style advantages.

    Attributes:
        group_id: Unique id; every member trajectory carries it.
        task: The task the group played (``None`` when the env failed before drawing one).
        target_size: How many rollouts the group was meant to have (G).
        trajectories: The rollouts, ordered by ``sample_idx``; failed ones included.
        pseudo_label: A label inferred from the group itself (e.g. a majority vote), if any.

    Example:
        >>> g = RolloutGroup("g0", None, 2, [])
        >>> g.usable()
        []
    """

    group_id: str
    task: Task | None
    target_size: int
    trajectories: list[Trajectory] = field(default_factory=list)
    pseudo_label: Any = None

    def usable(self) -> list[Trajectory]:
        """The members that may be trained on or counted: failed and aborted rollouts dropped."""
        return [t for t in self.trajectories if t.usable]

    @property
    def complete(self) -> bool:
        """Whether the group holds its target number of rollouts."""
        return len(self.trajectories) >= self.target_size

    @property
    def rewards(self) -> list[float | None]:
        """Each member's reward in ``sample_idx`` order (``None`` for failed rollouts)."""
        return [t.reward for t in self.trajectories]

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict of the group."""
        return {
            "group_id": self.group_id,
            "task": None if self.task is None else to_jsonable(self.task.to_dict()),
            "target_size": int(self.target_size),
            "trajectories": [t.to_dict() for t in self.trajectories],
            "pseudo_label": to_jsonable(self.pseudo_label),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RolloutGroup:
        """Build a group from :meth:`to_dict` output."""
        task = data.get("task")
        return cls(
            group_id=str(data["group_id"]),
            task=None if task is None else Task.from_dict(task),
            target_size=int(data["target_size"]),
            trajectories=[Trajectory.from_dict(t) for t in data.get("trajectories") or []],
            pseudo_label=data.get("pseudo_label"),
        )
