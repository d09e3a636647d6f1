"""Sudoku tasks: the config, the puzzle generator and the prompt.

A task is a pure function of ``(box shape, blanks, split, index)``:

1. :func:`~rollgym.core.seeding.draw_in_split` draws a random complete grid
   from the task's own seed sequence, using the grid itself as the split key,
   so train, validation and test never share a solution grid (and therefore
   never a puzzle). A search builds one random grid per task; the candidates
   are random symmetry shuffles of it, so rejected candidates are cheap.
2. From the generator that draw returns, cells are blanked in a random order,
   each removal kept only if the puzzle still has exactly one solution (see
   :func:`~rollgym.envs.sudoku.solver.carve`), until ``blanks`` cells are blank.
3. If an order runs out before reaching ``blanks``, a fresh order is drawn from
   the same generator, up to :data:`MAX_CARVE_ATTEMPTS` times. Below each size's
   maximum this practically never fails; if it does, the puzzle with the most
   blanks found is used and ``meta["blanks"]`` says how many it really has
   (``meta["blanks_requested"]`` keeps the request). Meta never overstates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from rollgym.core.config import check_bool
from rollgym.core.difficulty import Difficulty, Level
from rollgym.core.errors import ConfigError
from rollgym.core.seeding import content_digest, draw_in_split
from rollgym.core.sources import UnboundedSource
from rollgym.core.task import Task
from rollgym.envs.sudoku.solver import carve, geometry, random_grid, transform_grid
from rollgym.verifiers.sudoku import rows_from_grid

# Box shapes that make a grid of at most 9 digits, so every cell is one character.
BOX_SHAPES: tuple[tuple[int, int], ...] = ((2, 2), (2, 3), (3, 2), (2, 4), (4, 2), (3, 3))
# Blanks reached by random carving on every grid we sampled within a few orders;
# beyond these, unique puzzles exist but random removal rarely finds them.
MAX_BLANKS: dict[int, int] = {4: 12, 6: 26, 8: 44, 9: 58}
DEFAULT_BLANKS: dict[int, int] = {4: 10, 6: 20, 8: 34, 9: 45}
MAX_CARVE_ATTEMPTS = 64
# Blanks per difficulty level and grid size, easiest first; the middle level is the size's default.
LEVEL_BLANKS: dict[int, tuple[int, ...]] = {4: (4, 7, 10, 11, 12), 6: (10, 15, 20, 23, 26), 8: (16, 24, 34, 40, 44),
                                            9: (25, 35, 45, 52, 58)}
ENV_IDS: dict[tuple[int, int], str] = {(3, 3): "Sudoku-v0", (2, 2): "Sudoku4x4-v0", (2, 3): "Sudoku6x6-v0"}


def default_env_id(box_rows: int, box_cols: int) -> str:
    """The registered id for a box shape, or a descriptive name for unregistered shapes."""
    size = box_rows * box_cols
    return ENV_IDS.get((box_rows, box_cols), f"Sudoku{size}x{size}-box{box_rows}x{box_cols}-v0")


@dataclass(frozen=True)
class SudokuConfig:
    """What a Sudoku task looks like; validated on construction.

    Attributes:
        box_rows: Rows per box (3 for classic Sudoku).
        box_cols: Columns per box; the grid has ``box_rows * box_cols`` rows and columns.
        blanks: Blank cells per puzzle: an int, or an inclusive ``(low, high)`` range
            drawn uniformly per task; ``None`` picks the size's default
            (4x4: 10, 6x6: 20, 8x8: 34, 9x9: 45). At most 12, 26, 44 and 58.
        partial_credit: Reward incorrect answers with the fraction of blanks filled
            correctly (givens never count). Off by default; always reported in
            ``details["partial_credit"]``.

    Example:
        >>> SudokuConfig(box_rows=2, box_cols=2, blanks=(8, 12)).blank_range
        (8, 12)
        >>> SudokuConfig(blanks=70)
        Traceback (most recent call last):
        ...
        rollgym.core.errors.ConfigError: blanks must lie between 1 and 58 for a 9x9 Sudoku, got 70.
    """

    box_rows: int = 3
    box_cols: int = 3
    blanks: int | tuple[int, int] | None = None
    partial_credit: bool = False

    def __post_init__(self) -> None:
        shape = (self.box_rows, self.box_cols)
        if shape not in BOX_SHAPES:
            shapes = ", ".join(f"{r}x{c}" for r, c in BOX_SHAPES)
            raise ConfigError(f"Box shape {self.box_rows}x{self.box_cols} is not supported; use one of {shapes}.")
        check_bool("partial_credit", self.partial_credit)
        low, high = self.blank_range
        cap = MAX_BLANKS[self.size]
        for value in {low, high}:
            if not 1 <= value <= cap:
                raise ConfigError(
                    f"blanks must lie between 1 and {cap} for a {self.size}x{self.size} Sudoku, got {value}."
                )
        if low > high:
            raise ConfigError(f"The blanks range ({low}, {high}) is reversed; give it as (low, high).")

    @property
    def size(self) -> int:
        """Rows (and columns, and digits) of the grid."""
        return self.box_rows * self.box_cols

    @property
    def blank_range(self) -> tuple[int, int]:
        """The inclusive range of blanks per puzzle."""
        blanks = self.blanks
        if blanks is None:
            default = DEFAULT_BLANKS[self.size]
            return default, default
        if isinstance(blanks, bool):
            raise ConfigError(f"blanks must be an int or a (low, high) pair, got {blanks!r}.")
        if isinstance(blanks, int):
            return blanks, blanks
        if (
            isinstance(blanks, (tuple, list))
            and len(blanks) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in blanks)
        ):
            return int(blanks[0]), int(blanks[1])
        raise ConfigError(f"blanks must be an int or a (low, high) pair of ints, got {blanks!r}.")


def sudoku_difficulty(config: SudokuConfig) -> Difficulty:
    """The blank-cell ladder of ``config``'s grid size; ``default`` is the level of its own blanks, if one."""
    levels = tuple(Level(f"b{b}", {"blanks": b}, f"{b} blank cells of {config.size * config.size}")
                   for b in LEVEL_BLANKS[config.size])
    low, high = config.blank_range
    default = next((i for i, level in enumerate(levels) if low == high == level.knobs["blanks"]), None)
    return Difficulty(levels, default=default, grows="blank cells, and the solver's search nodes with them")


def format_grid(rows: list[str], box_rows: int, box_cols: int) -> str:
    """Lay out a grid for the prompt: digits separated by spaces, boxes outlined.

    Example:
        >>> print(format_grid(["1.34", "3412", "2143", "4321"], 2, 2))
        1 . | 3 4
        3 4 | 1 2
        ----+----
        2 1 | 4 3
        4 3 | 2 1
    """
    size = box_rows * box_cols
    lines = []
    for r, row in enumerate(rows):
        if r and r % box_rows == 0:
            lines.append(
                "+".join(
                    "-" * (2 * box_cols + (0 if b in (0, size // box_cols - 1) else 1)) for b in range(size // box_cols)
                )
            )
        groups = [" ".join(row[c : c + box_cols]) for c in range(0, size, box_cols)]
        lines.append(" | ".join(groups))
    return "\n".join(lines)


def build_prompt(rows: list[str], box_rows: int, box_cols: int) -> str:
    """The task text: rules, the grid, and the answer format."""
    size = box_rows * box_cols
    return (
        f"Solve this {size}x{size} Sudoku puzzle. Fill every blank cell (shown as '.') with a digit "
        f"from 1 to {size} so that each row, each column and each {box_rows}x{box_cols} box "
        f"(outlined by the lines) contains every digit from 1 to {size} exactly once. "
        "The given digits must stay as they are; the puzzle has exactly one solution.\n\n"
        f"{format_grid(rows, box_rows, box_cols)}\n\n"
        f"Write the completed grid inside <answer></answer> tags: {size} lines, one per row, "
        f"each with the row's {size} digits separated by spaces. Box lines are optional."
    )


class SudokuGenerator(UnboundedSource):
    """The task source of the Sudoku envs: ``task(index, split)`` is deterministic.

    Example:
        >>> gen = SudokuGenerator(SudokuConfig(box_rows=2, box_cols=2, blanks=10))
        >>> task = gen.task(0, "train")
        >>> task.meta["blanks"], "".join(task.meta["puzzle"]).count(".")
        (10, 10)
        >>> gen.task(0, "train") == task
        True
    """

    def __init__(self, config: SudokuConfig, env_id: str | None = None) -> None:
        self.config = config
        self.env_id = env_id or default_env_id(config.box_rows, config.box_cols)
        self.box = (config.box_rows, config.box_cols)
        self.family = f"sudoku-{config.box_rows}x{config.box_cols}"
        geometry(self.box)  # build the shared tables once, up front

    def solution_grid(self, index: int, split: str) -> tuple[list[int], np.random.Generator]:
        """The solution grid of task ``index`` and the generator to carve it with.

        The first attempt's generator searches a random base grid; every
        attempt (the first included) shuffles it with its own generator (band,
        row, stack, column and digit permutations) into a candidate, and
        :func:`~rollgym.core.seeding.draw_in_split` keeps the first candidate
        that belongs to ``split``. A rejected candidate costs a shuffle, not a search.
        """
        n = self.config.size
        digits = np.arange(1, n + 1)
        base: list[int] = []

        def candidate(rng: np.random.Generator) -> list[int]:
            if not base:
                base.extend(random_grid(self.box, rng.permuted(np.tile(digits, (n * n, 1)), axis=1).tolist()))
            return transform_grid(base, self.box, rng.random(4 * n).tolist())

        return draw_in_split(self.family, split, index, candidate, key=lambda grid: bytes(grid))

    def puzzle(self, solution: list[int], rng: np.random.Generator) -> tuple[list[int], int]:
        """Carve ``solution`` down to the requested blanks; returns ``(puzzle, blanks requested)``."""
        low, high = self.config.blank_range
        wanted = int(rng.integers(low, high + 1)) if high > low else low
        cells = len(solution)
        best: list[int] = list(solution)
        for _ in range(MAX_CARVE_ATTEMPTS):
            puzzle = carve(solution, rng.permutation(cells).tolist(), wanted, self.box)
            if puzzle.count(0) > best.count(0):
                best = puzzle
            if puzzle.count(0) >= wanted:
                break
        return best, wanted

    def task(self, index: int, split: str = "train") -> Task:
        """Task ``index`` of ``split``; the same task every time."""
        solution, rng = self.solution_grid(index, split)
        puzzle, wanted = self.puzzle(solution, rng)
        n, (box_rows, box_cols) = self.config.size, self.box
        puzzle_rows, solution_rows = rows_from_grid(puzzle, n), rows_from_grid(solution, n)
        digest = content_digest("\n".join(puzzle_rows), "\n".join(solution_rows))
        meta: dict[str, Any] = {
            "size": n,
            "box": [box_rows, box_cols],
            "blanks": puzzle.count(0),
            "blanks_requested": wanted,
            "givens": n * n - puzzle.count(0),
            "puzzle": puzzle_rows,
        }
        return Task(
            id=f"{self.env_id}:{split}:{index}:{digest}",
            env_id=self.env_id,
            prompt=build_prompt(puzzle_rows, box_rows, box_cols),
            answer=solution_rows,
            meta=meta,
        )
