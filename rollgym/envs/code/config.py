"""Validated configurations of the generated code envs: ``CodeGenConfig``, ``RepoRepairConfig``, ``TerminalConfig``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from rollgym.core.difficulty import Difficulty, Level
from rollgym.core.errors import ConfigError

CODEGEN_FAMILIES = ("string", "list", "arithmetic", "dictionary", "recursion", "simulation")
REPO_BUGS = ("off_by_one", "wrong_operator", "wrong_comparison", "wrong_constant", "missing_case")
TERMINAL_KINDS = ("files", "text", "script", "permissions", "archive")


def as_meta(config: Any) -> dict[str, Any]:
    """A config dataclass as task metadata: JSON values only (tuples become lists), so that a task read
    back from a transcript equals the task the source makes.

    Example:
        >>> as_meta(TerminalConfig(kinds="text"))
        {'kinds': ['text'], 'n_files': 6}
    """
    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(config).items()}


def check_int(name: str, value: Any, low: int, high: int) -> int:
    """``value`` if it is an integer in ``[low, high]``, else a :class:`ConfigError` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"{name} must be an integer from {low} to {high}, got {value!r}.")
    return value


def choices(value: Sequence[str] | str) -> tuple[str, ...]:
    """A name or a sequence of names as a tuple (an env argument ``"list"`` means ``("list",)``)."""
    if isinstance(value, (list, tuple)):
        return tuple(value)
    return (value,)  # type: ignore[return-value]  # not a name: the config's check names the field


def check_choices(name: str, value: Any, allowed: tuple[str, ...]) -> tuple[str, ...]:
    """A non-empty tuple of allowed names (a string is one name), in the order of ``allowed``."""
    chosen = (value,) if isinstance(value, str) else tuple(value) if isinstance(value, (list, tuple)) else None
    if not chosen or any(c not in allowed for c in chosen):
        raise ConfigError(f"{name} must be a non-empty subset of {', '.join(allowed)}, got {value!r}.")
    return tuple(a for a in allowed if a in chosen)


@dataclass(frozen=True)
class CodeGenConfig:
    """How ``CodeGen-v0`` tasks are drawn.

    Attributes:
        families: Task families to draw from (default all six).
        steps: Number of operations the function chains (1-6; default 3).
        input_size: Largest hidden-test input (string or list length, number magnitude scale; 2-1000).
        n_tests: Hidden tests per task (4-200).
        n_examples: Visible examples in the prompt (1-8).
        tricky: Add edge cases (empty input, one element, zero, negatives) to the hidden tests.

    Example:
        >>> CodeGenConfig(families="list", steps=2).families
        ('list',)
    """

    families: tuple[str, ...] = CODEGEN_FAMILIES
    steps: int = 3
    input_size: int = 20
    n_tests: int = 24
    n_examples: int = 3
    tricky: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "families", check_choices("families", self.families, CODEGEN_FAMILIES))
        check_int("steps", self.steps, 1, 6)
        check_int("input_size", self.input_size, 2, 1000)
        check_int("n_tests", self.n_tests, 4, 200)
        check_int("n_examples", self.n_examples, 1, 8)
        if not isinstance(self.tricky, bool):
            raise ConfigError(f"tricky must be True or False, got {self.tricky!r}.")


@dataclass(frozen=True)
class RepoRepairConfig:
    """How ``RepoRepair-v0`` repositories are drawn.

    Attributes:
        modules: Source modules in the repository (2-6; default 3), each with a test file.
        bugs: Kinds of injected bug to draw from.
        n_hidden: Hidden test calls per function (2-50).

    Example:
        >>> RepoRepairConfig(modules=2, bugs="off_by_one").bugs
        ('off_by_one',)
    """

    modules: int = 3
    bugs: tuple[str, ...] = REPO_BUGS
    n_hidden: int = 8

    def __post_init__(self) -> None:
        check_int("modules", self.modules, 2, 6)
        object.__setattr__(self, "bugs", check_choices("bugs", self.bugs, REPO_BUGS))
        check_int("n_hidden", self.n_hidden, 2, 50)


@dataclass(frozen=True)
class TerminalConfig:
    """How ``Terminal-v0`` tasks are drawn.

    Attributes:
        kinds: Task kinds to draw from: ``files``, ``text``, ``script``, ``permissions``, ``archive``.
        n_files: Files in the starting folder (2-40; default 6).

    Example:
        >>> TerminalConfig(kinds=["text", "archive"]).kinds
        ('text', 'archive')
    """

    kinds: tuple[str, ...] = TERMINAL_KINDS
    n_files: int = 6

    def __post_init__(self) -> None:
        object.__setattr__(self, "kinds", check_choices("kinds", self.kinds, TERMINAL_KINDS))
        check_int("n_files", self.n_files, 2, 40)


#: CodeGen's difficulty levels, easiest first: more chained operations, bigger hidden inputs, then edge cases.
#: Level 2 is ``CodeGen-v0``'s default.
CODEGEN_LEVELS: tuple[Level, ...] = tuple(
    Level(f"steps-{steps}", {"steps": steps, "input_size": size, "tricky": tricky},
          f"{steps} operation{'s' if steps > 1 else ''}, inputs up to {size}{', edge cases' if tricky else ''}")
    for steps, size, tricky in ((1, 10, False), (2, 20, False), (3, 20, True), (4, 50, True), (6, 100, True))
)

#: RepoRepair's difficulty levels: more modules (and test files) to search for the one bug. Level 1 is the default.
REPO_LEVELS: tuple[Level, ...] = tuple(
    Level(f"modules-{n}", {"modules": n}, f"{n} modules, each with a test file") for n in (2, 3, 4, 5, 6))


def ladder(levels: tuple[Level, ...], config: Any, grows: str) -> Difficulty:
    """``levels`` as a :class:`Difficulty` whose default is the level matching ``config``'s knobs, if one."""
    default = next((i for i, level in enumerate(levels)
                    if all(getattr(config, k) == v for k, v in level.knobs.items())), None)
    return Difficulty(levels, default=default, grows=grows)
