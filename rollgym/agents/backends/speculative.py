"""Speculative decoding for the transformers backend: a small draft model proposes, the target verifies.

A draft model that shares the target's tokenizer proposes ``k`` tokens one at a
time; the target scores all of them in one forward pass and keeps a prefix of
them by the rejection rule of speculative sampling (Leviathan et al. 2023; Chen et
al. 2023): draft token ``x`` drawn from the draft's distribution ``q`` is kept
with probability ``min(1, p(x) / q(x))`` under the target's distribution ``p``;
the first rejected position draws from ``max(0, p - q)`` renormalised, and when
all ``k`` are kept a bonus token is drawn from ``p``. Every emitted token is then
distributed exactly as if the target had sampled it alone. ``p`` and ``q`` are
the *processed* distributions (temperature, top-k, top-p), so the rule holds for
any sampling settings; greedy decoding is the case where both are one-hot, and
then the output is the target's own greedy output.

The logprobs and entropies a :class:`~rollgym.agents.backends.base.Generation`
carries are the target's raw ones (log-softmax of its logits, as the plain
decoding loop records them), taken from the verification pass, so a trainer's
recomputation matches them as it matches the plain loop's.

Rows are decoded one at a time (speculation pays at batch 1, where decoding is
bound by reading the weights, not by arithmetic). Memory: one KV cache per model
for the row being decoded, no more than the plain loop holds for one row.

Example:
    >>> backend = TransformersBackend.from_pretrained("qwen2.5-coder-1.5b-instruct",
    ...     draft="qwen2.5-coder-0.5b-instruct")  # doctest: +SKIP
    >>> backend.speculation.acceptance_rate  # doctest: +SKIP
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

from rollgym.agents.backends.base import Generation, SamplingParams
from rollgym.core.errors import ConfigError


@dataclass
class SpeculationStats:
    """Counts over every speculative round since the backend was made (or :meth:`reset`)."""

    rounds: int = 0
    proposed: int = 0
    accepted: int = 0
    emitted: int = 0
    per_round: list[int] = field(default_factory=list, repr=False)

    @property
    def acceptance_rate(self) -> float:
        """Share of proposed draft tokens the target kept (0.0 before any round)."""
        return self.accepted / self.proposed if self.proposed else 0.0

    @property
    def tokens_per_round(self) -> float:
        """Tokens emitted per target forward pass (1.0 is what plain decoding gets)."""
        return self.emitted / self.rounds if self.rounds else 0.0

    def reset(self) -> None:
        """Zero every count."""
        self.rounds = self.proposed = self.accepted = self.emitted = 0
        self.per_round.clear()


def processed_probs(torch: Any, logits: Any, sampling: SamplingParams) -> Any:
    """The distribution a token is drawn from, in float64: temperature, top-k and top-p applied to ``logits``.

    Greedy sampling gives the one-hot distribution of the argmax (ties to the lowest id, as ``argmax``).
    ``logits`` is ``(rows, vocab)``.
    """
    logits = logits.double()
    if sampling.greedy:
        return torch.nn.functional.one_hot(logits.argmax(dim=-1), logits.shape[-1]).double()
    return torch.softmax(tempered_scores(torch, logits, sampling), dim=-1)


def tempered_scores(torch: Any, logits: Any, sampling: SamplingParams) -> Any:
    """``logits`` over the temperature, with the tokens outside top-k and top-p set to ``-inf`` (same dtype).

    Plain and speculative decoding draw from the softmax of these, so both sample one distribution.
    """
    scores = logits / sampling.temperature
    if sampling.top_k and sampling.top_k > 0:
        kth = torch.topk(scores, min(sampling.top_k, scores.shape[-1]), dim=-1).values[:, -1:]
        scores = scores.masked_fill(scores < kth, float("-inf"))
    if sampling.top_p < 1.0:
        sorted_scores, order = torch.sort(scores, descending=True, dim=-1)
        sorted_probs = torch.softmax(sorted_scores, dim=-1)
        drop = sorted_probs.cumsum(dim=-1) - sorted_probs >= sampling.top_p
        sorted_scores = sorted_scores.masked_fill(drop, float("-inf"))
        scores = torch.full_like(scores, float("-inf")).scatter(-1, order, sorted_scores)
    return scores


def _draw(torch: Any, probs: Any, generator: Any) -> int:
    """One token from a float64 distribution over the vocabulary, by inverse CDF."""
    cdf = probs.cumsum(dim=-1)
    u = float(torch.rand((), generator=generator, dtype=torch.float64)) * float(cdf[-1])
    index = int(torch.searchsorted(cdf, torch.tensor([u], dtype=cdf.dtype)).item())
    return min(index, int((cdf < cdf[-1]).sum()))  # never past the last token with mass


def accept(p_x: float, q_x: float, u: float) -> bool:
    """The speculative-sampling test: keep a draft token with probability ``min(1, p(x) / q(x))``."""
    return q_x > 0 and u * q_x < p_x


def verify(torch: Any, probs: Any, drafted: list[int], draft_dists: list[Any], generator: Any) -> tuple[list[int], int]:
    """One round of speculative sampling: which draft tokens to keep, and the token that follows them.

    ``probs`` is the target's processed distribution after each drafted prefix (``len(drafted) + 1`` rows),
    ``draft_dists`` the draft's distribution each token was drawn from. Returns the emitted tokens (the kept
    prefix of ``drafted`` and one more, drawn from the residual ``max(0, p - q)`` at the first rejection or
    from ``p`` after the last draft token) and how many draft tokens were kept.
    """
    vocab = probs.shape[-1]
    emitted: list[int] = []
    for i, x in enumerate(drafted):
        q = draft_dists[i]
        q = q[:vocab] if q.shape[-1] >= vocab else torch.nn.functional.pad(q, (0, vocab - q.shape[-1]))
        u = float(torch.rand((), generator=generator, dtype=torch.float64))
        if x < vocab and accept(float(probs[i, x]), float(q[x]), u):
            emitted.append(x)
            continue
        residual = (probs[i] - q).clamp(min=0.0)
        emitted.append(_draw(torch, residual if float(residual.sum()) > 0 else probs[i], generator))
        return emitted, i
    emitted.append(_draw(torch, probs[len(drafted)], generator))
    return emitted, len(drafted)


def _cache_arg(model: Any) -> str:
    """The name a model's ``forward`` takes its KV cache by (transformers >= 5.2x renamed it)."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _hit_stop(tokenizer: Any, tokens: list[int], stop: tuple[str, ...]) -> bool:
    tail = tokenizer.decode(tokens[-16:], skip_special_tokens=False)
    return any(s in tail for s in stop)


def _crop(cache: Any, length: int) -> None:
    """Cut a transformers KV cache back to its first ``length`` positions.

    A negative argument removes that many positions in every transformers version ``crop`` exists in.
    """
    excess = cache.get_seq_length() - length
    if excess > 0:
        cache.crop(-excess)


class SpeculativeDecoder:
    """Decode for a :class:`TransformersBackend` with a draft model; the backend calls :meth:`decode`.

    Args:
        backend: The target's :class:`~rollgym.agents.backends.hf.TransformersBackend` (its model, tokenizer,
            EOS ids, stop handling).
        draft_model: A causal LM over the same tokenizer (a smaller sibling of the target).
        draft_tokens: ``k``, the tokens the draft proposes per target pass.
    """

    def __init__(self, backend: Any, draft_model: Any, draft_tokens: int = 4) -> None:
        if draft_tokens < 1:
            raise ConfigError(f"draft_tokens must be at least 1, got {draft_tokens}.")
        self.backend = backend
        self.draft = draft_model.eval()
        self.k = draft_tokens
        self.stats = SpeculationStats()
        import torch

        self._torch = torch
        self._cache_args = {id(m): _cache_arg(m) for m in (backend.model, self.draft)}

    # -- one model call ---------------------------------------------------------
    def _forward(self, model: Any, ids: list[int], cache: Any) -> tuple[Any, Any]:
        """Feed ``ids`` after what ``cache`` holds; returns the float32 logits at each fed position and the cache."""
        torch = self._torch
        device = next(model.parameters()).device
        start = cache.get_seq_length() if cache is not None else 0
        tensor = torch.tensor([ids], dtype=torch.long, device=device)
        positions = torch.arange(start, start + len(ids), device=device).unsqueeze(0)
        kwargs = {self._cache_args[id(model)]: cache} if cache is not None else {}
        out = model(input_ids=tensor, position_ids=positions, use_cache=True, **kwargs)
        cache = getattr(out, "cache", None)
        return out.logits[0].float(), cache if cache is not None else out.past_key_values

    # -- decoding ---------------------------------------------------------------
    def decode(self, prompts: list[list[int]], sampling: SamplingParams, seeds: list[int | None]) -> list[Generation]:
        """One completion per prompt, each row on its own, drawn from the target's distribution."""
        return [self._decode_row(prompt, sampling, seed) for prompt, seed in zip(prompts, seeds, strict=True)]

    def _decode_row(self, prompt: list[int], sampling: SamplingParams, seed: int | None) -> Generation:
        torch, backend = self._torch, self.backend
        if not prompt:
            raise ConfigError("A prompt has no tokens; give the model at least one token.")
        generator = torch.Generator()
        generator.manual_seed(seed if seed is not None else int(torch.seed() % 2**63))
        eos = set(backend.eos_ids)
        # The target's cache holds every emitted token but the newest ("pending"); the draft's may lag further.
        target_cache = None
        if len(prompt) > 1:
            _, target_cache = self._forward(backend.model, prompt[:-1], None)
        target_pending = [prompt[-1]]
        draft_logits, draft_cache = self._forward(self.draft, prompt, None)
        draft_next = draft_logits[-1:]
        tokens: list[int] = []
        logps: list[float] = []
        entropies: list[float] = []
        reason: str | None = None
        while reason is None:
            room = sampling.max_tokens - len(tokens)
            k = min(self.k, room)
            drafted, draft_dists = [], []
            draft_length = draft_cache.get_seq_length()
            for i in range(k):
                q = processed_probs(torch, draft_next, sampling)[0]
                x = _draw(torch, q, generator)
                drafted.append(x)
                draft_dists.append(q)
                if i < k - 1:
                    logits, draft_cache = self._forward(self.draft, [x], draft_cache)
                    draft_next = logits[-1:]
            logits, target_cache = self._forward(backend.model, target_pending + drafted, target_cache)
            raw = torch.log_softmax(logits, dim=-1)  # row i: the target after target_pending + drafted[:i]
            probs = processed_probs(torch, logits, sampling)
            emitted, kept = verify(torch, probs, drafted, draft_dists, generator)
            self.stats.rounds += 1
            self.stats.proposed += k
            self.stats.accepted += kept
            self.stats.per_round.append(kept)
            for j, tok in enumerate(emitted):
                if len(tokens) >= sampling.max_tokens:
                    break
                tokens.append(tok)
                logps.append(float(raw[j, tok]))
                entropies.append(float(-(raw[j].exp() * raw[j]).nan_to_num().sum()))
                self.stats.emitted += 1
                if tok in eos or (sampling.stop and _hit_stop(backend.tokenizer, tokens, sampling.stop)):
                    reason = "stop"
                    break
            if reason is None and len(tokens) >= sampling.max_tokens:
                reason = "length"
            if reason is not None:
                break
            # Keep the caches to what both models have really seen of the emitted text.
            _crop(target_cache, target_cache.get_seq_length() - (len(drafted) - kept))
            target_pending = [emitted[-1]]
            fed = min(kept, k - 1)  # the draft fed drafted[:k-1] after its old length
            _crop(draft_cache, draft_length + fed)
            lag = emitted[fed:]
            logits, draft_cache = self._forward(self.draft, lag, draft_cache)
            draft_next = logits[-1:]
        return Generation(
            text=backend.tokenizer.decode(tokens, skip_special_tokens=True),
            token_ids=tokens,
            logprobs=logps,
            finish_reason=reason,
            policy_version=backend.policy_version,
            prompt_ids=list(prompt),
            entropies=entropies,
        )


def load_draft(name_or_path: str, target_tokenizer: Any, *, dtype: Any, device: str = "cpu") -> Any:
    """Load a draft model (a folder, a pulled model's name or a hub id) and check it shares the target's tokenizer.

    Raises:
        ConfigError: the draft's tokenizer maps some token to another id than the target's, so its
            proposals would mean other text.
    """
    from pathlib import Path

    import transformers

    from rollgym.agents.backends.catalog import resolve_model

    source = resolve_model(name_or_path)
    if not Path(source).expanduser().exists() and source.startswith((".", "/", "~")):
        raise ConfigError(
            f"Draft model folder {source!r} does not exist; pass a local folder or a pulled model's name."
        )
    tokenizer = transformers.AutoTokenizer.from_pretrained(source)
    if tokenizer.get_vocab() != target_tokenizer.get_vocab():
        raise ConfigError(
            f"The draft model {name_or_path!r} has another tokenizer than the target; speculative decoding needs a "
            "draft of the same family (the same vocabulary), such as a smaller size of the same model."
        )
    model: Any = transformers.AutoModelForCausalLM.from_pretrained(source, dtype=dtype)
    return model.to(device)
