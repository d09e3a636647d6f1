"""Optional dependencies: import one, or say in one sentence what needs it and how to install it."""

from __future__ import annotations

import importlib
from typing import Any

from rollgym.core.errors import MissingDependencyError


def import_optional(module: str, purpose: str, package: str, extra: str) -> Any:
    """``module`` imported, or :class:`~rollgym.core.errors.MissingDependencyError` naming its extra.

    Example:
        >>> import_optional("json", "Reading results", "json", "core").__name__
        'json'
        >>> import_optional("no_such_module", "This demo", "Nothing", "demo")
        Traceback (most recent call last):
        ...
        rollgym.core.errors.MissingDependencyError: This demo needs Nothing: pip install 'rollgym[demo]'.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(f"{purpose} needs {package}: pip install 'rollgym[{extra}]'.") from exc
