"""Training rows and their token log-probabilities under a causal LM.

The lowest layer of :mod:`rollgym.train`: :mod:`rollgym.train.grpo` builds :class:`Row`\\ s
from rollouts and trains on them, :mod:`rollgym.train.teacher` scores them under a teacher;
both import this module, and it imports neither.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass
class Row:
    """One training sequence: a prompt, a completion with its mask and behaviour logprobs, an advantage.

    ``teacher_prefix`` is what a teacher sees before the prompt (``None``: no teacher for this row);
    ``teacher_mask`` marks the completion tokens the teacher supervises (``None``: all of them).
    """

    prompt_ids: list[int]
    completion_ids: list[int]
    loss_mask: list[int]
    old_logprobs: list[float]
    advantage: float
    source: str = "policy"
    token_advantages: list[float] | None = None
    teacher_prefix: list[int] | None = None
    traj_id: str = ""
    teacher_mask: list[float] | None = None


def right_padded(sequences: Sequence[Sequence[int]], pad_id: int) -> tuple[Any, Any]:
    """``[B, W]`` token ids right-padded with ``pad_id`` and their attention mask (1 on real tokens)."""
    import torch

    width = max(len(seq) for seq in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(sequences), width), dtype=torch.long)
    for i, seq in enumerate(sequences):
        ids[i, : len(seq)] = torch.tensor(list(seq))
        attention[i, : len(seq)] = 1
    return ids, attention


def _next_token_logprobs(model: Any, rows: Sequence[Row], pad_id: int) -> Any:
    """``[B, W, V]`` log-probabilities over the padded ``prompt + completion`` of every row."""
    import torch

    ids, attention = right_padded([r.prompt_ids + r.completion_ids for r in rows], pad_id)
    logits = model(input_ids=ids, attention_mask=attention).logits.float()
    return torch.log_softmax(logits, dim=-1)


def _completion_tensors(rows: Sequence[Row]) -> tuple[Any, Any]:
    """``(old, mask)``: the rows' behaviour logprobs and loss masks, ``[B, T]``, zero-padded."""
    import torch

    comp = max(len(r.completion_ids) for r in rows)
    old = torch.zeros((len(rows), comp))
    mask = torch.zeros((len(rows), comp))
    for i, r in enumerate(rows):
        n = len(r.completion_ids)
        old[i, :n] = torch.tensor(r.old_logprobs[:n] + [0.0] * (n - len(r.old_logprobs)))
        mask[i, :n] = torch.tensor(r.loss_mask, dtype=torch.float32)
    return old, mask


def sequence_logprobs(model: Any, rows: Sequence[Row], pad_id: int) -> tuple[Any, Any, Any]:
    """Logprobs of each row's completion tokens under ``model``: ``(logprobs, old, mask)``, all ``[B, T]``."""
    import torch

    logp = _next_token_logprobs(model, rows, pad_id)
    old, mask = _completion_tensors(rows)
    out = torch.zeros_like(old)
    for i, r in enumerate(rows):
        start, n = len(r.prompt_ids), len(r.completion_ids)
        positions = torch.arange(start - 1, start - 1 + n)
        out[i, :n] = logp[i, positions, torch.tensor(r.completion_ids)]
    return out, old, mask


def sequence_distributions(model: Any, rows: Sequence[Row], pad_id: int) -> tuple[Any, Any, Any, Any]:
    """:func:`sequence_logprobs` plus the whole next-token distribution: ``(dists, logprobs, old, mask)``.

    ``dists`` is ``[B, T, V]``: position ``t`` of row ``i`` holds the log-probabilities that predict
    ``rows[i].completion_ids[t]`` (0 past a completion's end). It costs a ``[B, T, V]`` copy, so
    the trainer asks for it only when a forward-KL term needs it.
    """
    import torch

    logp = _next_token_logprobs(model, rows, pad_id)
    old, mask = _completion_tensors(rows)
    dists = torch.zeros((len(rows), old.shape[1], logp.shape[-1]))
    targets = torch.zeros(old.shape, dtype=torch.long)
    for i, r in enumerate(rows):
        start, n = len(r.prompt_ids), len(r.completion_ids)
        dists[i, :n] = logp[i, start - 1 : start - 1 + n]
        targets[i, :n] = torch.tensor(r.completion_ids)
    out = dists.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return dists, out, old, mask
