"""The GRPO objective: PPO-style clipping against behaviour logprobs, token masks, optional KL.

For each completion token t with loss mask 1::

    ratio_t = exp(logp_new_t - logp_old_t)
    surrogate_t = min(ratio_t * A, clip(ratio_t, 1 - eps_low, 1 + eps_high) * A)
    kl_t = exp(logp_ref_t - logp_new_t) - (logp_ref_t - logp_new_t) - 1     (the k3 estimator)
    loss_t = -surrogate_t + beta * kl_t

``aggregation="token"`` averages over every masked token of the batch (DAPO,
Dr. GRPO); ``"sequence"`` averages within each sequence first (the original
GRPO), which weights short answers more.

On-policy distillation (``distill_coef > 0`` with ``teacher_logprobs``) adds a
reverse-KL-to-teacher term on the sampled tokens::

    d_t = stopgrad(logp_new_t - logp_teacher_t)        (a one-sample estimate of KL(student || teacher) at t)
    loss_t += distill_coef * ratio_t * d_t

whose gradient, on-policy (``ratio = 1``), is ``distill_coef * d_t * grad logp_new_t``:
the score-function gradient of the per-token reverse KL, as in on-policy
distillation. The teacher is another model or the same model given privileged
context (:mod:`rollgym.train.teacher`); ``distill_mask`` limits the term to the
rows that have a teacher.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Aggregation = Literal["token", "sequence"]


@dataclass(frozen=True)
class LossStats:
    """What one loss evaluation measured."""

    loss: float
    clip_fraction: float
    kl: float
    ratio_mean: float
    tokens: int
    distill: float = 0.0


def grpo_loss(
    new_logprobs: Any,
    old_logprobs: Any,
    advantages: Any,
    mask: Any,
    *,
    ref_logprobs: Any = None,
    clip_low: float = 0.2,
    clip_high: float = 0.2,
    beta: float = 0.0,
    aggregation: Aggregation = "token",
    teacher_logprobs: Any = None,
    distill_coef: float = 0.0,
    distill_mask: Any = None,
) -> tuple[Any, LossStats]:
    """The clipped GRPO loss over a padded batch.

    Args:
        new_logprobs, old_logprobs, mask: ``[batch, tokens]`` tensors (mask is 1 on policy tokens).
        advantages: ``[batch]`` (one per sequence) or ``[batch, tokens]``.
        ref_logprobs: ``[batch, tokens]`` reference-model logprobs, needed when ``beta > 0``.
        teacher_logprobs: ``[batch, tokens]`` teacher logprobs of the sampled tokens, needed when
            ``distill_coef > 0``.
        distill_mask: ``[batch, tokens]`` or ``[batch]``: where the distillation term applies
            (default: everywhere the loss mask is 1).

    Returns:
        The scalar loss tensor (differentiable) and its :class:`LossStats`.
    """
    import torch

    mask = mask.to(new_logprobs.dtype)
    adv = advantages if advantages.dim() == 2 else advantages.unsqueeze(-1).expand_as(new_logprobs)
    log_ratio = (new_logprobs - old_logprobs) * mask
    ratio = torch.exp(log_ratio)
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high) * adv
    per_token = -torch.minimum(unclipped, clipped)
    kl = torch.zeros_like(per_token)
    if beta > 0:
        if ref_logprobs is None:
            raise ValueError("beta > 0 needs ref_logprobs.")
        diff = (ref_logprobs - new_logprobs) * mask
        kl = torch.exp(diff) - diff - 1.0
        per_token = per_token + beta * kl
    distill = torch.zeros_like(per_token)
    if distill_coef > 0:
        if teacher_logprobs is None:
            raise ValueError("distill_coef > 0 needs teacher_logprobs.")
        where = mask if distill_mask is None else mask * (
            distill_mask if distill_mask.dim() == 2 else distill_mask.unsqueeze(-1)).to(mask.dtype)
        distill = (new_logprobs - teacher_logprobs).detach() * where
        per_token = per_token + distill_coef * ratio * distill
    tokens = mask.sum()
    if aggregation == "token":
        loss = (per_token * mask).sum() / tokens.clamp(min=1.0)
    elif aggregation == "sequence":
        per_seq = (per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)
        has_tokens = (mask.sum(-1) > 0).to(per_seq.dtype)
        loss = (per_seq * has_tokens).sum() / has_tokens.sum().clamp(min=1.0)
    else:
        raise ValueError(f"aggregation must be 'token' or 'sequence', got {aggregation!r}.")
    with torch.no_grad():
        was_clipped = (clipped < unclipped).to(mask.dtype) * mask  # the clipped branch won: no gradient
        denominator = float(tokens.clamp(min=1.0))
        stats = LossStats(
            loss=float(loss.detach()),
            clip_fraction=float(was_clipped.sum()) / denominator,
            kl=float((kl * mask).sum()) / denominator,
            ratio_mean=float((ratio * mask).sum()) / denominator,
            tokens=int(tokens),
            distill=float(distill.sum()) / denominator,
        )
    return loss, stats
