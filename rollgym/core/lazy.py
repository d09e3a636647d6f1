"""Names a package serves from its submodules on first use, so that importing the package stays cheap.

A package whose ``__init__`` only registers ids ends with
``__all__, __getattr__ = lazy_exports(__name__, {module: names, ...})``: ``import rollgym`` then
registers every id without loading env classes, verifiers or sandboxes.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, modules: Mapping[str, tuple[str, ...]]) -> tuple[list[str], Callable[[str], Any]]:
    """The package's ``__all__`` and a module-level ``__getattr__`` that imports a name's module on first use.

    Args:
        package: The package serving the names (pass ``__name__``).
        modules: Each module mapped to the names it defines that the package serves.

    Example:
        >>> names, getattr_ = lazy_exports("pkg", {"rollgym.core.task": ("Score", "Task")})
        >>> names, getattr_("Task").__name__
        (['Score', 'Task'], 'Task')
    """
    homes = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(home), name)

    return sorted(homes), __getattr__
