"""Reference policies of the seated games (Kuhn poker, negotiation) as registry entries.

The oracle of Kuhn poker plays the Nash equilibrium (alpha 1/6), sampling with a
generator fixed by the task and the betting, so that an episode repeats; the
negotiation oracle is the env's reference bot. The random policy picks one of
``info["legal_moves"]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rollgym.envs.games.kuhn import NashKuhnBot, seeded_rng
from rollgym.envs.games.negotiation import FairNegotiator


def kuhn_oracle(observation: str, info: dict[str, Any]) -> str:
    """The Nash-equilibrium action for the seat's card and the betting so far."""
    bot = NashKuhnBot()
    bot.rng = seeded_rng(info)
    return bot.act(observation, info)


def negotiation_oracle(observation: str, info: dict[str, Any]) -> str:
    """The fair negotiator's action for the seat's values, the standing offer and the turns left."""
    return FairNegotiator().act(observation, info)


def random_seat_action(observation: str, info: dict[str, Any], rng: np.random.Generator) -> str:
    """A uniformly random action from ``info["legal_moves"]``, as ``Final Answer: <action>``."""
    moves = list(info.get("legal_moves") or [])
    if not moves:
        return "Final Answer: none"
    return f"Final Answer: {moves[int(rng.integers(len(moves)))]}"
