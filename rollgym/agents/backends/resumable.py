"""``ResumableBackend``: sample in chunks, pause between them, continue from the exact tokens.

Partial rollouts (:mod:`rollgym.rollout.partial`) use it to stop a long generation
when a training step has what it needs and to finish it under the next weights.
Continuing a prefix of sampled token ids samples from the same distribution as one
long call; with greedy decoding the tokens are the same.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

from rollgym.agents.backends.base import Generation, Prompt, SamplingParams
from rollgym.core.errors import ConfigError


def _chunk_seed(seed: int, chunk: int) -> int:
    return (seed * 1_000_003 + chunk * 0x9E3779B1) % 2**63


class ResumableBackend:
    """A backend wrapper that samples in chunks and can pause between them.

    Each ``generate`` call on a prompt of token ids becomes a loop of calls on the inner
    backend of at most ``chunk_tokens`` new tokens each, the prompt growing by the exact
    ids sampled so far; ``pause()`` is awaited before every chunk. The result is one
    :class:`Generation` with all tokens, their logprobs, and, when an update happened in
    between, each token's weights version (``token_versions``).

    Calls it cannot continue exactly go through whole (after one ``pause()``): text or
    message prompts (the token ids of a continuation are unknown), ``n > 1``, and stop
    strings (which could straddle two chunks).

    Args:
        inner: Any backend; token-id prompts need one that accepts them (transformers, vLLM,
            an OpenAI-compatible server's ``/v1/completions``).
        chunk_tokens: Most new tokens per inner call.
        pause: Awaited before every chunk (the collector's gate); ``None`` never pauses.
    """

    def __init__(self, inner: Any, chunk_tokens: int, pause: Callable[[], Awaitable[None]] | None = None) -> None:
        if not isinstance(chunk_tokens, int) or isinstance(chunk_tokens, bool) or chunk_tokens < 1:
            raise ConfigError(f"chunk_tokens must be an integer >= 1, got {chunk_tokens!r}.")
        self.inner = inner
        self.chunk_tokens = chunk_tokens
        self.pause = pause
        self.name = f"resumable({getattr(inner, 'name', type(inner).__name__)})"
        # what continuing costs: every chunk after a generation's first re-sends its prompt and the tokens
        # sampled so far, which an engine without a prefix cache must prefill again
        self.chunk_calls = 0
        self.resent_tokens = 0

    def __getattr__(self, name: str) -> Any:  # tokenizer, encode, model, ... of the inner backend
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def policy_version(self) -> int:
        return int(getattr(self.inner, "policy_version", 0))

    @policy_version.setter
    def policy_version(self, value: int) -> None:
        self.inner.policy_version = value

    async def _pause(self) -> None:
        if self.pause is not None:
            await self.pause()

    async def generate(self, prompts: list[Prompt], sampling: SamplingParams) -> list[Generation]:
        """Like the inner backend's ``generate``; see the class docstring."""
        token_prompts = all(isinstance(p, list) and all(isinstance(t, int) for t in p) for p in prompts)
        if not token_prompts or sampling.n != 1 or sampling.stop:
            await self._pause()
            return list(await self.inner.generate(prompts, sampling))
        return list(await asyncio.gather(*(self._continue(list(p), sampling) for p in prompts)))  # type: ignore[arg-type]

    async def _continue(self, prompt: list[int], sampling: SamplingParams) -> Generation:
        ids: list[int] = []
        logprobs: list[float] = []
        versions: list[int] = []
        texts: list[str] = []
        exact_logprobs = True
        finish = "length"
        chunk = 0
        while len(ids) < sampling.max_tokens:
            await self._pause()
            size = min(self.chunk_tokens, sampling.max_tokens - len(ids))
            seed = None if sampling.seed is None else _chunk_seed(sampling.seed, chunk)
            self.chunk_calls += 1
            if chunk:
                self.resent_tokens += len(prompt) + len(ids)
            part = (await self.inner.generate([prompt + ids], dataclasses.replace(sampling, max_tokens=size,
                                                                                   seed=seed)))[0]
            if part.finish_reason == "error":
                return dataclasses.replace(part, prompt_ids=prompt)
            exact_logprobs = exact_logprobs and len(part.logprobs) == len(part.token_ids)
            ids += part.token_ids
            logprobs += part.logprobs
            versions += [int(part.policy_version)] * len(part.token_ids)
            texts.append(part.text)
            finish = part.finish_reason
            chunk += 1
            if finish != "length" or not part.token_ids:
                break
        tokenizer = getattr(self.inner, "tokenizer", None)
        text = tokenizer.decode(ids, skip_special_tokens=True) if tokenizer is not None else "".join(texts)
        mixed = len(set(versions)) > 1
        return Generation(
            text=text, token_ids=ids, logprobs=logprobs if exact_logprobs else [], finish_reason=finish,
            policy_version=min(versions) if versions else self.policy_version, prompt_ids=prompt,
            token_versions=versions if mixed else [],
        )
