"""A transformers backend: any local model folder or hub id, batched, with exact tokens and logprobs.

Sampling runs in rollgym's own decoding loop over the model's KV cache (left
padding, explicit position ids), so that every sampled token's raw logprob is
recorded as it is drawn and seeding uses a private ``torch.Generator``, never
torch's global RNG. Concurrent ``generate`` calls with the same sampling
settings, from any thread or event loop, are merged into one batch by a
batching thread that owns the model.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rollgym.agents.backends.base import Generation, Prompt, SamplingParams, check_prompts
from rollgym.agents.backends.prefix_cache import DEFAULT_MAX_BYTES as DEFAULT_PREFIX_CACHE_BYTES
from rollgym.agents.backends.prefix_cache import PrefixCache
from rollgym.agents.backends.speculative import SpeculationStats, SpeculativeDecoder, load_draft, tempered_scores
from rollgym.core.errors import ConfigError, MissingDependencyError


def _import_torch_transformers() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise MissingDependencyError(
            "The transformers backend needs torch and transformers: pip install 'rollgym[llm]'."
        ) from exc
    return torch, transformers


def row_seeds(sampling: SamplingParams, n_prompts: int) -> list[int | None]:
    """One sampling seed per generated row: sample ``k`` of every prompt gets its own seed from ``sampling.seed``."""
    if sampling.seed is None:
        return [None] * (n_prompts * sampling.n)
    return [(sampling.seed * 1_000_003 + k) % 2**63 for _ in range(n_prompts) for k in range(sampling.n)]


@dataclass
class _Pending:
    prompts: list[list[int]]
    seeds: list[int | None]
    sampling: SamplingParams
    future: concurrent.futures.Future[list[Generation]]


class TransformersBackend:
    """Generate with a transformers causal LM on this machine.

    Args:
        model: A loaded ``PreTrainedModel``.
        tokenizer: Its tokenizer (with a chat template for chat use).
        max_batch: Most sequences decoded together.
        batch_window_s: The quiet window: a batch starts once no request arrived for this long.
        max_wait_s: The longest a request waits for others to join its batch.
        draft_model: A smaller causal LM over the same tokenizer: generation then decodes speculatively
            (:mod:`rollgym.agents.backends.speculative`), with the target's output distribution and, greedy,
            the target's own tokens; ``speculation`` counts what the draft got accepted.
        draft_tokens: Tokens the draft proposes per target pass.
        prefix_cache: Keep the KV cache of prompts and reuse it: a group's G samples prefill their
            prompt once, and a prompt that starts with an earlier call's tokens (the next turn of an
            episode) prefills only the rest. Token-identical to the uncached path; refused (uncached)
            for sliding-window and other caches that cannot be cut to a prefix. See
            :mod:`rollgym.agents.backends.prefix_cache`.
        prefix_cache_bytes: The cache's memory bound (default 512 MiB).
            Speculative decoding (``draft_model``) prefills without it.
        quantize: ``"int8"`` generates (and answers ``logprobs_of``) with an int8 copy of ``model``, refreshed
            when its weights change, while ``model`` itself stays as it is for the trainer
            (:mod:`rollgym.agents.backends.quantized`); ``None`` (default) uses ``model``.

    Example:
        >>> backend = TransformersBackend.from_pretrained("path/to/model")  # doctest: +SKIP
        >>> gens = asyncio.run(backend.generate([[1, 2, 3]], SamplingParams(max_tokens=8)))  # doctest: +SKIP
    """

    name = "transformers"
    accepts_images = False
    """Text models only (``AutoModelForCausalLM``); screenshots reach it as their text part."""

    def __init__(self, model: Any, tokenizer: Any, *, max_batch: int = 64, batch_window_s: float = 0.002,
                 max_wait_s: float = 0.2, draft_model: Any = None, draft_tokens: int = 4,
                 prefix_cache: bool = False, prefix_cache_bytes: int = DEFAULT_PREFIX_CACHE_BYTES,
                 quantize: str | None = None) -> None:
        torch, _ = _import_torch_transformers()
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.max_batch = max_batch
        self.batch_window_s = batch_window_s
        self.max_wait_s = max_wait_s
        self.policy_version = 0
        self._lock = threading.Lock()
        self._queue_lock = threading.Lock()
        self._wake = threading.Event()
        self._pending: list[_Pending] = []
        self._worker: threading.Thread | None = None
        self.eos_ids = self._eos_ids()
        pad = tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else (self.eos_ids[0] if self.eos_ids else 0))
        self._torch = torch
        import inspect

        params = inspect.signature(self.model.forward).parameters
        # transformers >= 5.2x renamed past_key_values to cache
        self._cache_arg = "cache" if "cache" in params else "past_key_values"
        self._keeps_logits = "logits_to_keep" in params
        self._speculative: SpeculativeDecoder | None = None
        if draft_model is not None:
            self._speculative = SpeculativeDecoder(self, draft_model, draft_tokens)
        self._prefix_cache_bytes = prefix_cache_bytes
        self._prefix: PrefixCache | None = PrefixCache(prefix_cache_bytes) if prefix_cache else None
        self._quantized: Any = None
        if quantize is not None:
            from rollgym.agents.backends.quantized import QuantizedRollouts

            if draft_model is not None:
                raise ConfigError("quantize and a draft model cannot be combined yet; drop one of them.")
            self._quantized = QuantizedRollouts(self.model, quantize)

    def _rollout_weights(self) -> Any:
        """A context in which ``self.model`` is what generation samples from (the quantized copy, if any)."""
        return self._quantized.in_use(self) if self._quantized is not None else contextlib.nullcontext()

    @property
    def speculation(self) -> SpeculationStats | None:
        """Draft tokens proposed and accepted so far, when decoding speculatively; else None."""
        return self._speculative.stats if self._speculative is not None else None

    # -- prefix cache -------------------------------------------------------
    @property
    def prefix_cache(self) -> bool:
        """Whether prompts' KV caches are kept and reused (settable; turning it off frees the memory)."""
        return self._prefix is not None

    @prefix_cache.setter
    def prefix_cache(self, on: bool) -> None:
        with self._lock:
            if not on:
                self._prefix = None
            elif self._prefix is None:
                self._prefix = PrefixCache(self._prefix_cache_bytes)

    def prefix_cache_stats(self) -> dict[str, Any]:
        """What the prefix cache saved so far (empty when it is off); see :class:`PrefixCache`."""
        return self._prefix.stats() if self._prefix is not None else {}

    def _prefill(self, prompts: list[list[int]], input_ids: Any, attention: Any, positions: Any) -> tuple[Any, Any]:
        """The prompts' cache and last-position logits: through the prefix cache when it is on and usable."""
        prefix = self._prefix
        if prefix is not None and prefix.usable(self.model):
            return prefix.prefill(self.model, self._forward_prefill, prompts, self.pad_id, input_ids.device,
                                  self.policy_version)
        return self._forward_prefill(input_ids, attention, positions, None)

    def _forward_prefill(self, input_ids: Any, attention: Any, positions: Any, past: Any) -> tuple[Any, Any]:
        keep = {"logits_to_keep": 1} if self._keeps_logits else {}  # the prefill's output layer on the last position
        if past is not None:
            keep[self._cache_arg] = past
        out = self.model(input_ids=input_ids, attention_mask=attention, position_ids=positions, use_cache=True, **keep)
        return self._cache_of(out), out.logits[:, -1, :].float()

    @classmethod
    def from_pretrained(
        cls, path_or_id: str, *, device: str = "cpu", dtype: str = "float32", draft: str | None = None,
        **kwargs: Any,
    ) -> TransformersBackend:
        """Load a model folder, a pulled model's name (``rollgym models list``) or a hub id, with its tokenizer.

        ``draft`` names a smaller model of the same tokenizer (loaded the same way) to decode speculatively with;
        ``quantize="int8"`` generates with int8 weights (see the class's arguments).
        """
        from rollgym.agents.backends.catalog import resolve_model

        torch, transformers = _import_torch_transformers()
        path_or_id = resolve_model(path_or_id)
        local = Path(path_or_id).expanduser()
        if not local.exists() and (path_or_id.startswith((".", "/", "~")) or path_or_id.count("/") > 1):
            raise ConfigError(f"Model folder {path_or_id!r} does not exist; pass a local folder or a hub id.")
        source = str(local) if local.exists() else path_or_id
        try:
            torch_dtype = getattr(torch, dtype)
        except AttributeError as exc:
            raise ConfigError(f"Unknown dtype {dtype!r}; use float32, bfloat16 or float16.") from exc
        transformers.utils.logging.disable_progress_bar()
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(source)
            model = transformers.AutoModelForCausalLM.from_pretrained(source, dtype=torch_dtype).to(device)
        except OSError as exc:  # a hub id that is not cached and cannot be downloaded, or a folder without a model
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ConfigError(
                f"Cannot load model {path_or_id!r}: {reason} Pass a model folder, a pulled model's name "
                "(`rollgym models list`) or a hub id that is cached or reachable."
            ) from exc
        if draft is not None:
            kwargs["draft_model"] = load_draft(draft, tokenizer, dtype=torch_dtype, device=device)
        return cls(model, tokenizer, **kwargs)

    def _eos_ids(self) -> list[int]:
        ids: set[int] = set()
        eos = getattr(self.model.generation_config, "eos_token_id", None)
        for value in (eos, self.tokenizer.eos_token_id):
            if isinstance(value, int):
                ids.add(value)
            elif isinstance(value, (list, tuple)):
                ids.update(int(v) for v in value)
        return sorted(ids)

    # -- prompts ------------------------------------------------------------
    def encode(self, prompt: Prompt, tools: list[dict[str, Any]] | None = None) -> list[int]:
        """Token ids of a prompt: ids pass through, text is tokenized, messages use the chat template."""
        if isinstance(prompt, str):
            return list(self.tokenizer(prompt, add_special_tokens=False)["input_ids"])
        if prompt and isinstance(prompt[0], dict):
            return render_chat_ids(self.tokenizer, prompt, tools)  # type: ignore[arg-type]
        return [int(t) for t in prompt]  # type: ignore[arg-type]

    # -- generation ---------------------------------------------------------
    async def generate(self, prompts: list[Prompt], sampling: SamplingParams) -> list[Generation]:
        """Sample ``sampling.n`` completions for each prompt; see the module docstring."""
        check_prompts(prompts)
        ids = [self.encode(p) for p in prompts for _ in range(sampling.n)]
        if not ids:
            return []
        seeds = row_seeds(sampling, len(prompts))
        future: concurrent.futures.Future[list[Generation]] = concurrent.futures.Future()
        with self._queue_lock:
            self._pending.append(_Pending(ids, seeds, dataclasses.replace(sampling, seed=None), future))
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._serve_batches, daemon=True, name="rollgym-hf-batcher")
                self._worker.start()
            self._wake.set()
        return await asyncio.wrap_future(future)

    def _serve_batches(self) -> None:
        # One thread owns the model: requests from any thread or event loop are merged into batches.
        # After a wake-up it waits until requests stop arriving (a quiet window) or the batch is full,
        # so episodes that reach the model a little apart still share one decode.
        while True:
            self._wake.wait(timeout=5.0)
            started, seen = time.monotonic(), -1
            while True:
                time.sleep(self.batch_window_s)
                with self._queue_lock:
                    count = sum(len(p.prompts) for p in self._pending)
                if count == seen or count >= self.max_batch or time.monotonic() - started > self.max_wait_s:
                    break
                seen = count
            with self._queue_lock:
                pending, self._pending = self._pending, []
                self._wake.clear()
                if not pending:
                    self._worker = None
                    return
            while pending:
                first = pending[0]
                group = [p for p in pending if p.sampling == first.sampling]
                pending = [p for p in pending if p.sampling != first.sampling]
                flat = [ids for p in group for ids in p.prompts]
                flat_seeds = [seed for p in group for seed in p.seeds]
                try:
                    results: list[Generation] = []
                    for start in range(0, len(flat), self.max_batch):
                        end = start + self.max_batch
                        results += self.generate_ids(flat[start:end], first.sampling, flat_seeds[start:end])
                except Exception as exc:
                    for p in group:
                        if not p.future.cancelled():  # a caller that gave up (a timeout) wants nothing back
                            p.future.set_exception(exc)
                    continue
                offset = 0
                for p in group:
                    if not p.future.cancelled():
                        p.future.set_result(results[offset : offset + len(p.prompts)])
                    offset += len(p.prompts)

    def generate_ids(
        self, prompts: list[list[int]], sampling: SamplingParams, seeds: list[int | None] | None = None
    ) -> list[Generation]:
        """Blocking batched sampling of one completion per prompt of token ids.

        ``seeds`` gives each row its own sampling seed (``None``: fresh randomness), so rows
        from different requests share one decode and each stays reproducible on its own.
        """
        torch = self._torch
        if seeds is None:
            seeds = row_seeds(sampling, len(prompts)) if sampling.seed is not None else [None] * len(prompts)
        with self._lock, self._rollout_weights(), torch.inference_mode():
            if self._speculative is not None:
                return self._speculative.decode(prompts, sampling, seeds)
            return self._decode(prompts, sampling, seeds)

    def _decode(self, prompts: list[list[int]], sampling: SamplingParams, seeds: list[int | None]) -> list[Generation]:
        torch = self._torch
        device = next(self.model.parameters()).device
        if any(len(p) == 0 for p in prompts):
            raise ConfigError("A prompt has no tokens; give the model at least one token.")
        width = max(len(p) for p in prompts)
        batch = len(prompts)
        input_ids = torch.full((batch, width), self.pad_id, dtype=torch.long)
        attention = torch.zeros((batch, width), dtype=torch.long)
        for i, p in enumerate(prompts):
            input_ids[i, width - len(p) :] = torch.tensor(p, dtype=torch.long)
            attention[i, width - len(p) :] = 1
        input_ids, attention = input_ids.to(device), attention.to(device)
        positions = (attention.cumsum(-1) - 1).clamp(min=0)
        # Each row draws all its uniforms up front from its own seeded generator; a step then samples
        # every row at once by inverse CDF, so rows from different requests batch and stay reproducible.
        uniforms = torch.empty((batch, sampling.max_tokens), dtype=torch.float64)
        for i, seed in enumerate(seeds):
            generator = torch.Generator()
            generator.manual_seed(seed if seed is not None else int(torch.seed() % 2**63))
            uniforms[i] = torch.rand(sampling.max_tokens, generator=generator, dtype=torch.float64)
        past, logits = self._prefill(prompts, input_ids, attention, positions)
        tokens: list[list[int]] = [[] for _ in range(batch)]
        logps: list[list[float]] = [[] for _ in range(batch)]
        entropies: list[list[float]] = [[] for _ in range(batch)]
        reasons: list[str | None] = [None] * batch
        eos = set(self.eos_ids)
        for step in range(sampling.max_tokens):
            raw = torch.log_softmax(logits, dim=-1)
            entropy = -(raw.exp() * raw).nan_to_num().sum(dim=-1)  # of the raw distribution, as the logprobs
            chosen = self._choose(logits, sampling, uniforms[:, step].to(device))
            for i in range(batch):
                if reasons[i] is not None:
                    continue
                tok = int(chosen[i])
                tokens[i].append(tok)
                logps[i].append(float(raw[i, tok]))
                entropies[i].append(float(entropy[i]))
                if tok in eos or (sampling.stop and self._hit_stop(tokens[i], sampling.stop)):
                    reasons[i] = "stop"
            if all(r is not None for r in reasons):
                break
            attention = torch.cat([attention, torch.ones((batch, 1), dtype=torch.long, device=device)], dim=1)
            positions = positions[:, -1:] + 1
            out = self.model(
                input_ids=chosen.view(batch, 1), attention_mask=attention, position_ids=positions,
                use_cache=True, **{self._cache_arg: past},
            )
            past, logits = self._cache_of(out), out.logits[:, -1, :].float()
        if self._prefix is not None:
            self._prefix.remember(prompts, tokens, past, width)
        return [
            Generation(
                text=self.tokenizer.decode(tokens[i], skip_special_tokens=True),
                token_ids=tokens[i],
                logprobs=logps[i],
                finish_reason=reasons[i] or "length",
                policy_version=self.policy_version,
                prompt_ids=list(prompts[i]),
                entropies=entropies[i],
            )
            for i in range(batch)
        ]

    @staticmethod
    def _cache_of(output: Any) -> Any:
        cache = getattr(output, "cache", None)
        return cache if cache is not None else output.past_key_values

    def _choose(self, logits: Any, sampling: SamplingParams, uniform: Any) -> Any:
        torch = self._torch
        if sampling.greedy:
            return logits.argmax(dim=-1)
        scores = tempered_scores(torch, logits, sampling)
        cdf = torch.softmax(scores.double(), dim=-1).cumsum(dim=-1)
        chosen = torch.searchsorted(cdf, (uniform * cdf[:, -1]).unsqueeze(-1)).view(-1)
        # a uniform at the very top of the CDF can land past the last token with nonzero mass
        return torch.minimum(chosen, (cdf < cdf[:, -1:]).sum(dim=-1))

    def _hit_stop(self, tokens: list[int], stop: tuple[str, ...]) -> bool:
        tail = self.tokenizer.decode(tokens[-16:], skip_special_tokens=False)
        return any(s in tail for s in stop)

    def logprobs_of(self, prompt_ids: list[int], completion_ids: list[int]) -> list[float]:
        """Recompute the raw logprobs of ``completion_ids`` after ``prompt_ids`` with one forward pass
        (of the weights generation samples from: the int8 copy with ``quantize="int8"``)."""
        torch = self._torch
        with self._lock, self._rollout_weights(), torch.inference_mode():
            ids = torch.tensor([prompt_ids + completion_ids], dtype=torch.long)
            logits = self.model(input_ids=ids).logits[0].float()
            logp = torch.log_softmax(logits, dim=-1)
            start = len(prompt_ids)
            return [float(logp[start - 1 + j, t]) for j, t in enumerate(completion_ids)]


def render_chat_ids(
    tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
    *, add_generation_prompt: bool = True,
) -> list[int]:
    """Token ids of ``messages`` rendered with the tokenizer's chat template."""
    text = render_chat_text(tokenizer, messages, tools, add_generation_prompt=add_generation_prompt)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def render_chat_text(
    tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
    *, add_generation_prompt: bool = True,
) -> str:
    """``messages`` rendered with the tokenizer's chat template, as text."""
    if not getattr(tokenizer, "chat_template", None):
        raise ConfigError("This tokenizer has no chat template; pass token ids or text prompts instead.")
    kwargs: dict[str, Any] = {"tokenize": False, "add_generation_prompt": add_generation_prompt}
    if tools:
        kwargs["tools"] = tools
    return str(tokenizer.apply_chat_template(messages, **kwargs))
