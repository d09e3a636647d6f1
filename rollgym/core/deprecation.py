"""Aliases for public names that moved: the old import path keeps working, with a ``DeprecationWarning``.

A module whose names moved ends with ``__getattr__ = moved_to(__name__, {...})``; an argument
or field that was renamed calls :func:`renamed`. The policy (docs/releasing.md): a deprecation is
removed in the next minor release after the one that announces it, and its warning names that
version, :data:`REMOVED_IN`; ``tests/core/test_deprecation.py`` checks that every version named
is that one.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any

REMOVED_IN = "0.3.0"  # the next minor release: announced in 0.2.0


def moved_to(old_module: str, new_homes: Mapping[str, str], *, removed_in: str = REMOVED_IN) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` serving each moved name from its new module, with a deprecation warning.

    Args:
        old_module: The module the names used to live in (pass ``__name__``).
        new_homes: Each moved name mapped to the module it lives in now.
        removed_in: The rollgym version that drops the alias.

    Example:
        >>> getattr_ = moved_to("old.place", {"Score": "rollgym.core.task"})
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     getattr_("Score").__name__, caught[0].category.__name__
        ('Score', 'DeprecationWarning')
    """
    homes = dict(new_homes)

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {old_module!r} has no attribute {name!r}")
        warnings.warn(
            f"{old_module}.{name} moved to {home}.{name}; import it from there "
            f"(the old path goes in rollgym {removed_in}).",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(home), name)

    return __getattr__


def renamed(owner: str, old: str, new: str, *, removed_in: str = REMOVED_IN, stacklevel: int = 3) -> None:
    """Warn that the argument or field ``old`` of ``owner`` is now called ``new``.

    ``stacklevel`` 3 points the warning at the caller of the function that calls this one; a
    dataclass's ``__post_init__`` passes 4 (its generated ``__init__`` sits between).

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     renamed("GRPOConfig", "distill_coef", "distill_reverse_kl")
        >>> "GRPOConfig(distill_coef=...) is now distill_reverse_kl" in str(caught[0].message)
        True
    """
    warnings.warn(
        f"{owner}({old}=...) is now {new}; pass {new}= instead (the old name goes in rollgym {removed_in}).",
        DeprecationWarning,
        stacklevel=stacklevel,
    )
