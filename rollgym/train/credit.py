"""Token-level credit: advantage producers that give every completion token its own advantage.

GRPO broadcasts one advantage over every token of a rollout. These producers
return :data:`TokenAdvantages`, one float per completion token of each rollout
(keyed by ``traj_id``, aligned with the rollout's turns laid out as
``output_0, obs_0, output_1, obs_1, ...``; env tokens get 0):

- :func:`broadcast`: the scalar advantage on every sampled token (plain GRPO).
- :func:`turn_advantages`: turn-level rewards in multi-turn envs. Each turn's tokens get
  the group-normalised *return to go* from that turn (the sum of the step rewards from
  that turn on), compared with the other rollouts of the group at the same turn.
- :func:`criterion_advantages` (CriPO-style per-criterion credit): with a score per
  rubric criterion and the tokens that serve each criterion, those tokens get the
  criterion's group-normalised advantage instead of the rollout's, so a criterion a
  failed rollout did satisfy is not suppressed by the scalar advantage.
- :func:`teacher_credit`: teacher-minus-student logprob differences. ``mode="add"`` is the
  on-policy distillation advantage ``A + coef * (log p_teacher - log p_student)``;
  ``mode="reweight"`` is SGCD's bounded credit weighting, ``A * (1 + clip(coef * sign(A) *
  (log p_teacher - log p_student), -bound, bound))``, which keeps the policy gradient in
  charge and only reshapes which tokens carry it.

:func:`to_tensor` turns any of them into a ``[batch, tokens]`` tensor for a TRL or verl
loss (verl's ``data.batch["advantages"]`` is exactly that shape over the response); the
reference trainer takes them through ``GRPOTrainer.step(groups, token_advantages=...)`` or a
``credit=`` producer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np

from rollgym.core.errors import ConfigError
from rollgym.rollout.types import RolloutGroup, Trajectory

TokenAdvantages = dict[str, list[float]]
Span = tuple[int, int]


def layout(traj: Trajectory) -> list[tuple[int, int, int]]:
    """Per turn: ``(start, n_output, n_obs)`` in the rollout's token layout (one pseudo-turn when it has no turns)."""
    if not traj.turns:
        return [(0, len(traj.completion_ids), 0)]
    out, start = [], 0
    for turn in traj.turns:
        out.append((start, len(turn.output_ids), len(turn.obs_ids)))
        start += len(turn.output_ids) + len(turn.obs_ids)
    return out


def layout_length(traj: Trajectory) -> int:
    """Tokens in the rollout's layout."""
    return sum(n + m for _, n, m in layout(traj))


def _sampled_mask(traj: Trajectory) -> list[int]:
    if not traj.turns:
        return list(traj.loss_mask)
    mask: list[int] = []
    for _, n, m in layout(traj):
        mask += [1] * n + [0] * m
    return mask


def broadcast(groups: Sequence[RolloutGroup], advantages: dict[str, float]) -> TokenAdvantages:
    """The scalar advantage of each rollout on each of its sampled tokens (0 on env tokens)."""
    out: TokenAdvantages = {}
    for group in groups:
        for traj in group.usable():
            if traj.traj_id in advantages:
                a = float(advantages[traj.traj_id])
                out[traj.traj_id] = [a * m for m in _sampled_mask(traj)]
    return out


def _normalise(values: list[float], scale: str, eps: float) -> list[float]:
    arr = np.array(values, dtype=np.float64)
    centred = arr - arr.mean()
    if scale == "group":
        centred = centred / (arr.std() + eps)
    return [float(v) for v in centred]


def turn_advantages(groups: Sequence[RolloutGroup], *, gamma: float = 1.0, scale: Literal["group", "none"] = "group",
                    eps: float = 1e-6) -> TokenAdvantages:
    """Turn-level credit from step rewards: turn ``t``'s tokens get the normalised return from turn ``t`` on.

    For rollout ``i`` and turn ``t``, ``G[i, t] = sum_k gamma**(k - t) * step_rewards[i][k]`` over the
    turns ``k >= t``; the advantage is ``G[i, t]`` centred (and with ``scale="group"`` scaled) over the
    group's rollouts that reached turn ``t``. With one turn per rollout this is GRPO.

    Example:
        >>> from rollgym.rollout.types import Turn
        >>> def t(i, rewards):
        ...     turns = [Turn(output_ids=[1, 2], obs_ids=[9]) for _ in rewards]
        ...     return Trajectory(f"t{i}", "g", i, "E-v0", "x", 0, step_rewards=rewards, reward=sum(rewards),
        ...                       turns=turns)
        >>> adv = turn_advantages([RolloutGroup("g", None, 2, [t(0, [1.0, 0.0]), t(1, [0.0, 0.0])])], scale="none")
        >>> adv["t0"]
        [0.5, 0.5, 0.0, 0.0, 0.0, 0.0]
    """
    if not 0.0 <= gamma <= 1.0:
        raise ConfigError(f"gamma must be in [0, 1], got {gamma}.")
    if scale not in ("group", "none"):
        raise ConfigError(f"scale must be 'group' or 'none', got {scale!r}.")
    out: TokenAdvantages = {}
    for group in groups:
        members = [t for t in group.usable() if t.reward is not None]
        returns: dict[str, list[float]] = {}
        for traj in members:
            rewards = list(traj.step_rewards) or [float(traj.reward or 0.0)]
            n_turns = len(layout(traj))
            rewards = (rewards + [0.0] * n_turns)[:n_turns] if traj.turns else [float(sum(rewards))]
            g, acc = [0.0] * len(rewards), 0.0
            for k in range(len(rewards) - 1, -1, -1):
                acc = rewards[k] + gamma * acc
                g[k] = acc
            returns[traj.traj_id] = g
        per_turn: dict[str, list[float]] = {t.traj_id: [] for t in members}
        depth = max((len(g) for g in returns.values()), default=0)
        for k in range(depth):
            reached = [t for t in members if len(returns[t.traj_id]) > k]
            normed = _normalise([returns[t.traj_id][k] for t in reached], scale, eps)
            for traj, value in zip(reached, normed):
                per_turn[traj.traj_id].append(value)
        for traj in members:
            tokens: list[float] = []
            for (_, n, m), value in zip(layout(traj), per_turn[traj.traj_id]):
                tokens += [value] * n + [0.0] * m
            out[traj.traj_id] = tokens
    return out


def criterion_advantages(
    groups: Sequence[RolloutGroup],
    base: dict[str, float],
    locate: Callable[[Trajectory, str], Sequence[Span]],
    *,
    scores: Callable[[Trajectory], dict[str, float]] | None = None,
    scale: Literal["group", "none"] = "group",
    eps: float = 1e-6,
) -> TokenAdvantages:
    """Per-criterion credit (CriPO-style): the tokens that serve a criterion get that criterion's advantage.

    Args:
        base: The rollouts' scalar advantages (e.g. :func:`~rollgym.train.advantages.group_advantages`),
            kept on tokens that serve no criterion.
        locate: ``locate(traj, criterion)`` gives the ``[start, end)`` token spans (in the layout of
            :func:`layout`) that serve ``criterion``, e.g. the turn that made the checked change.
        scores: Each rollout's score per criterion, in ``[0, 1]``; default ``traj.reward_components``.

    A criterion's advantage is its score centred (and scaled) over the group; a token in several
    criteria's spans gets their mean. So a criterion a negative-advantage rollout satisfied (a
    "suppressed criterion") keeps a positive advantage on its own tokens.
    """
    read = scores or (lambda t: dict(t.reward_components))
    out = broadcast(groups, base)
    for group in groups:
        members = [t for t in group.usable() if t.traj_id in out]
        table = {t.traj_id: read(t) for t in members}
        sums = {t.traj_id: [0.0] * len(out[t.traj_id]) for t in members}
        counts = {t.traj_id: [0] * len(out[t.traj_id]) for t in members}
        for name in sorted({name for row in table.values() for name in row}):
            values = [float(table[t.traj_id].get(name, 0.0)) for t in members]
            if len(set(values)) < 2:
                continue  # no rollout differs on this criterion: it carries no credit
            for traj, value in zip(members, _normalise(values, scale, eps)):
                sampled = _sampled_mask(traj)
                for start, end in locate(traj, name):
                    for j in range(max(0, start), min(end, len(sampled))):
                        if sampled[j]:
                            sums[traj.traj_id][j] += value
                            counts[traj.traj_id][j] += 1
        for traj in members:
            tokens = out[traj.traj_id]
            for j, n in enumerate(counts[traj.traj_id]):
                if n:
                    tokens[j] = sums[traj.traj_id][j] / n
    return out


def teacher_credit(
    advantages: TokenAdvantages,
    student_logprobs: dict[str, list[float]],
    teacher_logprobs: dict[str, list[float]],
    *,
    mode: Literal["add", "reweight"] = "reweight",
    coef: float = 1.0,
    bound: float = 0.5,
) -> TokenAdvantages:
    """Reshape token advantages with teacher-minus-student logprob differences (detached).

    Args:
        advantages: Token advantages to reshape (e.g. :func:`broadcast`); rollouts without teacher
            logprobs are returned unchanged.
        student_logprobs, teacher_logprobs: Per rollout, one logprob per layout token (0 where not sampled).
        mode: ``"add"``: ``A + coef * (t - s)`` (on-policy distillation as a reward);
            ``"reweight"``: ``A * (1 + clip(coef * sign(A) * (t - s), -bound, bound))`` (SGCD).
        coef, bound: Scale of the difference, and the clip of the reweighting.

    Example:
        >>> teacher_credit({"a": [1.0, 1.0]}, {"a": [-2.0, -1.0]}, {"a": [-1.0, -3.0]})["a"]
        [1.5, 0.5]
    """
    if mode not in ("add", "reweight"):
        raise ConfigError(f"mode must be 'add' or 'reweight', got {mode!r}.")
    out: TokenAdvantages = {}
    for key, values in advantages.items():
        s, t = student_logprobs.get(key), teacher_logprobs.get(key)
        if s is None or t is None:
            out[key] = list(values)
            continue
        new = []
        for j, a in enumerate(values):
            diff = (t[j] - s[j]) if j < len(s) and j < len(t) else 0.0
            if mode == "add":
                new.append(a + coef * diff)
            else:
                weight = 1.0 + float(np.clip(coef * np.sign(a) * diff, -bound, bound))
                new.append(a * weight)
        out[key] = new
    return out


def to_tensor(values: Sequence[Sequence[float]], width: int | None = None) -> Any:
    """Right-padded ``[batch, width]`` float tensor of per-token values (zeros beyond each row).

    Example:
        >>> to_tensor([[1.0, 2.0], [3.0]]).tolist()
        [[1.0, 2.0], [3.0, 0.0]]
    """
    import torch

    width = width if width is not None else max((len(v) for v in values), default=0)
    out = torch.zeros((len(values), width), dtype=torch.float32)
    for i, row in enumerate(values):
        n = min(len(row), width)
        if n:
            out[i, :n] = torch.tensor(list(row)[:n], dtype=torch.float32)
    return out


def rollout_tensor(groups: Sequence[RolloutGroup], token_advantages: TokenAdvantages) -> tuple[Any, Any, list[str]]:
    """``(advantages [B, T], response_mask [B, T], traj_ids)`` over the usable rollouts with token advantages.

    The rows follow ``completion_ids`` of each rollout (the layout of :func:`layout` for rollouts
    whose turns make up their completion), which is what verl's ``response_ids`` and TRL's
    ``completion_ids`` hold for rollouts exported by rollgym.
    """
    rows, masks, ids = [], [], []
    for group in groups:
        for traj in group.usable():
            if traj.traj_id not in token_advantages:
                continue
            values = token_advantages[traj.traj_id][: len(traj.completion_ids)]
            rows.append(values + [0.0] * (len(traj.completion_ids) - len(values)))
            masks.append([float(m) for m in traj.loss_mask])
            ids.append(traj.traj_id)
    return to_tensor(rows), to_tensor(masks), ids


def teacher_credit_tensor(advantages: Any, student_logprobs: Any, teacher_logprobs: Any, mask: Any, *,
                          mode: str = "reweight", coef: float = 1.0, bound: float = 0.5) -> Any:
    """:func:`teacher_credit` on tensors: ``[B]`` or ``[B, T]`` advantages, ``[B, T]`` logprobs and mask -> ``[B, T]``.

    The logprob difference is detached; tokens where ``mask`` is 0 keep the (broadcast) advantage.
    """
    import torch

    if mode not in ("add", "reweight"):
        raise ConfigError(f"mode must be 'add' or 'reweight', got {mode!r}.")
    adv = advantages if advantages.dim() == 2 else advantages.unsqueeze(-1).expand_as(student_logprobs)
    diff = ((teacher_logprobs - student_logprobs) * mask).detach()
    if mode == "add":
        return adv + coef * diff
    weight = 1.0 + torch.clamp(coef * torch.sign(adv) * diff, -bound, bound)
    return adv * weight
