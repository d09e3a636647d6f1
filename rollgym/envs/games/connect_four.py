"""Connect Four on bitboards, any size and any run length, and its text env.

The board is stored column by column in two Python integers (one per player),
``rows + 1`` bits per column; the spare top bit of each column keeps runs from
wrapping into the next column. A run of ``k`` stones in direction ``d`` is found
with ``O(log k)`` shift-and-mask steps over the whole board.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from rollgym.core.difficulty import Level
from rollgym.core.errors import ConfigError
from rollgym.envs.games.base import MoveError, StoneGridState
from rollgym.envs.games.config import ConnectFourConfig
from rollgym.envs.games.text_env import TwoPlayerTextEnv

_COLUMN_RE = re.compile(r"^(?:col(?:umn)?|drop(?:\s+in)?(?:\s+col(?:umn)?)?|move)?\s*[:#]?\s*(-?\d+)$")


def _has_run(board: int, shift: int, k: int) -> bool:
    """Whether ``board`` has ``k`` set bits in a row, ``shift`` apart."""
    m = board
    run = 1
    while run * 2 <= k:
        m &= m >> (shift * run)
        run *= 2
    if run < k:
        m &= m >> (shift * (k - run))
    return m != 0


class ConnectFourState(StoneGridState):
    """A Connect Four position: ``rows`` x ``columns``, ``x_in_row`` stones in a line win.

    Player 0 is ``X`` and moves first; player 1 is ``O``. A move is a column
    index (0-based); as text it is the 1-based column number shown on the board.

    Example:
        >>> s = ConnectFourState()
        >>> for col in [3, 2, 3, 2, 3, 2, 3]:
        ...     s.play(col)
        >>> s.is_terminal(), s.winner()
        (True, 0)
        >>> s.parse_move("column 4")
        Traceback (most recent call last):
        ...
        rollgym.envs.games.base.MoveError: the game is over
    """

    game_name = "connect_four"
    player_names = ("X", "O")

    def __init__(self, rows: int = 6, columns: int = 7, x_in_row: int = 4) -> None:
        super().__init__()
        for name, value, low in (("rows", rows, 1), ("columns", columns, 1), ("x_in_row", x_in_row, 2)):
            if not isinstance(value, int) or value < low:
                raise ConfigError(f"Connect Four {name} must be an integer >= {low}, got {value!r}.")
        if x_in_row > max(rows, columns):
            raise ConfigError(f"x_in_row={x_in_row} cannot fit on a {rows}x{columns} board; lower it.")
        self.rows, self.columns, self.x_in_row = rows, columns, x_in_row
        self._h1 = rows + 1
        self.boards = [0, 0]
        self.heights = [c * self._h1 for c in range(columns)]
        self._tops = [c * self._h1 + rows for c in range(columns)]  # first bit above each column
        self._winner: int | None = None
        self._count = 0

    # -- rules ------------------------------------------------------------
    @property
    def current_player(self) -> int:
        return self._count & 1

    def _open(self, col: int) -> bool:
        return self.heights[col] < self._tops[col]

    def legal_moves(self) -> list[int]:
        if self._winner is not None:
            return []
        tops = self._tops
        return [c for c, h in enumerate(self.heights) if h < tops[c]]

    def _wins(self, board: int) -> bool:
        h1, k = self._h1, self.x_in_row
        if k == 4:
            m = board & (board >> 1)
            if m & (m >> 2):
                return True
            m = board & (board >> h1)
            if m & (m >> (2 * h1)):
                return True
            m = board & (board >> (h1 - 1))
            if m & (m >> (2 * h1 - 2)):
                return True
            m = board & (board >> (h1 + 1))
            return bool(m & (m >> (2 * h1 + 2)))
        return any(_has_run(board, d, k) for d in (1, h1, h1 - 1, h1 + 1))

    def play(self, move: int) -> None:
        player = self._count & 1
        bit = 1 << self.heights[move]
        self.heights[move] += 1
        self.boards[player] |= bit
        self._count += 1
        self.history.append(move)
        if self._wins(self.boards[player]):
            self._winner = player

    def copy(self) -> ConnectFourState:
        new = ConnectFourState.__new__(ConnectFourState)
        new.rows, new.columns, new.x_in_row, new._h1 = self.rows, self.columns, self.x_in_row, self._h1
        new.boards = self.boards[:]
        new.heights = self.heights[:]
        new._tops = self._tops  # shared: never mutated
        new._winner, new._count = self._winner, self._count
        new.history = self.history[:]
        return new

    def is_terminal(self) -> bool:
        return self._winner is not None or self._count == self.rows * self.columns

    def winner(self) -> int | None:
        return self._winner

    def winning_moves(self, player: int) -> list[int]:
        if self.is_terminal():
            return []
        board = self.boards[player]
        return [c for c in range(self.columns) if self._open(c) and self._wins(board | (1 << self.heights[c]))]

    def random_playout(self, rng: np.random.Generator) -> int | None:
        """Finish the game with uniformly random moves; returns the winner (``None`` = draw)."""
        if self.is_terminal():
            return self._winner
        # A 64-bit LCG seeded from ``rng``: a fresh random.Random costs more to seed than a whole playout.
        x = int(rng.bit_generator.random_raw())
        h1, rows, k = self._h1, self.rows, self.x_in_row
        heights, boards = self.heights, self.boards
        open_cols = [c for c in range(self.columns) if heights[c] < c * h1 + rows]
        player = self._count & 1
        count, full = self._count, self.rows * self.columns
        record = self.history.append
        wins = self._wins
        d1, d2, d3, d4 = 1, h1, h1 - 1, h1 + 1
        while True:
            x = (x * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
            i = ((x >> 32) * len(open_cols)) >> 32
            col = open_cols[i]
            b = boards[player] | (1 << heights[col])
            boards[player] = b
            heights[col] += 1
            count += 1
            record(col)
            if heights[col] == col * h1 + rows:
                open_cols[i] = open_cols[-1]
                open_cols.pop()
            if k == 4:  # inlined four-in-a-row test: this loop is the hot path of MCTS rollouts
                m = b & (b >> d1)
                won = bool(m & (m >> 2 * d1))
                if not won:
                    m = b & (b >> d2)
                    won = bool(m & (m >> 2 * d2))
                if not won:
                    m = b & (b >> d3)
                    won = bool(m & (m >> 2 * d3))
                if not won:
                    m = b & (b >> d4)
                    won = bool(m & (m >> 2 * d4))
            else:
                won = wins(b)
            if won:
                self._winner = player
                break
            if count == full:
                break
            player ^= 1
        self._count = count
        return self._winner

    # -- text -------------------------------------------------------------
    def cell(self, row: int, col: int) -> int | None:
        """The owner of the cell at ``row`` (0 = bottom) and ``col``, or ``None`` when empty."""
        bit = 1 << (col * self._h1 + row)
        if self.boards[0] & bit:
            return 0
        if self.boards[1] & bit:
            return 1
        return None

    def parse_move(self, text: str) -> int:
        if self.is_terminal():
            raise MoveError("illegal", "the game is over")
        token = text.strip().strip("[]()`*'\".!").strip().lower()
        match = _COLUMN_RE.match(token)
        if not match:
            raise MoveError(
                "invalid", f"{text.strip()!r} is not a column number; answer with one of 1 to {self.columns}"
            )
        number = int(match.group(1))
        if not 1 <= number <= self.columns:
            raise MoveError("invalid", f"column {number} is off the board; columns run from 1 to {self.columns}")
        if not self._open(number - 1):
            raise MoveError("illegal", f"column {number} is full")
        return number - 1

    def move_to_text(self, move: int) -> str:
        return str(move + 1)

    def ascii(self) -> str:
        marks = {0: "X", 1: "O", None: "."}
        width = len(str(self.columns))
        lines = []
        for row in range(self.rows - 1, -1, -1):
            lines.append(" ".join(marks[self.cell(row, c)].rjust(width) for c in range(self.columns)))
        lines.append(" ".join(str(c + 1).rjust(width) for c in range(self.columns)))
        return "\n".join(lines)

    def initial(self) -> ConnectFourState:
        return ConnectFourState(self.rows, self.columns, self.x_in_row)

    def config(self) -> dict[str, Any]:
        return {"game": "connect_four", "rows": self.rows, "columns": self.columns, "x_in_row": self.x_in_row}

    # -- arrays -----------------------------------------------------------
    @property
    def num_actions(self) -> int:
        return self.columns

    @property
    def grid_shape(self) -> tuple[int, int]:
        return (self.rows, self.columns)

    def stones(self) -> Iterator[tuple[int, int, int]]:
        """Every stone, top row first (X is player 0)."""
        for row in range(self.rows):
            for col in range(self.columns):
                owner = self.cell(row, col)
                if owner is not None:
                    yield self.rows - 1 - row, col, owner


class ConnectFourEnv(TwoPlayerTextEnv):
    """Connect Four against a built-in opponent, in text.

    ## Description
    The agent plays one colour of Connect Four (``rows`` x ``columns``, ``x_in_row``
    stones in a line to win; 6 x 7, four in a row by default) against a bot
    (random, greedy, MCTS with N simulations). X moves first.

    ## Action Space
    A string (:class:`~rollgym.core.spaces.TextSpace`). The move is read from the
    last ``Final Answer: <column>`` line, else the last bracketed token (``[4]``,
    ``[col 4]``), else a reply that is only a column number. Columns are 1-based as
    printed under the board. Hermes ``<tool_call>`` blocks call the optional tools.

    ## Observation Space
    A string: the board (rows top to bottom, column numbers underneath), whose turn
    it is, the move history, the legal moves (``show_legal_moves``), what went wrong
    with the last answer, and how to answer.

    ## Starting State
    The empty board, plus ``random_opening_plies`` random moves; if the agent plays
    O the opponent moves first. The agent's colour comes from ``agent_color``.

    ## Rewards
    0 on every non-final step; at the end 1 / 0.5 / 0 for a win / draw / loss
    (``reward_scheme="score"``), or +1 / 0 / -1 (``reward_scheme="signed"``).
    A forfeit is a loss.

    ## Episode End
    Terminated when the game ends (a line, a full board) or the agent forfeits after
    ``max_retries`` unplayable answers (``illegal_move_policy="forfeit"``); with
    ``illegal_move_policy="random"`` a random legal move is played instead.
    Truncated when the opponent bot fails (it raises, or returns an illegal move, which
    is never played): ``info["error"] == "opponent_failed"``, the reason in
    ``info["failure"]``, reward 0; the rollout collector records the episode as failed.

    ## Information
    ``legal_moves`` (strings), ``moves`` (history), ``to_play``, ``agent_player``,
    ``board`` (ASCII), ``game_config``, ``error`` (``no_move``, ``invalid``,
    ``illegal``, ``ambiguous``, ``opponent_failed`` or ``None``), ``retries_left``; at
    the end ``result`` (``win``/``draw``/``loss``), ``termination``, ``record`` (JSON
    move list) and the Score fields of every rollgym env: ``reward``, ``correct`` (the
    agent won; a draw is not correct), ``parsed`` (the agent's last move), ``error`` and
    ``details`` (``result``, ``points``, ``termination``, ``reward_scheme``); after an
    opponent failure ``failure`` (``type``, ``message``).

    ## Arguments
    ``rows=6, columns=7, x_in_row=4``, plus those of
    :class:`~rollgym.envs.games.text_env.TwoPlayerTextEnv`: ``opponent`` (``"random"``,
    ``"greedy"``, ``"mcts-400"`` or a bot object), ``agent_color``
    (``"alternate"``, ``"random"``, ``"first"``, ``"second"``), ``illegal_move_policy``,
    ``max_retries``, ``reward_scheme``, ``show_legal_moves``, ``random_opening_plies``,
    ``tools``, ``tool_budget``, ``split``, ``render_mode``. (Connect Four needs no ply cap: the board fills.)

    ## Version History
    * v0: initial release. (The terminal ``info`` later gained the Score fields, with
      ``correct`` true only for a win; rewards and tasks did not change.)
    """

    default_env_id = "ConnectFour-v0"
    levels = (
        Level("random", {"opponent": "random"}, "a random opponent"),
        Level("greedy", {"opponent": "greedy"}, "a greedy opponent (wins and blocks at once)"),
        Level("mcts-50", {"opponent": "mcts-50"}, "MCTS with 50 simulations a move"),
        Level("mcts-200", {"opponent": "mcts-200"}, "MCTS with 200 simulations a move"),
        Level("mcts-1000", {"opponent": "mcts-1000"}, "MCTS with 1,000 simulations a move"),
    )
    game_title = "Connect Four"
    move_hint = "a column number"
    move_example = "4"

    def __init__(self, rows: int = 6, columns: int = 7, x_in_row: int = 4, **kwargs: Any) -> None:
        self.config = ConnectFourConfig(rows=rows, columns=columns, x_in_row=x_in_row)
        super().__init__(**kwargs)

    def new_state(self, task_meta: dict[str, Any]) -> ConnectFourState:
        c = replace(self.config, **task_meta.get("board", {}))  # a difficulty level may set the board
        return ConnectFourState(c.rows, c.columns, c.x_in_row)

    def board_options(self) -> dict[str, Any]:
        c = self.config
        return {"rows": c.rows, "columns": c.columns, "x_in_row": c.x_in_row}

    def rules_text(self) -> str:
        return self.level_rules_text({})

    def level_rules_text(self, board: Mapping[str, Any]) -> str:
        c = replace(self.config, **board)
        return (
            f"Connect Four on a board of {c.rows} rows and {c.columns} columns: players take turns dropping "
            f"a stone into a column, where it falls to the lowest empty cell. The first to line up {c.x_in_row} "
            "stones horizontally, vertically or diagonally wins; a full board is a draw. X moves first."
        )
