"""One way to build an LLM agent from a model string: :func:`build_llm_agent`.

``rollgym eval --model`` and ``rollgym bench run --model`` build their :class:`~rollgym.agents.chat.ChatAgent`
here, so a model string means the same backend (:mod:`rollgym.agents.backends.registry`, which
:class:`~rollgym.agents.chat.RemoteChatAgent` uses too) and the same sampling settings everywhere.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rollgym.agents.backends.base import Backend, SamplingParams
from rollgym.agents.backends.registry import backend_kind
from rollgym.core.errors import ConfigError

if TYPE_CHECKING:
    from rollgym.agents.chat import ChatAgent


def sampling_params(settings: SamplingParams | Mapping[str, Any] | None) -> SamplingParams:
    """Sampling settings from a mapping (a suite entry's ``sampling``, ``--sampling k=v``), or as given.

    Keys that are not :class:`SamplingParams` fields go to its ``extra`` (sent to the server as they are).

    Example:
        >>> params = sampling_params({"max_tokens": 64, "stop": ["</answer>"], "min_p": 0.1})
        >>> params.stop, params.extra
        (('</answer>',), {'min_p': 0.1})
    """
    if settings is None:
        return SamplingParams()
    if isinstance(settings, SamplingParams):
        return settings
    known = {f.name for f in dataclasses.fields(SamplingParams)}
    extra = {k: v for k, v in settings.items() if k not in known}
    params = {k: v for k, v in settings.items() if k in known and k != "extra"}
    if "stop" in params:
        params["stop"] = tuple(params["stop"])
    return SamplingParams(**params, extra=extra)


def build_llm_agent(
    model: str,
    *,
    sampling: SamplingParams | Mapping[str, Any] | None = None,
    tokenizer: Any = None,
    draft: str | None = None,
    name: str | None = None,
    system_prompt: str | None = None,
    backend: Backend | None = None,
    backend_options: Mapping[str, Any] | None = None,
) -> ChatAgent:
    """A :class:`~rollgym.agents.chat.ChatAgent` over the model a string names.

    Args:
        model: A model string: a model folder, a pulled model's name, a hub id, ``vllm:PATH``, an
            OpenAI-compatible ``http(s)://`` URL, or any prefix registered with
            :func:`~rollgym.agents.backends.registry.register_backend`.
        sampling: :class:`SamplingParams`, or a mapping of its fields (other keys go to ``extra``).
        tokenizer: The model's tokenizer, or a folder / name / hub id to load it from (exact tokens over HTTP).
        draft: A smaller model of the same tokenizer to decode speculatively with (local models only).
        name: The agent's name in results files (default ``"llm"``).
        system_prompt: Overrides the env's system prompt.
        backend: An already built backend for ``model`` (one backend shared by many agents); else one is built.
        backend_options: Keyword arguments for the backend (``model=`` for a server's model name, ...).

    Example:
        >>> agent = build_llm_agent("http://127.0.0.1:8000/v1", sampling={"max_tokens": 256},
        ...                         name="llm:my-server")  # doctest: +SKIP
    """
    if draft and not backend_kind(model).local:
        raise ConfigError("--draft works with a local transformers model only; drop it or pass a model folder or "
                          "a pulled model's name as --model.")
    if backend is None:
        from rollgym.agents.backends import make_backend

        backend = make_backend(model, **(backend_options or {}), **({"draft": draft} if draft else {}))
    if isinstance(tokenizer, str):
        from rollgym.agents.backends.catalog import load_tokenizer

        tokenizer = load_tokenizer(tokenizer)
    from rollgym.agents.chat import ChatAgent

    agent = ChatAgent(backend, sampling_params(sampling), tokenizer=tokenizer, system_prompt=system_prompt)
    if name is not None:
        agent.name = name
    return agent
