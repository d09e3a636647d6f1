"""Deprecated: the MATH tool's sandbox moved to :mod:`rollgym.sandbox`.

This alias keeps the old names working (``LocalSandbox``, ``SandboxLimits``,
``SandboxResult``, ``Sandbox``, ``make_sandbox``) with the old interface, but
``LocalSandbox`` now runs code in :class:`rollgym.sandbox.Sandbox` (namespaces, a
private tmpfs with quotas, a seccomp filter against cross-process system calls):
see :mod:`rollgym.sandbox.compat`. The pre-bubblewrap implementation itself is
:mod:`rollgym.sandbox.legacy`. New code should use :mod:`rollgym.sandbox`.
"""

from __future__ import annotations

import warnings
from typing import Any

from rollgym.core.errors import ConfigError
from rollgym.sandbox.compat import LocalSandbox
from rollgym.sandbox.legacy import CodeSandbox as Sandbox
from rollgym.sandbox.legacy import SandboxLimits, SandboxResult

warnings.warn(
    "rollgym.envs.math.sandbox is deprecated; use rollgym.sandbox (Sandbox, Limits, RunResult) instead.",
    DeprecationWarning,
    stacklevel=2,
)

BACKENDS = ("local", "docker")


def make_sandbox(backend: str = "local", limits: SandboxLimits | None = None, **options: Any) -> Any:
    """A legacy sandbox by backend name: ``"local"`` or ``"docker"`` (needs a reachable Docker engine)."""
    if backend == "local":
        return LocalSandbox(limits, **options)
    if backend == "docker":
        from rollgym.sandbox.docker import DockerSandbox

        return DockerSandbox(limits, **options)
    raise ConfigError(f"Unknown sandbox backend {backend!r}; use one of {', '.join(BACKENDS)}.")


__all__ = ["BACKENDS", "LocalSandbox", "Sandbox", "SandboxLimits", "SandboxResult", "make_sandbox"]
