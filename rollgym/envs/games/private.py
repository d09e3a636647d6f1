"""What the game envs hide from the agent until a game ends: their ``private_state`` hooks.

Kept out of the env modules on purpose: no env imports this module, so the hooks are not part
of any id's content hash (see :mod:`rollgym.core.private`).
"""

from __future__ import annotations

from typing import Any

from rollgym.core.private import task_answer

__all__ = ["board_game_private", "kuhn_private", "negotiation_private"]


def board_game_private(env: Any) -> dict[str, Any]:
    """The task's answer and the seed of the opponent bot (Chess, Chess960, Connect Four, Hex)."""
    meta = getattr(getattr(env, "task", None), "meta", None) or {}
    return {**task_answer(env), "opponent_seed": meta.get("opponent_seed")}


def _seated(env: Any) -> dict[str, Any]:
    meta = getattr(getattr(env, "task", None), "meta", None) or {}
    return {**task_answer(env), "bot_seed": meta.get("bot_seed")}


def kuhn_private(env: Any) -> dict[str, Any]:
    """The bot's seed and the deal, whose other card is the opponent's (Kuhn poker)."""
    from rollgym.envs.games.kuhn import CARDS

    game = env.game
    other = 1 - int(env.agent_seat)
    return {**_seated(env), "deal": list(game.cards), "opponent_card": CARDS[game.cards[other]]}


def negotiation_private(env: Any) -> dict[str, Any]:
    """The bot's seed and the other seat's item values (the agent's own values are its to see)."""
    game = env.game
    seat = int(env.agent_seat)
    task = getattr(env, "task", None)
    answer = getattr(task, "answer", None)
    meta = getattr(task, "meta", None) or {}
    seed = answer.get("bot_seed") if isinstance(answer, dict) and "bot_seed" in answer else meta.get("bot_seed")
    others = [list(v) for s, v in enumerate(game.values) if s != seat and list(v) != list(game.values[seat])]
    return {"bot_seed": seed, "other_values": others}
