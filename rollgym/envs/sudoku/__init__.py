"""Sudoku: ``Sudoku-v0`` (9x9), ``Sudoku4x4-v0`` and ``Sudoku6x6-v0``, with a bitmask solver.

* :mod:`~rollgym.envs.sudoku.solver`: bitmask MRV solver, solution counting, carving.
* :mod:`~rollgym.envs.sudoku.generator`: :class:`SudokuConfig`, :class:`SudokuGenerator`, the prompt.
* :mod:`~rollgym.envs.sudoku.env`: :class:`SudokuEnv`, the oracle and random policies, registration.

The verifier lives in :mod:`rollgym.verifiers.sudoku`.
"""

from rollgym.envs.sudoku.env import SudokuEnv, oracle_policy, random_policy
from rollgym.envs.sudoku.generator import SudokuConfig, SudokuGenerator
from rollgym.envs.sudoku.solver import count_solutions, solve

__all__ = [
    "SudokuConfig",
    "SudokuEnv",
    "SudokuGenerator",
    "count_solutions",
    "oracle_policy",
    "random_policy",
    "solve",
]
