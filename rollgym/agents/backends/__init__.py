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
from rollgym.agents.backends.registry import BackendKind, backend_kind, known_backends, register_backend
from rollgym.core.errors import ConfigError


def make_backend(spec: str, **kwargs: Any) -> Backend:
    """A backend from a model string: an ``http(s)://`` URL, ``vllm:PATH``, or a model folder / known name / hub id.

    The prefix picks the backend from :mod:`rollgym.agents.backends.registry` (add one with
    :func:`register_backend`); a known name (``rollgym models list``, e.g. ``smollm2-135m-instruct``) means
    its pulled folder.

    Example:
        >>> backend = make_backend("http://127.0.0.1:8000/v1")  # doctest: +SKIP
    """
    if not spec:
        raise ConfigError("Pass a model folder, a hub id, vllm:PATH or an http(s):// URL.")
    return backend_kind(spec).factory(spec, **kwargs)


__all__ = [
    "Backend", "BackendError", "BackendKind", "Generation", "Prompt", "SamplingParams", "backend_kind",
    "known_backends", "make_backend", "register_backend",
]
