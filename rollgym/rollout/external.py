"""External rollouts (ERILS): a stronger policy's rollouts added to on-policy groups, with length control.

ERILS (External Rollout Integration with Length control and Source-specific
processing) adds higher-reward rollouts of a stronger external policy to the
on-policy groups of RL training, controls their length, and processes the rewards
of the two sources separately. rollgym splits that in two:

- :func:`mix_external` (here) builds the groups: it adds an external rollout to a
  group when it beats the group (``only_if_better``), after length control:

  * ``length="truncate"`` cuts it to the on-policy token budget and **re-scores the
    cut text** with ``rescore`` (an :class:`EnvRescorer` replays the cut actions on
    the task through the env's own verifier), so a cut answer earns only what the
    cut text earns. Without a rescorer, a rollout that loses any sampled token to the
    cut earns 0: text nobody verified is worth nothing.
  * ``length="select"`` keeps only external rollouts that fit the budget whole.
  * ``length="none"`` keeps them whole (the uncontrolled ablation).

- :func:`rollgym.train.advantages.group_advantages` processes the rewards:
  ``by_source=True`` (ERILS) normalises on-policy rollouts by their own group and
  baselines external rollouts against the *on-policy* group's statistics, so an
  external rollout that beats the on-policy mean gets a positive advantage even
  when every on-policy rollout failed; ``by_source=False`` pools both sources (the
  joint-processing ablation the paper reports collapsing).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from rollgym.core.errors import ConfigError
from rollgym.core.task import Task
from rollgym.rollout.types import RolloutGroup, Trajectory, Turn

Length = Literal["none", "truncate", "select"]


@dataclass(frozen=True)
class Rescore:
    """What a cut rollout earns: its reward, whether it still solves the task, and how that was decided."""

    reward: float
    correct: bool
    details: dict[str, Any] = field(default_factory=dict)


class Rescorer(Protocol):
    """Scores a cut rollout (``traj`` already cut) on ``task``."""

    def __call__(self, traj: Trajectory, task: Task | None) -> Rescore: ...


def completion_tokens(traj: Trajectory) -> int:
    """The rollout's completion length in tokens (its turns' outputs when it has no flat completion)."""
    return len(traj.completion_ids) or sum(len(t.output_ids) for t in traj.turns)


def _flat_layout(traj: Trajectory) -> bool:
    """Whether ``completion_ids`` is every turn's output then env tokens, in order (not per-turn rows)."""
    if not traj.turns or traj.metrics.get("per_turn_rows"):
        return False
    return sum(len(t.output_ids) + len(t.obs_ids) for t in traj.turns) == len(traj.completion_ids)


def cut_turns(traj: Trajectory, max_tokens: int) -> tuple[list[Turn], bool]:
    """The turns that fit in ``max_tokens`` completion tokens (the last one cut); whether a sampled token was cut."""
    kept: list[Turn] = []
    left = max_tokens
    for turn in traj.turns:
        n_out = len(turn.output_ids)
        if left >= n_out:
            obs = turn.obs_ids[: max(0, left - n_out)]
            kept.append(dataclasses.replace(turn, obs_ids=list(obs)))
            left -= n_out + len(turn.obs_ids)
            if left < 0:
                return kept, any(t.output_ids for t in traj.turns[len(kept):])
            continue
        if left > 0:
            kept.append(dataclasses.replace(
                turn, output_ids=turn.output_ids[:left], output_logprobs=turn.output_logprobs[:left],
                output_versions=turn.output_versions[:left], obs_ids=[], finish_reason="length"))
        return kept, True
    return kept, False


def cut_trajectory(traj: Trajectory, max_tokens: int) -> tuple[Trajectory, bool]:
    """``traj`` cut to ``max_tokens`` completion tokens (reward untouched), and whether sampled text was cut."""
    n = completion_tokens(traj)
    if n <= max_tokens:
        return traj, False
    turns, cut_sampled = cut_turns(traj, max_tokens) if traj.turns else ([], False)
    if traj.turns and not _flat_layout(traj):  # per-turn rows: the completion is the last kept turn's output
        last = turns[-1] if turns else Turn()
        completion = list(last.output_ids)
        mask, logprobs = [1] * len(completion), list(last.output_logprobs) or [0.0] * len(completion)
    else:
        completion, mask, logprobs = (traj.completion_ids[:max_tokens], traj.loss_mask[:max_tokens],
                                      traj.logprobs[:max_tokens])
        if not traj.turns:
            cut_sampled = any(traj.loss_mask[max_tokens:])
    return dataclasses.replace(
        traj, completion_ids=list(completion), loss_mask=list(mask), logprobs=list(logprobs),
        turns=turns if traj.turns else [], status="truncated",
        messages=_cut_messages(traj.messages, len(turns)) if traj.turns else list(traj.messages),
        metrics={**traj.metrics, "truncated_from": n},
    ), cut_sampled


def _cut_messages(messages: list[dict[str, str]], kept_turns: int) -> list[dict[str, str]]:
    """The transcript up to the ``kept_turns``-th assistant message (its text may be longer than the cut)."""
    out, seen = [], 0
    for message in messages:
        if message.get("role") == "assistant":
            seen += 1
            if seen > kept_turns:
                break
        out.append(dict(message))
    return out


def truncate_trajectory(traj: Trajectory, max_tokens: int, *, rescore: Rescorer | None = None,
                        task: Task | None = None) -> Trajectory:
    """A copy of ``traj`` cut to ``max_tokens`` completion tokens, marked ``truncated``, and re-scored.

    The cut rollout earns what the cut text earns: ``rescore`` (e.g. :class:`EnvRescorer`) replays it
    on ``task`` through the env's verifier. Without a rescorer, a cut that removed any sampled token
    earns 0 (unverified text earns nothing); a cut of env tokens only keeps the reward.
    ``metrics["truncated_from"]`` records the original length and ``metrics["reward_before_cut"]``
    the original reward. A rollout that already fits is returned unchanged.

    Example:
        >>> t = Trajectory("t", "g", 0, "E-v0", "t", 0, completion_ids=[1, 2, 3], loss_mask=[1, 1, 1],
        ...                logprobs=[0.0] * 3, reward=1.0)
        >>> truncate_trajectory(t, 2).reward
        0.0
    """
    if max_tokens < 0:
        raise ConfigError(f"max_tokens must be >= 0, got {max_tokens}.")
    cut, cut_sampled = cut_trajectory(traj, max_tokens)
    if cut is traj:
        return traj
    metrics = {**cut.metrics, "reward_before_cut": traj.reward}
    info = dict(cut.info)
    reward: float | None
    if rescore is not None:
        result = rescore(cut, task)
        reward, correct = float(result.reward), bool(result.correct)
        metrics["rescored"] = "env"
        info["rescore"] = dict(result.details)
    elif cut_sampled:
        reward, correct = 0.0, False
        metrics["rescored"] = "unverified_cut"
    else:
        reward, correct = traj.reward, traj.correct
        metrics["rescored"] = "env_tokens_only"
    info["correct"] = correct
    return dataclasses.replace(cut, reward=reward, step_rewards=[] if reward is None else [reward],
                               info=info, metrics=metrics)


class EnvRescorer:
    """Re-scores a (cut) rollout by replaying its actions on its task through the env's own verifier.

    Each kept turn's sampled tokens are decoded (as the agent decoded them) and stepped, on a fresh
    env reset to the task with the rollout's seed. When the cut removed the final action, the
    episode never ends and the rollout earns only the step rewards it reached (0 for single-turn envs).

    Args:
        env_id: The registered id the rollouts were played on.
        tokenizer: Decodes token ids back to the agent's text.
        env_kwargs: The env's constructor arguments.

    Example:
        >>> rescore = EnvRescorer("Countdown-v0", tokenizer)  # doctest: +SKIP
        >>> truncate_trajectory(external, 12, rescore=rescore, task=group.task).reward  # doctest: +SKIP
        0.0
    """

    def __init__(self, env_id: str, tokenizer: Any, *, env_kwargs: dict[str, Any] | None = None) -> None:
        self.env_id = env_id
        self.tokenizer = tokenizer
        self.env_kwargs = dict(env_kwargs or {})

    def actions(self, traj: Trajectory) -> list[str]:
        """The agent's action texts, decoded from the (cut) rollout's sampled tokens."""
        if traj.turns:
            return [self.tokenizer.decode(t.output_ids, skip_special_tokens=True) for t in traj.turns]
        sampled = [i for i, m in zip(traj.completion_ids, traj.loss_mask) if m]
        return [self.tokenizer.decode(sampled, skip_special_tokens=True)]

    def __call__(self, traj: Trajectory, task: Task | None) -> Rescore:
        """Replay ``traj``'s actions on ``task`` and return what they earn."""
        from rollgym.core.registration import make

        if task is None:
            raise ConfigError("EnvRescorer needs the rollout's task; pass task= (mix_external passes group.task).")
        env = make(self.env_id, **self.env_kwargs)
        total, correct, ended, steps = 0.0, False, False, 0
        try:
            env.reset(seed=traj.seed, options={"task": task})
            for action in self.actions(traj):
                _, reward, terminated, truncated, info = env.step(action)
                total += float(reward)
                steps += 1
                if terminated or truncated:
                    ended = True
                    correct = bool(info.get("correct", False))
                    break
        finally:
            env.close()
        return Rescore(total, correct and ended, {"steps": steps, "episode_ended": ended})


def _budget(group: RolloutGroup, budget: int | Literal["max", "mean"]) -> int:
    if isinstance(budget, int):
        return budget
    lengths = [completion_tokens(t) for t in group.usable() if t.source in ("policy", "replay")] or [0]
    return max(lengths) if budget == "max" else int(sum(lengths) / len(lengths))


def mix_external(
    groups: Sequence[RolloutGroup],
    external: dict[str, list[Trajectory]],
    *,
    per_group: int = 1,
    only_if_better: bool = True,
    length: Length = "truncate",
    budget: int | Literal["max", "mean"] = "max",
    rescore: Rescorer | None = None,
    replace_worst: bool = False,
) -> list[RolloutGroup]:
    """Add external rollouts to on-policy groups (keyed by ``task_id``); returns new groups.

    Args:
        external: Rollouts of a stronger policy per task id; their ``source`` is set to
            ``"external:teacher"`` unless it already names an external source.
        per_group: Most external rollouts added to one group.
        only_if_better: Add an external rollout only when its reward, after length control,
            beats the group's best on-policy reward.
        length: ``"truncate"``, ``"select"`` or ``"none"`` (see the module docstring).
        budget: The on-policy length budget: a token count, or the group's ``"max"`` or ``"mean"``
            on-policy completion length.
        rescore: Re-scores cut rollouts (``length="truncate"``); see :func:`truncate_trajectory`.
        replace_worst: Replace the lowest-reward on-policy members instead of growing the group.

    Each added rollout records ``metrics["length_control"]`` (``"fit"``, ``"truncated"`` or ``"none"``).
    """
    if length not in ("none", "truncate", "select"):
        raise ConfigError(f"length must be 'none', 'truncate' or 'select', got {length!r}.")
    mixed = []
    for group in groups:
        task_id = group.task.id if group.task is not None else next(
            (t.task_id for t in group.trajectories if t.task_id), None)
        own = [t for t in group.usable() if t.source in ("policy", "replay")]
        best = max((t.reward for t in own if t.reward is not None), default=float("-inf"))
        limit = _budget(group, budget)
        chosen: list[Trajectory] = []
        for ext in sorted(external.get(task_id or "", []), key=lambda t: -(t.reward or 0.0)):
            if len(chosen) >= per_group:
                break
            fits = completion_tokens(ext) <= limit
            if length == "select" and not fits:
                continue
            control = "none" if length == "none" else ("fit" if fits else "truncated")
            if length == "truncate":
                ext = truncate_trajectory(ext, limit, rescore=rescore, task=group.task)
            if only_if_better and (ext.reward is None or ext.reward <= best):
                continue
            source = ext.source if ext.source.startswith("external:") else "external:teacher"
            chosen.append(dataclasses.replace(ext, source=source, group_id=group.group_id,
                                              metrics={**ext.metrics, "length_control": control}))
        members = list(group.trajectories)
        if replace_worst and chosen:
            ranked = sorted(members, key=lambda t: (t.usable, t.reward if t.reward is not None else -1e18))
            drop = {t.traj_id for t in ranked[: len(chosen)]}
            members = [t for t in members if t.traj_id not in drop]
        start = max((t.sample_idx for t in members), default=-1) + 1
        for i, ext in enumerate(chosen):
            members.append(dataclasses.replace(ext, sample_idx=start + i, traj_id=f"{group.group_id}-ext{i}"))
        mixed.append(dataclasses.replace(group, trajectories=members,
                                         target_size=max(group.target_size, len(members))))
    return mixed
