"""Deprecated alias of :mod:`rollgym.sandbox.legacy` (limits, result and protocol of the old sandbox)."""

from rollgym.sandbox.legacy import CodeSandbox as Sandbox
from rollgym.sandbox.legacy import SandboxLimits, SandboxResult

__all__ = ["Sandbox", "SandboxLimits", "SandboxResult"]
