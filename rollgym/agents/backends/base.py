"""The contract every inference backend keeps: ``async generate(prompts, sampling) -> list[Generation]``.

Tokens in, tokens out: a prompt is a list of token ids (or, for backends that
only speak text, a string or a list of chat messages), and every
:class:`Generation` carries the exact sampled token ids and their logprobs, so a
trainer never decodes and re-tokenizes model output.

Logprob semantics: ``logprobs[i]`` is the log-probability of ``token_ids[i]``
under the model's raw next-token distribution (log-softmax of the logits,
before temperature, top-k or top-p), which is vLLM's default ``raw_logprobs``
mode and what a trainer's forward pass recomputes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from rollgym.core.errors import ConfigError, RollgymError

Message = dict[str, Any]
Prompt = list[int] | str | list[Message]

FINISH_REASONS = ("stop", "length", "abort", "error")


class BackendError(RollgymError, RuntimeError):
    """A backend failed to produce a generation (server error, bad response, timeout)."""


@dataclass(frozen=True)
class SamplingParams:
    """How to sample. ``n`` completions per prompt; ``seed`` makes sampling reproducible.

    Example:
        >>> SamplingParams(max_tokens=64, temperature=0.0).greedy
        True
    """

    max_tokens: int = 256
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    n: int = 1
    stop: tuple[str, ...] = ()
    seed: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ConfigError(f"max_tokens must be at least 1, got {self.max_tokens}.")
        if self.temperature < 0:
            raise ConfigError(f"temperature must be >= 0, got {self.temperature}.")
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"top_p must be in (0, 1], got {self.top_p}.")
        if self.n < 1:
            raise ConfigError(f"n must be at least 1, got {self.n}.")
        object.__setattr__(self, "stop", tuple(self.stop))

    @property
    def greedy(self) -> bool:
        """Whether sampling is deterministic argmax decoding."""
        return self.temperature == 0.0


@dataclass
class Generation:
    """One completion.

    Attributes:
        text: The decoded completion (for display and parsing; never re-tokenized).
        token_ids: The sampled token ids, exactly as generated (EOS included when sampled).
        logprobs: Raw log-probability of each sampled token; same length as ``token_ids``
            (empty when the backend cannot report them).
        finish_reason: ``"stop"`` (EOS or a stop string), ``"length"``, ``"abort"`` or ``"error"``.
        policy_version: The weights' version that produced the tokens.
        prompt_ids: The prompt's token ids, when the backend knows them.
        error: Why generation failed, when ``finish_reason == "error"``.
        token_versions: The weights version of each token, when they differ (a generation
            paused and resumed across an update, see :mod:`rollgym.rollout.partial`); empty
            when every token came from ``policy_version``, which is then the oldest version.
        entropies: The entropy (nats) of the raw next-token distribution at each sampled position,
            the same distribution ``logprobs`` come from; empty when the backend cannot report it
            (only :class:`~rollgym.agents.backends.hf.TransformersBackend` does, exactly, over the
            whole vocabulary). Branching rollouts (:mod:`rollgym.rollout.branching`) fork where it is high.
    """

    text: str
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    finish_reason: str = "stop"
    policy_version: int = 0
    prompt_ids: list[int] = field(default_factory=list)
    error: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    token_versions: list[int] = field(default_factory=list)
    entropies: list[float] = field(default_factory=list)


@runtime_checkable
class Backend(Protocol):
    """An inference engine. ``generate`` returns ``len(prompts) * sampling.n`` generations,
    the ``n`` samples of each prompt next to each other."""

    name: str
    policy_version: int

    async def generate(self, prompts: list[Prompt], sampling: SamplingParams) -> list[Generation]: ...


def check_prompts(prompts: list[Prompt]) -> None:
    """Raise a clear :class:`ConfigError` for prompts of the wrong shape."""
    if not isinstance(prompts, list):
        raise ConfigError("generate() takes a list of prompts; wrap a single prompt in a list.")
    for p in prompts:
        if isinstance(p, str):
            continue
        if isinstance(p, list) and all(isinstance(t, int) for t in p):
            continue
        if isinstance(p, list) and all(isinstance(m, dict) and "role" in m for m in p):
            continue
        raise ConfigError("A prompt is a list of token ids, a string, or a list of {'role', 'content'} messages.")
