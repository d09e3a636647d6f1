"""The game-state contract shared by every board game, its bots and its envs.

A :class:`GameState` is a mutable two-player position with a move history.
Moves are game-specific values (an ``int`` column or cell for Connect Four and
Hex, a :class:`chess.Move` for chess); text goes in through :meth:`parse_move`
and comes out through :meth:`move_to_text`. Bots (:mod:`rollgym.envs.games.bots`), the text
env (:mod:`rollgym.envs.games.text_env`) and the PettingZoo adapter all talk to
this one interface.

Move parsing never raises anything but :class:`MoveError`, whose ``label`` is
one of :data:`MOVE_ERROR_LABELS`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np

from rollgym.core.deprecation import moved_to

#: Why an action did not give a legal move.
#:   ``no_move``   nothing that looks like a move was found;
#:   ``invalid``   a move was found but it is not in this game's notation (or off the board);
#:   ``illegal``   the move is well formed but not legal in this position;
#:   ``ambiguous`` the move names more than one legal move (SAN such as ``Nd2`` with two knights).
MOVE_ERROR_LABELS: tuple[str, ...] = ("no_move", "invalid", "illegal", "ambiguous")


class MoveError(ValueError):
    """A move text that cannot be played, with a label from :data:`MOVE_ERROR_LABELS`.

    Example:
        >>> err = MoveError("illegal", "column 3 is full")
        >>> err.label, str(err)
        ('illegal', 'column 3 is full')
    """

    def __init__(self, label: str, message: str) -> None:
        if label not in MOVE_ERROR_LABELS:
            raise ValueError(f"MoveError label must be one of {MOVE_ERROR_LABELS}, got {label!r}")
        super().__init__(message)
        self.label = label


class GameState(ABC):
    """A two-player, zero-sum, perfect-information position.

    Players are ``0`` (moves first) and ``1``. ``winner()`` is ``None`` while the
    game runs and on a draw; ``is_terminal()`` tells them apart.
    """

    #: Short machine name, e.g. ``"connect_four"``.
    game_name: ClassVar[str] = ""
    #: Display names of players 0 and 1.
    player_names: ClassVar[tuple[str, str]] = ("first", "second")

    def __init__(self) -> None:
        self.history: list[Any] = []

    # -- rules ------------------------------------------------------------
    @property
    @abstractmethod
    def current_player(self) -> int:
        """The player to move (0 or 1)."""

    @abstractmethod
    def legal_moves(self) -> list[Any]:
        """Every legal move, in a fixed order; empty when the game is over."""

    @abstractmethod
    def play(self, move: Any) -> None:
        """Play a legal ``move`` for the player to move (no legality check on fast paths)."""

    @abstractmethod
    def copy(self) -> GameState:
        """An independent copy of the position and its history."""

    @abstractmethod
    def is_terminal(self) -> bool:
        """Whether the game is over."""

    @abstractmethod
    def winner(self) -> int | None:
        """The winning player, or ``None`` while the game runs or after a draw."""

    def termination(self) -> str | None:
        """Why the game ended (``"win"``, ``"draw"``, or a game-specific reason), ``None`` while it runs."""
        if not self.is_terminal():
            return None
        return "win" if self.winner() is not None else "draw"

    def score(self, player: int) -> float:
        """``player``'s result in the finished game: 1 win, 0.5 draw, 0 loss."""
        winner = self.winner()
        if winner is None:
            return 0.5
        return 1.0 if winner == player else 0.0

    def winning_moves(self, player: int) -> list[Any]:
        """Moves that would win at once for ``player`` if it were ``player``'s turn.

        The generic version tries each legal move when ``player`` is to move and
        returns ``[]`` otherwise; games override it with something faster.
        """
        if player != self.current_player or self.is_terminal():
            return []
        wins = []
        for move in self.legal_moves():
            child = self.copy()
            child.play(move)
            if child.is_terminal() and child.winner() == player:
                wins.append(move)
        return wins

    def material(self, player: int) -> float:
        """A static material count for ``player`` (0 for games without material)."""
        return 0.0

    def random_playout(self, rng: np.random.Generator) -> int | None:
        """Play uniformly random moves on this state until the end; return the winner (``None`` = draw).

        Mutates the state. Games override it with a faster version.
        """
        while not self.is_terminal():
            moves = self.legal_moves()
            self.play(moves[int(rng.integers(len(moves)))])
        return self.winner()

    def is_legal(self, move: Any) -> bool:
        """Whether ``move`` may be played now (the envs check every move before it reaches the board)."""
        return move in self.legal_moves()

    # -- text -------------------------------------------------------------
    @abstractmethod
    def parse_move(self, text: str) -> Any:
        """Parse one move token (already extracted from the agent's answer) into a legal move.

        The result is always one of :meth:`legal_moves`, the one the text names in
        the game's documented notation; anything else raises.

        Raises:
            MoveError: labelled ``invalid``, ``illegal`` or ``ambiguous``, with a reason.
        """

    @abstractmethod
    def move_to_text(self, move: Any) -> str:
        """The canonical text of ``move`` in this position (before it is played)."""

    @abstractmethod
    def ascii(self) -> str:
        """The board as plain text with coordinates."""

    def move_history_text(self) -> list[str]:
        """The moves played so far, as canonical text."""
        replay = self.initial()
        texts = []
        for move in self.history:
            texts.append(replay.move_to_text(move))
            replay.play(move)
        return texts

    @abstractmethod
    def initial(self) -> GameState:
        """A fresh state with the same configuration and the same start position."""

    @abstractmethod
    def config(self) -> dict[str, Any]:
        """JSON-ready parameters that rebuild the start position (see :mod:`rollgym.envs.games.replay`)."""

    # -- arrays (PettingZoo) ---------------------------------------------
    @property
    @abstractmethod
    def num_actions(self) -> int:
        """Size of the integer action space used by the PettingZoo adapter."""

    @abstractmethod
    def action_of(self, move: Any) -> int:
        """The integer action of ``move``."""

    @abstractmethod
    def move_of(self, action: int) -> Any:
        """The move of integer ``action`` (which may be illegal in this position)."""

    @abstractmethod
    def planes(self, player: int) -> np.ndarray:
        """A float32 array of the board from ``player``'s point of view (own pieces first)."""

    @property
    @abstractmethod
    def planes_shape(self) -> tuple[int, ...]:
        """Shape of :meth:`planes`."""

    def action_mask(self) -> np.ndarray:
        """An int8 vector over actions, 1 where the action is a legal move."""
        mask = np.zeros(self.num_actions, dtype=np.int8)
        for move in self.legal_moves():
            mask[self.action_of(move)] = 1
        return mask


# state_from_config and replay import every game; they live in replay.py so that one game's
# env (and its spec hash) does not depend on the others' code.
__getattr__ = moved_to(__name__, {"state_from_config": "rollgym.envs.games.replay",
                                  "replay": "rollgym.envs.games.replay"})


class StoneGridState(GameState):
    """A game of stones on a grid whose moves are integers (a column, a cell): Connect Four and Hex.

    A subclass names its grid's shape and its stones; the integer actions and the planes follow.
    """

    @property
    @abstractmethod
    def grid_shape(self) -> tuple[int, int]:
        """``(rows, columns)`` of the grid as :meth:`planes` draws it."""

    @abstractmethod
    def stones(self) -> Iterator[tuple[int, int, int]]:
        """``(row, column, owner)`` of every stone, in the grid as :meth:`planes` draws it."""

    def action_of(self, move: int) -> int:
        return int(move)

    def move_of(self, action: int) -> int:
        return int(action)

    @property
    def planes_shape(self) -> tuple[int, ...]:
        return (*self.grid_shape, 3)

    def planes(self, player: int) -> np.ndarray:
        """Own stones, the opponent's stones, and ones when player 0 is to move."""
        out = np.zeros(self.planes_shape, dtype=np.float32)
        if self.current_player == 0:
            out[:, :, 2] = 1.0
        for row, col, owner in self.stones():
            out[row, col, 0 if owner == player else 1] = 1.0
        return out
