"""Difficulty levels: one interface over every family's own knobs.

An env that can draw tasks at graded difficulty declares a :class:`Difficulty`:
its :class:`Level`\\ s, easiest first, each naming the values it gives the family's
own knobs (Countdown's ``num_numbers`` and ranges, Sudoku's ``blanks``, a game's
opponent and board, a search question's hops and dispersion). Then

    env.reset(options={"difficulty": 2})          # or the level's name: {"difficulty": "hard"}

draws the task from level 2 instead of the id's own distribution. A level sets
the knobs it names and keeps the env's other options. Without the option
nothing changes: every registered id keeps its default tasks, bit for bit.
``info["difficulty"]`` says which level an episode was drawn at (absent for a
default draw).

What "harder" means is measured, not asserted: :attr:`Difficulty.grows` names
the proxy that grows with the level (the oracle's solve cost, a search depth,
a reference player's loss rate), and ``tests/core/test_difficulty_levels.py``
measures it for every family.

An env declares its levels through the ``difficulty`` property of
:class:`~rollgym.core.env.TextEnv` (``None``: one fixed difficulty) and builds a
level's task source in ``_level_source(env_id, level)``.

Example:
    >>> ladder = Difficulty((Level("easy", {"blanks": 4}), Level("hard", {"blanks": 10})), default=1,
    ...                     grows="blank cells")
    >>> ladder.index("hard"), ladder.index(0), ladder.level(1).knobs["blanks"]
    (1, 0, 10)
    >>> ladder.index("hrad")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rollgym.core.errors.ConfigError: difficulty must be a level index ... got 'hrad'; did you mean 'hard'?
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rollgym.core.config import did_you_mean
from rollgym.core.errors import ConfigError

__all__ = ["DIFFICULTY_OPTION", "Difficulty", "Level"]

#: The reset option that picks a level.
DIFFICULTY_OPTION = "difficulty"


@dataclass(frozen=True)
class Level:
    """One difficulty level of a family.

    Attributes:
        name: Short, unique within the ladder (``"easy"``, ``"L3"``, ``"mcts-400"``).
        knobs: The family's own option values at this level, JSON-ready (``{"num_numbers": 5}``).
        summary: One line for tables and docs, e.g. ``"5 numbers from 1-100, target 100-999"``.
    """

    name: str
    knobs: Mapping[str, Any] = field(default_factory=dict)
    summary: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The level as a JSON-ready dict."""
        return {"name": self.name, "knobs": dict(self.knobs), "summary": self.summary}


@dataclass(frozen=True)
class Difficulty:
    """An env's difficulty ladder: its levels, easiest first.

    Attributes:
        levels: The levels in order of difficulty (index 0 is the easiest).
        default: The index of the level whose tasks are exactly the id's default tasks, or ``None``
            when the default distribution is not one of the levels (a mix, or a setting between them).
        grows: What grows from one level to the next, as measured (the proxy the tests check).
    """

    levels: tuple[Level, ...]
    default: int | None = None
    grows: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "levels", tuple(self.levels))
        if not self.levels:
            raise ConfigError("A Difficulty needs at least one level.")
        names = [level.name for level in self.levels]
        if len(set(names)) != len(names):
            raise ConfigError(f"Difficulty level names must be distinct, got {names}.")
        if self.default is not None and not 0 <= self.default < len(self.levels):
            raise ConfigError(f"default must be a level index below {len(self.levels)} or None, got {self.default}.")

    def __len__(self) -> int:
        return len(self.levels)

    @property
    def names(self) -> tuple[str, ...]:
        """The level names, easiest first."""
        return tuple(level.name for level in self.levels)

    @property
    def hardest(self) -> int:
        """The index of the hardest level."""
        return len(self.levels) - 1

    def index(self, value: Any) -> int:
        """The index of a level given as an index (``0`` to ``len - 1``) or a name; else a :class:`ConfigError`."""
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(self.levels):
            return value
        if isinstance(value, str) and value in self.names:
            return self.names.index(value)
        listed = ", ".join(repr(n) for n in self.names)
        hint = did_you_mean(value, self.names) or "."
        raise ConfigError(f"difficulty must be a level index from 0 to {self.hardest} or a level name ({listed}), "
                          f"got {value!r}{hint}")

    def level(self, value: Any) -> Level:
        """The level given as an index or a name."""
        return self.levels[self.index(value)]

    def clamp(self, index: int) -> int:
        """``index`` limited to the ladder."""
        return max(0, min(self.hardest, int(index)))

    def to_dict(self) -> dict[str, Any]:
        """The ladder as a JSON-ready dict."""
        return {"levels": [level.to_dict() for level in self.levels], "default": self.default, "grows": self.grows}
