"""The Sudoku envs (``Sudoku-v0``, ``Sudoku4x4-v0``, ``Sudoku6x6-v0``), their oracle and random policy."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from rollgym.core.difficulty import Difficulty, Level
from rollgym.core.env import SingleTurnEnv
from rollgym.core.registration import register_env
from rollgym.core.task import Score, Task
from rollgym.envs.sudoku.generator import SudokuConfig, SudokuGenerator, default_env_id, sudoku_difficulty
from rollgym.envs.sudoku.solver import solve
from rollgym.verifiers.sudoku import grid_from_rows, puzzle_shape, rows_from_grid, verify_sudoku

SYSTEM_PROMPT = (
    "You solve logic puzzles. Reason step by step if it helps, then give the completed grid "
    "inside <answer></answer> tags."
)


class SudokuEnv(SingleTurnEnv):
    """Fill in a Sudoku grid so that every row, column and box holds each digit once.

    ## Description
    A single-turn puzzle. The prompt shows a grid with ``.`` for blank cells,
    boxes outlined, the rules and the answer format. Every puzzle has exactly
    one solution, proved by a bitmask solver when the puzzle is generated.
    Train, validation and test never share a solution grid.

    ## Action Space
    ``TextSpace(1_000_000)``: the model's reply. The completed grid must sit in
    the last ``<answer>...</answer>`` block; rows of digits with or without
    spaces, box lines, markdown tables, commas and JSON lists are all read.

    ## Observation Space
    ``TextSpace(100_000)``: the prompt at reset, ``""`` after the step.

    ## Starting State
    A task drawn from the split (``train`` by default) by the env's RNG, or
    chosen with ``reset(options={"task_index": i, "split": s})``. With
    ``options={"difficulty": k}`` it is drawn from level ``k`` (0-4) of the grid's
    blank-cell ladder (9x9: 25, 35, 45, 52, 58 blanks; 6x6: 10, 15, 20, 23, 26; 4x4: 4, 7,
    10, 11, 12); level 2 is each id's default.

    ## Rewards
    ``1.0`` when the grid keeps every given and each row, column and box is a
    permutation of the digits, else ``0.0``. With ``partial_credit=True`` a wrong
    answer earns the fraction of blanks filled with the right digit (givens never
    count); ``info["details"]["partial_credit"]`` reports it either way.

    ## Episode End
    After one step: ``terminated=True``, ``truncated=False``.

    ## Information
    ``task_id``, ``env_id``, ``split``, ``task_index``, ``system_prompt`` and
    ``task_meta`` (``size``, ``box``, ``blanks``, ``blanks_requested``,
    ``givens``, ``puzzle``: one string per row, ``.`` for a blank). After the
    step: ``reward``, ``correct``, ``parsed`` (the grid read, one string per
    row), ``error`` (``no_answer``, ``malformed``, ``wrong_size``,
    ``changed_given``, ``invalid`` or ``None``) and ``details`` (``reason``,
    ``partial_credit``, ``blanks``).

    ## Arguments
    ``box_rows``, ``box_cols`` (box shape: 3x3, 2x2, 2x3, 3x2, 2x4 or 4x2),
    ``blanks`` (int or ``(low, high)``; defaults 45 for 9x9, 20 for 6x6, 10 for
    4x4; at most 58, 26, 12), ``partial_credit`` (``False``), ``split``
    (``"train"``), ``render_mode`` (``None``, ``"ansi"`` or ``"human"``).

    ## Version History
    * v0: first release.
    """

    system_prompt = SYSTEM_PROMPT
    default_env_id = "Sudoku-v0"

    def __init__(
        self,
        box_rows: int = 3,
        box_cols: int = 3,
        blanks: int | tuple[int, int] | None = None,
        partial_credit: bool = False,
        *,
        split: str = "train",
        render_mode: str | None = None,
    ) -> None:
        self.config = SudokuConfig(box_rows=box_rows, box_cols=box_cols, blanks=blanks, partial_credit=partial_credit)
        super().__init__(split=split, render_mode=render_mode)

    def _make_source(self, env_id: str) -> SudokuGenerator:
        return SudokuGenerator(self.config, env_id=env_id)

    @property
    def generator(self) -> SudokuGenerator:
        """The task source: a :class:`SudokuGenerator` whose tasks carry this env's id."""
        source = self.source
        assert isinstance(source, SudokuGenerator)
        return source

    @property
    def env_id(self) -> str:
        """The id this env was made with, or the registered id of its box shape outside ``gym.make``."""
        return self.spec.id if self.spec is not None else default_env_id(self.config.box_rows, self.config.box_cols)

    @property
    def difficulty(self) -> Difficulty:
        """Five levels of blank cells (9x9: 25 to 58; 6x6: 10 to 26; 4x4: 4 to 12); the middle one is the default."""
        return sudoku_difficulty(self.config)

    def _level_source(self, env_id: str, level: Level) -> SudokuGenerator:
        return SudokuGenerator(replace(self.config, blanks=level.knobs["blanks"]), env_id=env_id)

    def verify(self, task: Task, response: str) -> Score:
        """Score a reply with :func:`~rollgym.verifiers.sudoku.verify_sudoku`."""
        return verify_sudoku(task, response, partial_credit=self.config.partial_credit)


def format_answer(rows: list[str]) -> str:
    """A grid as the prompt asks for it: ``<answer>``, one row per line, digits spaced."""
    return "<answer>\n" + "\n".join(" ".join(row) for row in rows) + "\n</answer>"


def oracle_policy(observation: str, info: dict[str, Any]) -> str:
    """Solve the public puzzle in ``info["task_meta"]`` with the bitmask solver."""
    meta = info["task_meta"]
    size, box_rows, box_cols = puzzle_shape(meta)
    solution = solve(grid_from_rows(list(meta["puzzle"])), (box_rows, box_cols))
    if solution is None:
        return "<answer>no solution</answer>"
    return format_answer(rows_from_grid(solution, size))


def random_policy(observation: str, info: dict[str, Any], rng: np.random.Generator) -> str:
    """The givens kept and every blank filled with a uniformly random digit, as a well-formed grid."""
    meta = info["task_meta"]
    size, _, _ = puzzle_shape(meta)
    cells = grid_from_rows(list(meta["puzzle"]))
    guesses = rng.integers(1, size + 1, size=len(cells)).tolist()
    filled = [value or guess for value, guess in zip(cells, guesses)]
    return format_answer(rows_from_grid(filled, size))


for _id, (_rows, _cols), _text in [
    ("Sudoku-v0", (3, 3), "Classic 9x9 Sudoku with a unique solution; answer the full grid."),
    ("Sudoku4x4-v0", (2, 2), "4x4 Sudoku (2x2 boxes) with a unique solution; answer the full grid."),
    ("Sudoku6x6-v0", (2, 3), "6x6 Sudoku (2x3 boxes) with a unique solution; answer the full grid."),
]:
    register_env(
        _id,
        "rollgym.envs.sudoku.env:SudokuEnv",
        description=_text,
        family="puzzles",
        kwargs={"box_rows": _rows, "box_cols": _cols},
        oracle="rollgym.envs.sudoku.env:oracle_policy",
        random_policy="rollgym.envs.sudoku.env:random_policy",
        private_state="rollgym.core.private:task_answer",
        grader="pure",
    )
