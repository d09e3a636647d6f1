"""The GRPO objective: PPO-style clipping against behaviour logprobs, token masks, optional KL.

For each completion token t with loss mask 1::

    ratio_t = exp(logp_new_t - logp_old_t)
    surrogate_t = min(ratio_t * A, clip(ratio_t, 1 - eps_low, 1 + eps_high) * A)
    kl_t = exp(logp_ref_t - logp_new_t) - (logp_ref_t - logp_new_t) - 1     (the k3 estimator)
    loss_t = -surrogate_t + beta * kl_t

``aggregation="token"`` averages over every masked token of the batch (DAPO,
Dr. GRPO); ``"sequence"`` averages within each sequence first (the original
GRPO), which weights short answers more.

Truncated importance sampling (``tis_cap=C``), for rollouts whose logprobs come from
other weights or kernels than the trainer's (int8 rollouts,
:mod:`rollgym.agents.backends.quantized`; another inference engine): with
``logp_train`` the trainer's logprobs of the sampled tokens at the weights the rollout
was meant to come from (by default ``logp_new`` detached, which they are in a trainer
that makes one update per batch, as :class:`~rollgym.train.grpo.GRPOTrainer` does)::

    w_t = min(exp(logp_train_t - logp_old_t), C)          (detached: a weight, not a gradient path)
    ratio_t = exp(logp_new_t - logp_train_t)              (PPO ratio against the trainer's own logprobs)
    surrogate_t = w_t * min(ratio_t * A, clip(ratio_t, 1 - eps_low, 1 + eps_high) * A)

(Yao et al. 2025, "Your efficient RL framework secretly brings you off-policy RL
training"). Without ``tis_cap`` the ratio is taken against the behaviour logprobs, so
the mismatch enters the PPO ratio itself, and a token whose mismatch ratio leaves the
clip range loses its gradient; with it, the mismatch is a separate weight, truncated
at ``C`` so that a few tokens the rollout model found much less likely than the
trainer cannot dominate the batch. The KL and distillation terms are not weighted.

Distillation from a teacher (another model, or the same model given privileged
context, :mod:`rollgym.train.teacher`) adds up to two per-token terms, limited by
``distill_mask`` to the rows (or tokens) that have a teacher:

* the **sampled-token reverse KL** (``distill_reverse_kl > 0`` with ``teacher_logprobs``)::

      d_t = stopgrad(logp_new_t - logp_teacher_t)    (a one-sample estimate of KL(student || teacher) at t)
      loss_t += distill_reverse_kl * ratio_t * d_t

  whose gradient, on-policy (``ratio = 1``), is ``distill_reverse_kl * d_t * grad logp_new_t``: the
  score-function gradient of the per-token reverse KL. This is on-policy distillation with the
  reverse KL (GKD, Agarwal et al., 2024), estimated from the sampled token alone, so it needs
  only the teacher's logprob of that token. It is not the objective of Search-E1 or CriPO.
* the **forward KL over the teacher's top-k** (``distill_forward_kl > 0`` with ``forward_kl``, the
  per-token values of :func:`forward_kl_top_k`)::

      loss_t += distill_forward_kl * KL_k(teacher_t || student_t)

  differentiated directly (it is an exact sum over tokens, no sampling). This is the token-level
  forward KL of Search-E1's on-policy self-distillation; limited by ``distill_mask`` to the
  tokens a criterion marks, it is CriPO's localized forward KL.

:func:`forward_kl_top_k` coarse-grains both distributions to the teacher's ``k`` most likely
tokens plus one bucket holding all the other tokens' mass (the teacher's mass outside its top-k
is lumped, not dropped and not renormalised away). By the chain rule of KL, the result is never
above the full-vocabulary forward KL, and falls short of it by exactly
``p_teacher(rest) * KL(teacher(.|rest) || student(.|rest))``; its gradient with respect to the
student's logits differs from the exact one by at most ``2 * p_teacher(rest)`` in L1 norm.
With ``k`` equal to the vocabulary it is the exact forward KL.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from rollgym.core.deprecation import renamed

Aggregation = Literal["token", "sequence"]


@dataclass(frozen=True)
class LossStats:
    """What one loss evaluation measured.

    ``reverse_kl`` and ``forward_kl`` are the per-token means of the two distillation terms
    (before their weights), ``distill`` their sum. With ``tis_cap``, ``tis_weight`` is the mean
    truncated importance weight and ``tis_truncated`` the share of tokens the cap truncated
    (both 0 without it).
    """

    loss: float
    clip_fraction: float
    kl: float
    ratio_mean: float
    tokens: int
    distill: float = 0.0
    reverse_kl: float = 0.0
    forward_kl: float = 0.0
    tis_weight: float = 0.0
    tis_truncated: float = 0.0


def grpo_loss(
    new_logprobs: Any,
    old_logprobs: Any,
    advantages: Any,
    mask: Any,
    *,
    ref_logprobs: Any = None,
    clip_low: Any = 0.2,
    clip_high: Any = 0.2,
    beta: float = 0.0,
    aggregation: Aggregation = "token",
    teacher_logprobs: Any = None,
    distill_reverse_kl: float = 0.0,
    distill_mask: Any = None,
    forward_kl: Any = None,
    distill_forward_kl: float = 0.0,
    distill_coef: float | None = None,
    tis_cap: float | None = None,
    train_logprobs: Any = None,
) -> tuple[Any, LossStats]:
    """The clipped GRPO loss over a padded batch.

    Args:
        new_logprobs, old_logprobs, mask: ``[batch, tokens]`` tensors (mask is 1 on policy tokens).
        advantages: ``[batch]`` (one per sequence) or ``[batch, tokens]``.
        ref_logprobs: ``[batch, tokens]`` reference-model logprobs, needed when ``beta > 0``.
        clip_low, clip_high: The clip range ``[1 - clip_low, 1 + clip_high]``: floats, or ``[batch, 1]``
            tensors for a range per row (:func:`rollgym.train.echo.confidence_clip_high`).
        teacher_logprobs: ``[batch, tokens]`` teacher logprobs of the sampled tokens, needed when
            ``distill_reverse_kl > 0``.
        distill_reverse_kl: Weight of the sampled-token reverse KL to the teacher.
        distill_mask: ``[batch, tokens]`` or ``[batch]``: where the distillation terms apply
            (default: everywhere the loss mask is 1).
        forward_kl: ``[batch, tokens]`` per-token forward KL to the teacher (:func:`forward_kl_top_k`),
            needed when ``distill_forward_kl > 0``.
        distill_forward_kl: Weight of the forward-KL term.
        distill_coef: Deprecated name of ``distill_reverse_kl``.
        tis_cap: ``C`` of truncated importance sampling (see the module docstring); ``None`` disables it.
        train_logprobs: ``[batch, tokens]`` the trainer's logprobs of the sampled tokens at the rollout's
            weights, for ``tis_cap`` (default: ``new_logprobs`` detached).

    Returns:
        The scalar loss tensor (differentiable) and its :class:`LossStats`.
    """
    import torch

    if distill_coef is not None:
        renamed("grpo_loss", "distill_coef", "distill_reverse_kl")
        distill_reverse_kl = distill_coef
    mask = mask.to(new_logprobs.dtype)
    adv = advantages if advantages.dim() == 2 else advantages.unsqueeze(-1).expand_as(new_logprobs)
    tis = torch.ones_like(new_logprobs)
    anchor = old_logprobs
    if tis_cap is not None:
        if tis_cap <= 0:
            raise ValueError(f"tis_cap must be positive, got {tis_cap}.")
        anchor = (new_logprobs if train_logprobs is None else train_logprobs).detach()
        tis = torch.clamp(torch.exp((anchor - old_logprobs) * mask), max=tis_cap).detach()
    log_ratio = (new_logprobs - anchor) * mask
    ratio = torch.exp(log_ratio)
    unclipped = ratio * adv
    low: Any = 1.0 - clip_low
    high: Any = 1.0 + clip_high
    if torch.is_tensor(low) or torch.is_tensor(high):  # per-row ranges (ECHO's confidence-adaptive clipping)
        low, high = torch.as_tensor(low, dtype=ratio.dtype), torch.as_tensor(high, dtype=ratio.dtype)
    clipped = torch.clamp(ratio, low, high) * adv
    per_token = -tis * torch.minimum(unclipped, clipped)
    kl = torch.zeros_like(per_token)
    if beta > 0:
        if ref_logprobs is None:
            raise ValueError("beta > 0 needs ref_logprobs.")
        diff = (ref_logprobs - new_logprobs) * mask
        kl = torch.exp(diff) - diff - 1.0
        per_token = per_token + beta * kl
    where = mask if distill_mask is None else mask * (
        distill_mask if distill_mask.dim() == 2 else distill_mask.unsqueeze(-1)).to(mask.dtype)
    reverse = torch.zeros_like(per_token)
    if distill_reverse_kl > 0:
        if teacher_logprobs is None:
            raise ValueError("distill_reverse_kl > 0 needs teacher_logprobs.")
        reverse = (new_logprobs - teacher_logprobs).detach() * where
        per_token = per_token + distill_reverse_kl * ratio * reverse
    forward = torch.zeros_like(per_token)
    if distill_forward_kl > 0:
        if forward_kl is None:
            raise ValueError("distill_forward_kl > 0 needs forward_kl (see forward_kl_top_k).")
        forward = forward_kl * where
        per_token = per_token + distill_forward_kl * forward
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
            distill=float((reverse + forward).sum()) / denominator,
            reverse_kl=float(reverse.sum()) / denominator,
            forward_kl=float(forward.sum()) / denominator,
            tis_weight=float((tis * mask).sum()) / denominator if tis_cap is not None else 0.0,
            tis_truncated=float(((tis >= tis_cap).to(mask.dtype) * mask).sum()) / denominator
            if tis_cap is not None else 0.0,
        )
    return loss, stats


@dataclass(frozen=True)
class TopK:
    """A next-token distribution cut to its ``k`` most likely tokens at every position.

    Attributes:
        ids: ``[batch, tokens, k]`` token ids, most likely first.
        logprobs: ``[batch, tokens, k]`` their log-probabilities (under the full distribution).
        rest: ``[batch, tokens]`` log of the mass of every other token (``-inf`` when ``k`` is the vocabulary).
    """

    ids: Any
    logprobs: Any
    rest: Any


def top_k(distributions: Any, k: int) -> TopK:
    """The :class:`TopK` of ``[batch, tokens, vocab]`` log-probabilities (``k`` is capped at the vocabulary).

    Example:
        >>> import torch
        >>> cut = top_k(torch.log(torch.tensor([[[0.1, 0.6, 0.3]]])), 2)
        >>> cut.ids.tolist(), round(float(cut.rest.exp()), 6)
        ([[[1, 2]]], 0.1)
    """
    import torch

    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}.")
    vocab = distributions.shape[-1]
    logprobs, ids = distributions.topk(min(k, vocab), dim=-1)
    if ids.shape[-1] == vocab:
        rest = torch.full(distributions.shape[:-1], float("-inf"), dtype=distributions.dtype)
    else:
        rest = torch.logsumexp(distributions.scatter(-1, ids, float("-inf")), dim=-1)
    return TopK(ids, logprobs, rest)


def forward_kl_top_k(student: Any, teacher: TopK) -> Any:
    """Per-token forward KL(teacher || student) over the teacher's top-k plus one bucket for the rest.

    Args:
        student: ``[batch, tokens, vocab]`` student log-probabilities (differentiable).
        teacher: The teacher's :class:`TopK` at the same positions.

    Returns:
        ``[batch, tokens]``: ``sum_i p_t(i) (log p_t(i) - log p_s(i)) + p_t(rest) (log p_t(rest) - log p_s(rest))``
        over the teacher's top-k tokens ``i``, where ``rest`` is every other token. It is at most the
        full forward KL, short of it by ``p_t(rest) * KL(p_t(.|rest) || p_s(.|rest))``, and equal to it
        when ``k`` is the vocabulary (see the module docstring).

    Example:
        >>> import torch
        >>> s = torch.log(torch.tensor([[[0.5, 0.25, 0.25]]]))
        >>> t = torch.log(torch.tensor([[[0.5, 0.5, 0.0]]]))
        >>> round(float(forward_kl_top_k(s, top_k(t, 3))), 4)   # exact: 0.5 log(0.5 / 0.25)
        0.3466
    """
    import torch

    teacher_p = teacher.logprobs.exp()
    inside = teacher_p * (teacher.logprobs - student.gather(-1, teacher.ids))
    kl = torch.where(teacher_p > 0, inside, torch.zeros_like(inside)).sum(-1)
    if teacher.ids.shape[-1] < student.shape[-1]:
        student_rest = torch.logsumexp(student.scatter(-1, teacher.ids, float("-inf")), dim=-1)
        rest_p = teacher.rest.exp()
        rest_log = torch.where(rest_p > 0, teacher.rest, torch.zeros_like(teacher.rest))
        kl = kl + rest_p * (rest_log - student_rest)
    return kl
