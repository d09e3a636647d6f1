"""Inference backends behind one async ``generate(prompts, sampling) -> list[Generation]``."""

from __future__ import annotations

from typing import Any

from rollgym.agents.backends.base import (
    Backend,
    BackendError,
    Generation,
    Prompt,
    SamplingParams,
)
from rollgym.core.errors import ConfigError


def make_backend(spec: str, **kwargs: Any) -> Backend:
    """A backend from a string: an ``http(s)://`` URL, ``vllm:PATH``, or a model folder / known name / hub id.

    A known name (``rollgym models list``, e.g. ``smollm2-135m-instruct``) means its pulled folder.

    Example:
        >>> backend = make_backend("http://127.0.0.1:8000/v1")  # doctest: +SKIP
    """
    if not spec:
        raise ConfigError("Pass a model folder, a hub id, vllm:PATH or an http(s):// URL.")
    if spec.startswith(("http://", "https://")):
        from rollgym.agents.backends.openai_http import OpenAIBackend

        return OpenAIBackend(spec, **kwargs)
    if spec.startswith("vllm:"):
        from rollgym.agents.backends.catalog import resolve_model
        from rollgym.agents.backends.vllm_backend import VLLMBackend

        return VLLMBackend(resolve_model(spec[len("vllm:"):]), **kwargs)
    from rollgym.agents.backends.hf import TransformersBackend

    return TransformersBackend.from_pretrained(spec, **kwargs)


__all__ = ["Backend", "BackendError", "Generation", "Prompt", "SamplingParams", "make_backend"]
