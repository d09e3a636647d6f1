"""Deprecated alias of :mod:`rollgym.sandbox.legacy_bootstrap` (the old sandbox's first code)."""

from rollgym.sandbox.legacy_bootstrap import SYSTEM_READ_PATHS, landlock_abi

__all__ = ["SYSTEM_READ_PATHS", "landlock_abi"]
