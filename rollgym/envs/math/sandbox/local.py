"""Deprecated alias: ``LocalSandbox`` is :class:`rollgym.sandbox.compat.LocalSandbox` (the old interface on
the kernel sandbox); the probes are the old sandbox's, from :mod:`rollgym.sandbox.legacy`."""

from rollgym.sandbox.compat import LocalSandbox
from rollgym.sandbox.legacy import (
    NOBODY,
    landlock_available,
    network_namespace_prefix,
    python_is_world_readable,
    seccomp_available,
)

__all__ = [
    "NOBODY",
    "LocalSandbox",
    "landlock_available",
    "network_namespace_prefix",
    "python_is_world_readable",
    "seccomp_available",
]
