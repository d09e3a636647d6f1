"""Which backend a model string names: a table of prefixes, one :func:`register_backend` call per backend.

A model string is ``PREFIX`` + the rest (``http://127.0.0.1:8000/v1``, ``vllm:/models/qwen``,
``hf:smollm2-135m-instruct``); a string with no prefix is a model folder, a pulled model's name or a hub id
and goes to the local transformers backend, as ``hf:`` does. A string that starts with an unknown
``scheme:`` is refused with one sentence that lists the known prefixes.

Adding a backend is one call, here or in the module that defines it (imported before use)::

    register_backend("mine:", lambda spec, **options: MineBackend(spec[len("mine:"):], **options),
                     help="mine:NAME, a model on my server")
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rollgym.agents.backends.base import Backend
from rollgym.core.errors import ConfigError

BackendFactory = Callable[..., Backend]
"""``factory(spec, **options) -> Backend``: ``spec`` is the whole model string, prefix included."""

#: A model string's prefix as a URL scheme is written (``vllm:``, ``http://``); hub ids and folders have none.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:(//)?")


@dataclass(frozen=True)
class BackendKind:
    """One registered backend.

    Attributes:
        prefix: What a model string starts with to name this backend (``"vllm:"``, ``"http://"``).
        factory: Builds the backend from the whole model string and the caller's options.
        help: How a user writes it, for error messages and ``--help`` (``"vllm:PATH, an in-process vLLM"``).
        local: The backend runs a transformers model in this process: model-guided search can score text
            with it and ``--draft`` applies to it.
    """

    prefix: str
    factory: BackendFactory
    help: str
    local: bool = False


_BACKENDS: dict[str, BackendKind] = {}
#: The prefix a model string without one gets.
DEFAULT_PREFIX = "hf:"


def register_backend(prefix: str, factory: BackendFactory, *, help: str, local: bool = False) -> None:
    """Make model strings that start with ``prefix`` build their backend with ``factory``.

    Registering a prefix again replaces its entry (a plugin may override a built-in).

    Example:
        >>> from rollgym.agents.backends.openai_http import OpenAIBackend
        >>> register_backend("myserver:", lambda spec, **o: OpenAIBackend("http://10.0.0.5/v1", **o),
        ...                  help="myserver:, the lab's inference server")
        >>> backend_kind("myserver:").help
        "myserver:, the lab's inference server"
        >>> unregister_backend("myserver:")
    """
    if not isinstance(prefix, str) or not _SCHEME.fullmatch(prefix):
        raise ConfigError(f"A backend prefix is a scheme such as 'name:' or 'name://', got {prefix!r}.")
    _BACKENDS[prefix] = BackendKind(prefix, factory, help, local)


def unregister_backend(prefix: str) -> None:
    """Forget ``prefix`` (tests and plugins that registered one for a while); unknown prefixes are ignored."""
    _BACKENDS.pop(prefix, None)


def known_backends() -> list[BackendKind]:
    """The registered backends, longest prefix first (the order a model string is matched in)."""
    return sorted(_BACKENDS.values(), key=lambda kind: (-len(kind.prefix), kind.prefix))


def backend_kind(spec: str) -> BackendKind:
    """The registered backend a model string names; one sentence listing the known prefixes when none does.

    Example:
        >>> backend_kind("http://127.0.0.1:8000/v1").prefix
        'http://'
        >>> backend_kind("smollm2-135m-instruct").prefix
        'hf:'
    """
    for kind in known_backends():
        if spec.startswith(kind.prefix):
            return kind
    scheme = _SCHEME.match(spec)
    if scheme is not None and not Path(spec).expanduser().exists():
        known = ", ".join(kind.prefix for kind in known_backends())
        raise ConfigError(f"Unknown backend prefix {scheme.group(0)!r} in {spec!r}; use one of {known}, "
                          "or a model folder, a pulled model's name or a hub id with no prefix.")
    return _BACKENDS[DEFAULT_PREFIX]


def backend_help() -> str:
    """The ways to write a model string, for a sentence: ``"http(s)://URL, vllm:PATH, ..."``."""
    return "; ".join(kind.help for kind in known_backends())


# -- the built-in backends --------------------------------------------------------------------------------
# Each factory imports its backend when called: a transformers or vLLM import costs seconds.


def _openai(spec: str, **options: Any) -> Backend:
    from rollgym.agents.backends.openai_http import OpenAIBackend

    return OpenAIBackend(spec, **options)


def _vllm(spec: str, **options: Any) -> Backend:
    from rollgym.agents.backends.catalog import resolve_model
    from rollgym.agents.backends.vllm_backend import VLLMBackend

    return VLLMBackend(resolve_model(spec[len("vllm:"):]), **options)


def _transformers(spec: str, **options: Any) -> Backend:
    from rollgym.agents.backends.hf import TransformersBackend

    return TransformersBackend.from_pretrained(spec.removeprefix(DEFAULT_PREFIX), **options)


register_backend("http://", _openai, help="http://URL, an OpenAI-compatible server")
register_backend("https://", _openai, help="https://URL, an OpenAI-compatible server")
register_backend("vllm:", _vllm, help="vllm:PATH, an in-process vLLM engine")
register_backend(DEFAULT_PREFIX, _transformers, local=True,
                 help="a model folder, a pulled model's name or a hub id (hf: optional), run by transformers")
