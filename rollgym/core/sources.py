"""The task source of a generator: a frozen config, the env id its tasks are named after, an unbounded supply.

A generated family's source subclasses :class:`GeneratedSource`, names its config class and
default env id, and writes ``task(index, split)``; construction and ``size`` are shared. A source
that builds itself another way subclasses :class:`UnboundedSource` for ``size`` alone.
"""

from __future__ import annotations

from typing import Any, ClassVar, Generic, TypeVar

ConfigT = TypeVar("ConfigT")


class UnboundedSource:
    """A :class:`~rollgym.core.env.TaskSource` whose supply of tasks has no end in any split."""

    def size(self, split: str) -> int | None:
        """``None``: the supply is unbounded in every split."""
        return None


class GeneratedSource(UnboundedSource, Generic[ConfigT]):
    """A :class:`~rollgym.core.env.TaskSource` whose tasks are generated from ``config`` (no finite size).

    Subclasses set ``family``, ``config_type`` (built with no arguments when no config is given)
    and ``default_env_id``, and implement ``task(index, split)``.

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass(frozen=True)
        ... class Cfg:
        ...     n: int = 3
        >>> class Source(GeneratedSource[Cfg]):
        ...     family, config_type, default_env_id = "demo", Cfg, "Demo-v0"
        >>> source = Source()
        >>> source.config.n, source.env_id, source.size("train")
        (3, 'Demo-v0', None)
    """

    family: str = ""
    config_type: ClassVar[type[Any]]
    default_env_id: ClassVar[str] = ""

    def __init__(self, config: ConfigT | None = None, env_id: str | None = None) -> None:
        self.config: ConfigT = config if config is not None else self.config_type()
        self.env_id = self.default_env_id if env_id is None else env_id
