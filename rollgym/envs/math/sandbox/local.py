"""Deprecated alias of :mod:`rollgym.sandbox.legacy` (the old process sandbox)."""

from rollgym.sandbox.legacy import (
    NOBODY,
    LocalSandbox,
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
