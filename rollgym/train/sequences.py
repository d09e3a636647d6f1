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


def _completion_log_softmax(model: Any, rows: Sequence[Row], pad_id: int) -> Any:
    """``[B, T, V]`` log-probabilities: position ``t`` of row ``i`` predicts ``rows[i].completion_ids[t]`` (0 after).

    A model whose ``forward`` takes ``logits_to_keep`` (transformers' causal LMs do) runs on left-padded rows
    with explicit positions and computes the output layer and the softmax on the last ``T + 1`` positions only:
    the completion's, not the prompt's (with a 49k vocabulary and prompts ten times longer than completions,
    most of a training step's memory and much of its time). Other models run right-padded over every position.
    """
    import inspect

    import torch

    seqs = [r.prompt_ids + r.completion_ids for r in rows]
    comp = max(len(r.completion_ids) for r in rows)
    if "logits_to_keep" in inspect.signature(model.forward).parameters:
        width = max(len(seq) for seq in seqs)
        ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
        attention = torch.zeros((len(seqs), width), dtype=torch.long)
        for i, seq in enumerate(seqs):
            ids[i, width - len(seq):] = torch.tensor(seq)
            attention[i, width - len(seq):] = 1
        positions = (attention.cumsum(-1) - 1).clamp(min=0)
        # logit j of the kept comp + 1 is position width - comp - 1 + j; a completion of n tokens is
        # predicted by positions width - n - 1 .. width - 2, i.e. logits comp - n .. comp - 1
        logits = model(input_ids=ids, attention_mask=attention, position_ids=positions,
                       logits_to_keep=comp + 1).logits[:, :-1].float()
        logp = torch.log_softmax(logits, dim=-1)
        out = torch.zeros_like(logp)
        for i, r in enumerate(rows):
            n = len(r.completion_ids)
            out[i, :n] = logp[i, comp - n:]
        return out
    ids, attention = right_padded(seqs, pad_id)
    logp = torch.log_softmax(model(input_ids=ids, attention_mask=attention).logits.float(), dim=-1)
    out = torch.zeros((len(rows), comp, logp.shape[-1]))
    for i, r in enumerate(rows):
        start, n = len(r.prompt_ids), len(r.completion_ids)
        out[i, :n] = logp[i, start - 1 : start - 1 + n]
    return out


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
    _, out, old, mask = sequence_distributions(model, rows, pad_id)
    return out, old, mask


def sequence_distributions(model: Any, rows: Sequence[Row], pad_id: int) -> tuple[Any, Any, Any, Any]:
    """:func:`sequence_logprobs` plus the whole next-token distribution: ``(dists, logprobs, old, mask)``.

    ``dists`` is ``[B, T, V]``: position ``t`` of row ``i`` holds the log-probabilities that predict
    ``rows[i].completion_ids[t]`` (0 past a completion's end); only completion positions are computed.
    """
    import torch

    dists = _completion_log_softmax(model, rows, pad_id)
    old, mask = _completion_tensors(rows)
    targets = torch.zeros(old.shape, dtype=torch.long)
    for i, r in enumerate(rows):
        targets[i, : len(r.completion_ids)] = torch.tensor(r.completion_ids, dtype=torch.long)
    out = dists.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return dists, out, old, mask
