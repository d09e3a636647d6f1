"""The options of the game envs as frozen, self-checking config dataclasses.

:class:`PlayConfig` holds what every game env shares (the agent's side, the
illegal-move policy, rewards, tools); :class:`ConnectFourConfig`,
:class:`HexConfig` and :class:`ChessConfig` hold each game's own. A bad value
raises :class:`~rollgym.core.errors.ConfigError` naming the field, its bound or
its choices, at construction.

Example:
    >>> PlayConfig(reward_scheme="sign")
    Traceback (most recent call last):
    ...
    rollgym.core.errors.ConfigError: reward_scheme must be one of 'score', 'signed', got 'sign'; did you mean 'signed'?
"""

from __future__ import annotations

from dataclasses import dataclass

from rollgym.core.config import check_bool, check_choice, check_int

AGENT_COLORS = ("alternate", "random", "first", "second")
ILLEGAL_MOVE_POLICIES = ("forfeit", "random")
REWARD_SCHEMES = ("score", "signed")


@dataclass(frozen=True)
class PlayConfig:
    """How the agent plays any game.

    Attributes:
        agent_color: ``"alternate"`` (by task index parity), ``"random"`` (drawn per task),
            ``"first"`` or ``"second"``.
        illegal_move_policy: after ``max_retries`` unplayable answers in one turn, ``"forfeit"``
            (the agent loses) or ``"random"`` (a random legal move is played for it).
        max_retries: retries per turn (0 or more), each with feedback on what was wrong.
        reward_scheme: ``"score"`` (1 / 0.5 / 0) or ``"signed"`` (+1 / 0 / -1).
        show_legal_moves: list the legal moves in every observation.
        random_opening_plies: random moves (0 or more) played before the agent's first turn.
        tools: offer ``legal_moves()`` and ``simulate(moves)`` as Hermes tool calls.
        tool_budget: tool calls (0 or more) allowed per episode.
    """

    agent_color: str = "alternate"
    illegal_move_policy: str = "forfeit"
    max_retries: int = 1
    reward_scheme: str = "score"
    show_legal_moves: bool = True
    random_opening_plies: int = 0
    tools: bool = False
    tool_budget: int = 20

    def __post_init__(self) -> None:
        check_choice("agent_color", self.agent_color, AGENT_COLORS)
        check_choice("illegal_move_policy", self.illegal_move_policy, ILLEGAL_MOVE_POLICIES)
        check_int("max_retries", self.max_retries, 0)
        check_choice("reward_scheme", self.reward_scheme, REWARD_SCHEMES)
        check_bool("show_legal_moves", self.show_legal_moves)
        check_int("random_opening_plies", self.random_opening_plies, 0)
        check_bool("tools", self.tools)
        check_int("tool_budget", self.tool_budget, 0)


@dataclass(frozen=True)
class ConnectFourConfig:
    """A Connect Four board: ``rows`` x ``columns`` (at least 1 each), ``x_in_row`` stones in a line to win."""

    rows: int = 6
    columns: int = 7
    x_in_row: int = 4

    def __post_init__(self) -> None:
        check_int("rows", self.rows, 1)
        check_int("columns", self.columns, 1)
        check_int("x_in_row", self.x_in_row, 2, max(self.rows, self.columns),
                  high_name="the longer side of the board")


@dataclass(frozen=True)
class HexConfig:
    """A Hex board: ``size`` x ``size`` (5 to 19) and whether the second player may ``swap``."""

    size: int = 11
    swap: bool = False

    def __post_init__(self) -> None:
        check_int("size", self.size, 5, 19)
        check_bool("swap", self.swap)


@dataclass(frozen=True)
class ChessConfig:
    """Chess: the ply cap (``max_plies``, at least 1, or ``None`` for none; the game is then a draw)
    and, for Chess960, a fixed ``start_position`` (0 to 959) or ``None`` to draw one per task."""

    max_plies: int | None = 300
    start_position: int | None = None

    def __post_init__(self) -> None:
        check_int("max_plies", self.max_plies, 1, allow_none=True)
        check_int("start_position", self.start_position, 0, 959, allow_none=True)
