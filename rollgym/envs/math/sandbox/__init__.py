"""Sandboxes that run the Python tool's code: ``local`` (a limited subprocess) and ``docker``.

:func:`make_sandbox` builds one by name; see :mod:`~rollgym.envs.math.sandbox.local`
for exactly what each layer enforces.
"""

from __future__ import annotations

from typing import Any

from rollgym.core.errors import ConfigError
from rollgym.envs.math.sandbox.base import Sandbox, SandboxLimits, SandboxResult
from rollgym.envs.math.sandbox.local import LocalSandbox

BACKENDS = ("local", "docker")


def make_sandbox(backend: str = "local", limits: SandboxLimits | None = None, **options: Any) -> Sandbox:
    """A sandbox by backend name: ``"local"`` or ``"docker"`` (needs a reachable Docker engine)."""
    if backend == "local":
        return LocalSandbox(limits, **options)
    if backend == "docker":
        from rollgym.envs.math.sandbox.docker import DockerSandbox

        return DockerSandbox(limits, **options)
    raise ConfigError(f"Unknown sandbox backend {backend!r}; use one of {', '.join(BACKENDS)}.")


__all__ = ["BACKENDS", "LocalSandbox", "Sandbox", "SandboxLimits", "SandboxResult", "make_sandbox"]
