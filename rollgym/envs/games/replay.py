"""Rebuild any game's position from its config and move list (bots as agents, PettingZoo, records).

Separate from :mod:`rollgym.envs.games.base` because it imports every game: a
single game's env does not need it, so its spec hash does not cover the others.
"""

from __future__ import annotations

from typing import Any

from rollgym.envs.games.base import GameState


def state_from_config(config: dict[str, Any]) -> GameState:
    """Rebuild a start position from :meth:`GameState.config` output.

    Example:
        >>> state_from_config({"game": "connect_four", "rows": 6, "columns": 7, "x_in_row": 4}).num_actions
        7
    """
    config = dict(config)
    game = config.pop("game", None)
    if game == "connect_four":
        from rollgym.envs.games.connect_four import ConnectFourState

        return ConnectFourState(**config)
    if game == "hex":
        from rollgym.envs.games.hex import HexState

        return HexState(**config)
    if game == "chess":
        from rollgym.envs.games.chess_state import ChessState

        return ChessState(**config)
    raise ValueError(f"Unknown game {game!r}; use 'connect_four', 'hex' or 'chess'.")


def replay(config: dict[str, Any], moves: list[str]) -> GameState:
    """The position after playing ``moves`` (canonical text) from the start position of ``config``."""
    state = state_from_config(config)
    for text in moves:
        state.play(state.parse_move(text))
    return state
