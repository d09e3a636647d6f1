"""Score given continuations of one prompt with a local transformers model: the log-probability of each.

This is the "how likely does the model find each option" primitive that
model-guided search needs (move priors from the logprob of each legal move's
text, a value from the logprob of " win" against " lose"). Nothing is sampled:
every continuation is appended to the prompt, the rows are right-padded into
one batch, and one forward pass gives the raw (pre-temperature) log-softmax of
each continuation token, the same distribution
:meth:`~rollgym.agents.backends.hf.TransformersBackend.logprobs_of` reads for a
single sequence.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from rollgym.core.errors import ConfigError


def require_local_model(backend: Any, purpose: str, *members: str) -> None:
    """One sentence when ``backend`` is not a local transformers model: it lacks one of ``members`` (``model``,
    ``tokenizer``, ``generate_ids``...), which ``purpose`` needs to score or decode text in this process.

    Example:
        >>> require_local_model(object(), "Model-guided search", "model")
        Traceback (most recent call last):
        ...
        rollgym.core.errors.ConfigError: Model-guided search needs a local transformers model (a model folder, ...
    """
    if any(getattr(backend, name, None) is None for name in members):
        raise ConfigError(f"{purpose} needs a local transformers model (a model folder, a pulled model's name or a "
                          "hub id), not a URL or vllm:PATH.")


def continuation_logprobs(backend: Any, prompt_ids: Sequence[int], continuations: Sequence[Sequence[int]],
                          *, max_batch: int = 32) -> list[float]:
    """The summed raw log-probability of each continuation (token ids) after ``prompt_ids``.

    Args:
        backend: A :class:`~rollgym.agents.backends.hf.TransformersBackend` (anything with ``model``,
            ``pad_id`` and ``_torch``); its lock is held so that scoring and sampling never interleave.
        prompt_ids: The shared prompt, at least one token.
        continuations: One token-id list per option, each at least one token.
        max_batch: The most rows per forward pass.

    Raises:
        ConfigError: when the backend is not a local model, or a prompt or continuation is empty.

    Example:
        >>> backend = TransformersBackend.from_pretrained("path/to/model")  # doctest: +SKIP
        >>> continuation_logprobs(backend, [1, 2], [[3], [4, 5]])  # doctest: +SKIP
        [-5.1, -9.7]
    """
    return pair_logprobs(backend, [(prompt_ids, c) for c in continuations], max_batch=max_batch)


def pair_logprobs(backend: Any, pairs: Sequence[tuple[Sequence[int], Sequence[int]]], *,
                  max_batch: int = 32, shared_prefix: bool = True) -> list[float]:
    """The summed raw log-probability of each ``(prompt_ids, continuation_ids)`` pair, batched.

    With ``shared_prefix`` (the default), the pairs are grouped by prompt: each prompt runs once, its
    KV cache is repeated for its continuations, and only the continuations' tokens run again (a
    200-token position and seven one-token moves cost 207 tokens, not 1,400). Without it, every pair
    is a full right-padded row of one batch. Both give the same numbers (up to float rounding).
    """
    require_local_model(backend, "Scoring continuations", "model", "_torch")
    model, torch = backend.model, backend._torch
    rows = [([int(t) for t in p], [int(t) for t in c]) for p, c in pairs]
    if any(not p for p, _ in rows):
        raise ConfigError("The prompt to score continuations after has no tokens.")
    if any(not c for _, c in rows):
        raise ConfigError("A continuation to score has no tokens.")
    if not rows:
        return []
    if shared_prefix:
        groups: dict[tuple[int, ...], list[int]] = {}
        for i, (prompt, _) in enumerate(rows):
            groups.setdefault(tuple(prompt), []).append(i)
        out = [0.0] * len(rows)
        for prompt_key, members in groups.items():
            for first in range(0, len(members), max_batch):
                batch = members[first:first + max_batch]
                scored = _after_prefix(backend, list(prompt_key), [rows[i][1] for i in batch])
                for i, value in zip(batch, scored, strict=True):
                    out[i] = value
        return out
    pad = int(getattr(backend, "pad_id", 0))
    scores: list[float] = []
    lock = getattr(backend, "_lock", None) or contextlib.nullcontext()
    with lock, _weights(backend), torch.inference_mode():
        model = backend.model  # inside the context: a quantized rollout copy is swapped in here
        device = next(model.parameters()).device
        for first in range(0, len(rows), max_batch):
            chunk = rows[first:first + max_batch]
            width = max(len(p) + len(c) for p, c in chunk)
            ids = torch.full((len(chunk), width), pad, dtype=torch.long)
            mask = torch.zeros((len(chunk), width), dtype=torch.long)
            for row, (prompt, cont) in enumerate(chunk):
                seq = prompt + cont
                ids[row, :len(seq)] = torch.tensor(seq, dtype=torch.long)
                mask[row, :len(seq)] = 1
            logits = model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits
            for row, (prompt, cont) in enumerate(chunk):
                start = len(prompt)
                # position p predicts token p + 1: the continuation's tokens are read from start - 1 on
                logp = torch.log_softmax(logits[row, start - 1:start - 1 + len(cont)].float(), dim=-1)
                index = torch.tensor(cont, dtype=torch.long, device=logp.device)
                scores.append(float(logp.gather(-1, index.unsqueeze(-1)).sum()))
    return scores


def _after_prefix(backend: Any, prompt: list[int], continuations: list[list[int]]) -> list[float]:
    """Run ``prompt`` once, repeat its KV cache per continuation, then run the continuations as one batch."""
    torch = backend._torch
    pad = int(getattr(backend, "pad_id", 0))
    cache_arg = getattr(backend, "_cache_arg", "past_key_values")
    lock = getattr(backend, "_lock", None) or contextlib.nullcontext()
    n, width = len(continuations), max(len(c) for c in continuations)
    with lock, _weights(backend), torch.inference_mode():
        model = backend.model  # inside the context: a quantized rollout copy is swapped in here
        device = next(model.parameters()).device
        ids = torch.tensor([prompt], dtype=torch.long, device=device)
        out = model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=True)
        cache = out.past_key_values if getattr(out, "cache", None) is None else out.cache
        first = torch.log_softmax(out.logits[0, -1].float(), dim=-1)  # every continuation's first token
        scores = [float(first[c[0]]) for c in continuations]
        if width == 1:
            return scores
        cache.batch_repeat_interleave(n)
        tail = torch.full((n, width - 1), pad, dtype=torch.long)
        mask = torch.zeros((n, len(prompt) + width - 1), dtype=torch.long)
        mask[:, :len(prompt)] = 1
        for row, cont in enumerate(continuations):
            if len(cont) > 1:
                tail[row, :len(cont) - 1] = torch.tensor(cont[:-1], dtype=torch.long)
                mask[row, len(prompt):len(prompt) + len(cont) - 1] = 1
        positions = torch.arange(len(prompt), len(prompt) + width - 1, dtype=torch.long).expand(n, -1)
        out = model(input_ids=tail.to(device), attention_mask=mask.to(device), position_ids=positions.to(device),
                    use_cache=True, **{cache_arg: cache})
        logp = torch.log_softmax(out.logits.float(), dim=-1)  # position j predicts continuation token j + 1
        for row, cont in enumerate(continuations):
            for j, token in enumerate(cont[1:]):
                scores[row] += float(logp[row, j, token])
    return scores


def _weights(backend: Any) -> Any:
    """The backend's context for the weights generation samples from (its quantized copy, if any), else nothing."""
    weights = getattr(backend, "_rollout_weights", None)
    return weights() if callable(weights) else contextlib.nullcontext()
