"""Hex on a union-find of stones and edges, with the optional swap (pie) rule, and its text env.

Cells are numbered ``row * size + col``. Black (``x``, player 0) joins the top
and bottom rows, White (``o``, player 1) the left and right columns. Four extra
union-find nodes stand for the edges; a player has won once their two edges
share a root. Random playouts fill the board at once and flood-fill it, which
gives the same winner as playing the moves one by one (Hex has no draws, and
a filled board has exactly one winning chain).
"""

from __future__ import annotations

import re
from bisect import bisect_left, insort
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from rollgym.core.difficulty import Level
from rollgym.core.errors import ConfigError
from rollgym.envs.games.base import MoveError, StoneGridState
from rollgym.envs.games.config import HexConfig
from rollgym.envs.games.text_env import TwoPlayerTextEnv

_CELL_RE = re.compile(r"^([a-z])\s*(\d{1,2})$")
_NEIGHBOUR_OFFSETS = ((-1, 0), (-1, 1), (0, 1), (1, 0), (1, -1), (0, -1))


_NEIGHBOUR_TABLES: dict[int, list[list[int]]] = {}


def _neighbour_table(size: int) -> list[list[int]]:
    """The neighbours of every cell of a ``size`` board, built once per size and shared (never mutated)."""
    if size not in _NEIGHBOUR_TABLES:
        _NEIGHBOUR_TABLES[size] = [
            [(r + dr) * size + (c + dc) for dr, dc in _NEIGHBOUR_OFFSETS if 0 <= r + dr < size and 0 <= c + dc < size]
            for r in range(size)
            for c in range(size)
        ]
    return _NEIGHBOUR_TABLES[size]


class HexState(StoneGridState):
    """A Hex position on a ``size`` x ``size`` rhombus.

    Moves are cell indices ``row * size + col``; ``size * size`` is the swap move,
    legal only as the second move of the game when ``swap=True``. Swapping
    replaces Black's first stone at ``(r, c)`` with a White stone at ``(c, r)``
    and gives the turn back to Black, so each player keeps their edges. As text
    a cell is a column letter and a 1-based row, e.g. ``c3``; the swap is ``swap``.

    Example:
        >>> s = HexState(size=2)
        >>> for cell in ["a1", "b1", "a2"]:
        ...     s.play(s.parse_move(cell))
        >>> s.winner()
        0
    """

    game_name = "hex"
    player_names = ("Black", "White")

    def __init__(self, size: int = 11, swap: bool = False) -> None:
        super().__init__()
        if not isinstance(size, int) or not 2 <= size <= 26:
            raise ConfigError(f"Hex size must be an integer from 2 to 26, got {size!r}.")
        self.size = size
        self.swap = bool(swap)
        n = size * size
        self.swap_move = n
        # four edge nodes after the cells: top, bottom, left, right
        self._top, self._bottom, self._left, self._right = n, n + 1, n + 2, n + 3
        self.cells: list[int] = [-1] * n
        self._empty = list(range(n))  # sorted; a C-level delete per move beats rescanning the board
        self.parent = list(range(n + 4))
        self._count = 0
        self._player = 0
        self._winner: int | None = None
        self.neighbours = _neighbour_table(size)

    # -- union-find -----------------------------------------------------------
    def _find(self, x: int) -> int:
        parent = self.parent
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def _union(self, a: int, b: int) -> None:
        ra, rb = self._find(a), self._find(b)
        if ra != rb:
            self.parent[ra] = rb

    def _place(self, cell: int, player: int) -> None:
        size = self.size
        self.cells[cell] = player
        empty = self._empty
        del empty[bisect_left(empty, cell)]
        r, c = divmod(cell, size)
        if player == 0:
            if r == 0:
                self._union(cell, self._top)
            if r == size - 1:
                self._union(cell, self._bottom)
        else:
            if c == 0:
                self._union(cell, self._left)
            if c == size - 1:
                self._union(cell, self._right)
        for nb in self.neighbours[cell]:
            if self.cells[nb] == player:
                self._union(cell, nb)
        a, b = (self._top, self._bottom) if player == 0 else (self._left, self._right)
        if self._find(a) == self._find(b):
            self._winner = player

    # -- rules ------------------------------------------------------------
    @property
    def current_player(self) -> int:
        return self._player

    def legal_moves(self) -> list[int]:
        if self._winner is not None:
            return []
        moves = self._empty[:]
        if self.swap and self._count == 1:
            moves.append(self.swap_move)
        return moves

    def play(self, move: int) -> None:
        self.history.append(move)
        if move == self.swap_move:
            first = self.cells.index(0)
            r, c = divmod(first, self.size)
            self.cells[first] = -1
            insort(self._empty, first)
            self.parent = list(range(len(self.parent)))
            self._place(c * self.size + r, 1)
            self._count += 1
            self._player = 0
            return
        self._place(move, self._player)
        self._count += 1
        self._player ^= 1

    def copy(self) -> HexState:
        new = HexState.__new__(HexState)
        new.history = self.history[:]
        new.size, new.swap, new.swap_move = self.size, self.swap, self.swap_move
        new._top, new._bottom, new._left, new._right = self._top, self._bottom, self._left, self._right
        new.cells = self.cells[:]
        new._empty = self._empty[:]
        new.parent = self.parent[:]
        new._count, new._player, new._winner = self._count, self._player, self._winner
        new.neighbours = self.neighbours  # shared: never mutated
        return new

    def is_terminal(self) -> bool:
        return self._winner is not None

    def winner(self) -> int | None:
        return self._winner

    def winning_moves(self, player: int) -> list[int]:
        if self._winner is not None:
            return []
        size = self.size
        a, b = (self._top, self._bottom) if player == 0 else (self._left, self._right)
        root_a, root_b = self._find(a), self._find(b)
        wins = []
        for cell in self._empty:
            r, c = divmod(cell, size)
            edge_coord = r if player == 0 else c
            touches_a = edge_coord == 0
            touches_b = edge_coord == size - 1
            for nb in self.neighbours[cell]:
                if self.cells[nb] == player:
                    root = self._find(nb)
                    touches_a = touches_a or root == root_a
                    touches_b = touches_b or root == root_b
            if touches_a and touches_b:
                wins.append(cell)
        return wins

    def random_playout(self, rng: np.random.Generator) -> int | None:
        """Finish the game with random moves; returns the winner (Hex has no draws)."""
        if self._winner is not None:
            return self._winner
        if self.swap and self._count == 1:  # the swap is one more legal move here
            moves = self.legal_moves()
            self.play(moves[int(rng.integers(len(moves)))])
        empties = rng.permutation(self._empty).tolist()
        self._empty = []
        cells, player = self.cells, self._player
        for cell in empties:
            cells[cell] = player
            player ^= 1
        # Black wins a full board exactly when a Black chain joins top and bottom.
        size = self.size
        seen = [False] * (size * size)
        stack = [c for c in range(size) if cells[c] == 0]
        for c in stack:
            seen[c] = True
        winner = 1
        last_row = size * (size - 1)
        neighbours = self.neighbours
        while stack:
            cell = stack.pop()
            if cell >= last_row:
                winner = 0
                break
            for nb in neighbours[cell]:
                if not seen[nb] and cells[nb] == 0:
                    seen[nb] = True
                    stack.append(nb)
        self.history.extend(empties)
        self._count += len(empties)
        # the union-find is now stale, but a finished game is never played on or searched again
        self._winner = winner
        return winner

    # -- text -------------------------------------------------------------
    def cell_name(self, cell: int) -> str:
        """The text of a cell: column letter then 1-based row, e.g. ``c3``."""
        r, c = divmod(cell, self.size)
        return f"{chr(ord('a') + c)}{r + 1}"

    def parse_move(self, text: str) -> int:
        if self.is_terminal():
            raise MoveError("illegal", "the game is over")
        token = text.strip().strip("[]()`*'\".!").strip().lower()
        token = re.sub(r"^(?:cell|move|play)\s*[:#]?\s*", "", token)
        if token in {"swap", "pie", "swap pieces"}:
            if not self.swap:
                raise MoveError("illegal", "the swap rule is off in this game")
            if self._count != 1:
                raise MoveError("illegal", "swap is only allowed as the second move of the game")
            return self.swap_move
        match = _CELL_RE.match(token)
        if not match:
            last = chr(ord("a") + self.size - 1)
            where = f"columns a-{last}, rows 1-{self.size}"
            raise MoveError("invalid", f"{text.strip()!r} is not a Hex cell; name a cell like c3 ({where})")
        c = ord(match.group(1)) - ord("a")
        r = int(match.group(2)) - 1
        if not (0 <= c < self.size and 0 <= r < self.size):
            raise MoveError("invalid", f"{token} is off the {self.size}x{self.size} board")
        cell = r * self.size + c
        if self.cells[cell] >= 0:
            raise MoveError("illegal", f"{token} is already taken")
        return cell

    def move_to_text(self, move: int) -> str:
        return "swap" if move == self.swap_move else self.cell_name(move)

    def ascii(self) -> str:
        marks = {-1: ".", 0: "x", 1: "o"}
        size = self.size
        header = "    " + " ".join(chr(ord("a") + c) for c in range(size))
        lines = [header]
        for r in range(size):
            row = " ".join(marks[self.cells[r * size + c]] for c in range(size))
            lines.append(f"{r + 1:>2}  " + " " * r + row + f"  {r + 1}")
        lines.append("    " + " " * size + " ".join(chr(ord("a") + c) for c in range(size)))
        return "\n".join(lines)

    def initial(self) -> HexState:
        return HexState(self.size, self.swap)

    def config(self) -> dict[str, Any]:
        return {"game": "hex", "size": self.size, "swap": self.swap}

    # -- arrays -----------------------------------------------------------
    @property
    def num_actions(self) -> int:
        return self.size * self.size + (1 if self.swap else 0)

    @property
    def grid_shape(self) -> tuple[int, int]:
        return (self.size, self.size)

    def stones(self) -> Iterator[tuple[int, int, int]]:
        """Every stone (Black is player 0)."""
        for cell, owner in enumerate(self.cells):
            if owner >= 0:
                yield *divmod(cell, self.size), owner


class HexEnv(TwoPlayerTextEnv):
    """Hex against a built-in opponent, in text.

    ## Description
    The agent plays one colour of Hex on a ``size`` x ``size`` board (5 to 19; 11 by
    default) against a bot (random, greedy, MCTS). Black (``x``) moves first and
    joins the top and bottom rows; White (``o``) joins the left and right columns.
    With ``swap=True`` the second player may answer the first move with ``swap``.

    ## Action Space
    A string. The move is read from the last ``Final Answer: <cell>`` line, else the
    last bracketed token (``[c3]``), else a reply that is only a cell. A cell is a
    column letter and a 1-based row number (``c3``); ``swap`` claims the first stone.

    ## Observation Space
    A string: the board as a rhombus (row numbers left and right, column letters
    above and below), whose turn it is, the move history, the legal moves
    (``show_legal_moves``), what went wrong with the last answer, and how to answer.

    ## Starting State
    The empty board plus ``random_opening_plies`` random stones; if the agent plays
    White the opponent moves first.

    ## Rewards
    0 on non-final steps; at the end 1 / 0 for a win / loss (Hex has no draws), or
    +1 / -1 with ``reward_scheme="signed"``. A forfeit is a loss.

    ## Episode End
    Terminated when a player joins their edges or the agent forfeits; truncated as
    failed when the opponent bot fails (as for
    :class:`~rollgym.envs.games.connect_four.ConnectFourEnv`).

    ## Information
    As for :class:`~rollgym.envs.games.connect_four.ConnectFourEnv`.

    ## Arguments
    ``size=11``, ``swap=False``, plus those of
    :class:`~rollgym.envs.games.text_env.TwoPlayerTextEnv`.

    ## Version History
    * v0: initial release. (The terminal ``info`` later gained the Score fields, with
      ``correct`` true only for a win; rewards and tasks did not change.)
    """

    default_env_id = "Hex-v0"
    levels = (
        Level("5-random", {"opponent": "random", "size": 5}, "5x5 board, a random opponent"),
        Level("7-greedy", {"opponent": "greedy", "size": 7}, "7x7 board, a greedy opponent (wins and blocks at once)"),
        Level("9-mcts-100", {"opponent": "mcts-100", "size": 9}, "9x9 board, MCTS with 100 simulations a move"),
        Level("11-mcts-400", {"opponent": "mcts-400", "size": 11}, "11x11 board, MCTS with 400 simulations a move"),
        Level("11-mcts-1600", {"opponent": "mcts-1600", "size": 11},
              "11x11 board, MCTS with 1,600 simulations a move"),
    )
    game_title = "Hex"
    move_hint = "a cell such as c3"
    move_example = "c3"

    def __init__(self, size: int = 11, swap: bool = False, **kwargs: Any) -> None:
        self.config = HexConfig(size=size, swap=swap)
        super().__init__(**kwargs)

    def new_state(self, task_meta: dict[str, Any]) -> HexState:
        config = replace(self.config, **task_meta.get("board", {}))  # a difficulty level may set the size
        return HexState(config.size, config.swap)

    def board_options(self) -> dict[str, Any]:
        return {"size": self.config.size}

    def rules_text(self) -> str:
        return self.level_rules_text({})

    def level_rules_text(self, board: Mapping[str, Any]) -> str:
        config = replace(self.config, **board)
        size, swap = config.size, config.swap
        last = chr(ord("a") + size - 1)
        text = (
            f"Hex on a {size}x{size} rhombus of hexagonal cells (columns a-{last}, rows 1-{size}). Players take "
            "turns placing a stone on any empty cell. Black (x) moves first and wins by joining the top row to "
            "the bottom row with a chain of adjacent black stones; White (o) wins by joining the left column to "
            "the right column. Each cell touches six others: the cells left and right in its row, the two cells "
            "above it (same column and one column right) and the two below (same column and one column left). "
            "There are no draws."
        )
        if swap:
            text += " Swap rule: White's first move may be `swap`, which takes Black's stone (mirrored across the long diagonal) as White's and gives Black the next move."  # noqa: E501
        return text
