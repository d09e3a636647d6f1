"""ECHO's entropy-confidence hybrid advantage shaping, as a token-credit producer for GRPO.

ECHO (Zhao et al., 2026, arXiv:2602.02150) reshapes GRPO's advantages with the tokens'
entropy and the rollout's confidence, to keep early, noisy rewards from sharpening the
policy too soon. The abstract names the ingredients, not the formula; this is our
parametrisation, written so that every factor can be checked by hand. For rollout ``i`` with
scalar advantage ``A_i`` and sampled token ``t``::

    h_hat_{i,t} = h_{i,t} / mean_t(h_{i,t})                      (relative entropy, mean 1 over the rollout)
    c_i         = exp(mean_t logprob_{i,t})                       (the rollout's confidence, in (0, 1])
    A_{i,t}     = A_i * clip(1 + alpha * (h_hat_{i,t} - 1), 1 - bound, 1 + bound) * damp_i
    damp_i      = 1 - gamma * c_i   when A_i > 0,   1 otherwise

``alpha`` moves credit onto the uncertain tokens (the decisions) and off the ones the
policy was sure of; ``gamma`` damps the reinforcement of a rollout the policy was already
confident in (the premature sharpening ECHO guards against); failures keep their full
penalty. ``alpha = gamma = 0`` is plain GRPO's broadcast exactly. Env tokens get 0.

Entropies: the trajectories' turns keep logprobs, not entropies, so ``h`` is the sampled
token's surprisal ``-logprob`` (a one-sample estimate of the entropy) unless ``entropies``
gives the exact ones per rollout (e.g. the agent's ``TurnRecord.output_entropies``).

Use it as the reference trainer's ``credit=`` producer, ``GRPOTrainer(..., credit=EchoShaping(alpha=0.5))``,
or turn its output into a tensor with :func:`rollgym.train.credit.to_tensor` for TRL or verl.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rollgym.core.errors import ConfigError
from rollgym.rollout.types import RolloutGroup, Trajectory
from rollgym.train.credit import TokenAdvantages, layout

__all__ = ["EchoShaping", "confidence_clip_high", "echo_advantages"]


def _sampled(traj: Trajectory) -> tuple[list[int], list[float]]:
    """Layout positions of the rollout's own sampled tokens (loss mask 1) and their logprobs."""
    positions: list[int] = []
    logprobs: list[float] = []
    mask = list(traj.loss_mask)
    for turn, (start, n, _) in zip(traj.turns, layout(traj)) if traj.turns else []:
        lps = list(turn.output_logprobs) if len(turn.output_logprobs) == n else [0.0] * n
        for j in range(n):
            if start + j < len(mask) and not mask[start + j]:
                continue  # a branch's shared prefix or an injected phrase: not this rollout's sample
            positions.append(start + j)
            logprobs.append(float(lps[j]))
    if not traj.turns:
        positions = [i for i, m in enumerate(mask) if m]
        logprobs = [float(traj.logprobs[i]) if i < len(traj.logprobs) else 0.0 for i in positions]
    return positions, logprobs


def echo_advantages(groups: Sequence[RolloutGroup], advantages: Mapping[str, float], *, alpha: float = 0.5,
                    gamma: float = 0.5, bound: float = 0.5,
                    entropies: Mapping[str, Sequence[float]] | None = None) -> TokenAdvantages:
    """Per-token advantages by ECHO's hybrid shaping (formula in the module docstring).

    ``entropies[traj_id]``, when given, has one entropy per sampled token of the rollout, in
    order (its shared prefix excluded); otherwise ``-logprob`` stands in.

    Example:
        >>> import math
        >>> from rollgym.rollout.types import Trajectory, Turn
        >>> turn = Turn(output_ids=[1, 2], output_logprobs=[math.log(0.5), math.log(0.5)])
        >>> t = Trajectory("t", "g", 0, "E-v0", None, None, completion_ids=[1, 2], loss_mask=[1, 1],
        ...                logprobs=turn.output_logprobs, turns=[turn], reward=1.0)
        >>> echo_advantages([RolloutGroup("g", None, 1, [t])], {"t": 1.0}, alpha=0.5, gamma=0.5,
        ...                 entropies={"t": [3.0, 1.0]})["t"]
        [0.9375, 0.5625]
    """
    if alpha < 0 or gamma < 0 or gamma > 1 or not 0 <= bound:
        raise ConfigError(f"alpha must be >= 0, gamma in [0, 1] and bound >= 0; got alpha={alpha}, gamma={gamma}, "
                          f"bound={bound}.")
    out: TokenAdvantages = {}
    for group in groups:
        for traj in group.usable():
            if traj.traj_id not in advantages:
                continue
            a = float(advantages[traj.traj_id])
            length = sum(n + m for _, n, m in layout(traj)) if traj.turns else len(traj.completion_ids)
            values = [0.0] * length
            positions, logprobs = _sampled(traj)
            if not positions:
                out[traj.traj_id] = values
                continue
            given = entropies.get(traj.traj_id) if entropies is not None else None
            h = [float(x) for x in given] if given is not None and len(given) == len(positions) else [
                -lp for lp in logprobs]
            mean_h = sum(h) / len(h)
            confidence = math.exp(sum(logprobs) / len(logprobs))
            damp = 1.0 - gamma * confidence if a > 0 else 1.0
            for pos, h_t in zip(positions, h):
                relative = h_t / mean_h if mean_h > 0 else 1.0
                weight = min(1.0 + bound, max(1.0 - bound, 1.0 + alpha * (relative - 1.0)))
                values[pos] = a * weight * damp
            out[traj.traj_id] = values
    return out


@dataclass(frozen=True)
class EchoShaping:
    """:func:`echo_advantages` as a ``credit=`` producer: ``credit(groups, advantages) -> TokenAdvantages``."""

    alpha: float = 0.5
    gamma: float = 0.5
    bound: float = 0.5

    def __call__(self, groups: Sequence[RolloutGroup], advantages: Mapping[str, float]) -> Any:
        return echo_advantages(groups, advantages, alpha=self.alpha, gamma=self.gamma, bound=self.bound)


def confidence_clip_high(old_logprobs: Any, mask: Any, clip_high: float, kappa: float) -> Any:
    """ECHO's confidence-adaptive clipping: a ``[batch, 1]`` upper clip ``clip_high * (1 - kappa * c_row)``.

    ``c_row`` is the row's confidence, ``exp`` of the mean behaviour logprob over its loss-mask
    tokens (1 for a row without any). A row the policy was already sure of gets a tighter upper
    bound on its ratio, so one step cannot sharpen it as far; an unsure row keeps nearly all of
    ``clip_high``. ``kappa = 0`` gives ``clip_high`` on every row.

    Example:
        >>> import math, torch
        >>> old = torch.tensor([[math.log(0.5), math.log(0.5)], [math.log(0.1), 0.0]])
        >>> high = confidence_clip_high(old, torch.tensor([[1, 1], [1, 0]]), 0.2, 0.5)
        >>> [round(x, 6) for x in high.flatten().tolist()]
        [0.15, 0.19]
    """
    import torch

    if not 0.0 <= kappa < 1.0:
        raise ConfigError(f"kappa must be in [0, 1), got {kappa!r}.")
    m = mask.to(old_logprobs.dtype)
    count = m.sum(-1, keepdim=True)
    mean = (old_logprobs * m).sum(-1, keepdim=True) / count.clamp(min=1.0)
    confidence = torch.where(count > 0, mean.exp(), torch.ones_like(mean))
    return clip_high * (1.0 - kappa * confidence)
