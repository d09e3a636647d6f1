"""Item division with private values: a two-seat negotiation game with payoffs by formula.

Description:
    A pool of books, hats and balls (1 to 3 of each) is split between two
    players. Each player has private whole-number values per item type, drawn so
    that the whole pool is worth exactly 10 to each of them (after Lewis et al.,
    2017, "Deal or No Deal?"). Players take turns; on a turn a player proposes a
    split (what it takes; the rest goes to the other), accepts the other's
    standing proposal, or walks away. A deal ends the game; so does walking away
    or running out of turns (no deal).

Action Space:
    Text; the action is read from ``Final Answer: <action>`` (or a bracketed token):
    ``propose <books> <hats> <balls>`` (the numbers the proposer takes), ``accept``
    or ``walk``.

Observation Space:
    Text: the pool, the seat's own values (never the other's), the proposals so
    far, the standing offer and what it is worth to the seat, and the turns left.

Starting State:
    A task is the pool, both value vectors and the turn limit (6 actions), drawn
    from the task index within its split (splits disjoint by that content). In
    the single-agent env the agent's seat alternates with the task index. The
    value vectors and the bots' seed are the task's ``answer``; its public ``meta``
    holds the pool, the turn limit and the agent's seat.

Rewards:
    At the end: the value of what the seat gets in the deal, divided by 10 (so in
    [0, 1]); 0 for both without a deal. A forfeit (no playable answer after the
    retries) is walking away: no deal.

Episode End:
    A deal, a walk-away, a forfeit, or the turn limit.

Information:
    Every step: ``counts``, ``values`` (the seat's own), ``offer`` (the standing
    proposal: ``{"by": seat, "takes": [...]}``), ``turns_left``, ``legal_moves``,
    ``seat``, ``role``; never the other seat's values or the bots' seed. At the end the
    Score fields (``correct``: a deal worth at least half of the pool to the seat) and
    ``payoffs``.

Arguments:
    ``opponent``: ``"fair"`` (the reference bot: asks for 7 of 10, conceding one
    point a turn down to 5, and accepts any offer at its current demand), ``"tough"``
    (9 down to 7) or ``"random"``. Difficulty levels: ``fair``, then ``tough``; ``agent_seat``
    (``None`` alternates); ``max_retries``; ``illegal_move_policy``.

Version History:
    v1: the value vectors and the bots' seed move from the task's ``meta`` to its ``answer``
    (same deals and scores as v0), so no ``info["task_meta"]`` can show the other seat's values.
    v0: initial release (kept so that its task ids and results stay valid; its tasks hold
    the values in ``meta``, which ``info["task_meta"]`` leaves out).
"""

from __future__ import annotations

import json
import re
from itertools import product
from typing import Any, ClassVar

import numpy as np

from rollgym.core.difficulty import Level
from rollgym.core.errors import ConfigError
from rollgym.core.seeding import draw_in_split
from rollgym.core.task import Task
from rollgym.envs.games.base import MoveError
from rollgym.envs.games.seats import RandomSeatBot, SeatBot, SeatedGame, SeatedTextEnv
from rollgym.envs.games.text_env import extract_move_text

__all__ = ["ITEMS", "FairNegotiator", "Negotiation", "NegotiationEnv", "RandomNegotiator", "parse_action",
           "split_value"]

ITEMS: tuple[str, ...] = ("books", "hats", "balls")
POOL_VALUE = 10
MAX_TURNS = 6
_PROPOSE = re.compile(r"^propose\s*:?\s*(-?\d+)\s*,?\s*(-?\d+)\s*,?\s*(-?\d+)$")

RULES = (
    "Negotiation: you and another player split a pool of books, hats and balls. Each of you values the item types "
    "privately; the whole pool is worth 10 points to each of you. Take turns: propose a split by saying how many of "
    "each item you take (the rest go to the other player), accept the other player's standing proposal, or walk "
    "away. A deal gives each player the value of their share divided by 10; no deal (walking away, or no agreement "
    f"within {MAX_TURNS} turns in total) gives both 0."
)


def split_value(values: list[int], takes: list[int]) -> int:
    """The value of ``takes`` (items per type) under ``values``.

    Example:
        >>> split_value([2, 1, 3], [1, 2, 0])
        4
    """
    return int(sum(v * t for v, t in zip(values, takes)))


def parse_action(token: str, counts: list[int]) -> tuple[str, list[int]]:
    """``("propose", takes)``, ``("accept", [])`` or ``("walk", [])`` from an action token.

    Raises:
        MoveError: ``invalid`` for text that is not an action, ``illegal`` for a split the pool cannot give.
    """
    word = " ".join(token.lower().replace("\u00a0", " ").split())
    if word in ("accept", "deal"):
        return "accept", []
    if word in ("walk", "walk away", "no deal"):
        return "walk", []
    match = _PROPOSE.match(word)
    if match is None:
        raise MoveError("invalid", f"{token[:40]!r} is not an action; say `propose <books> <hats> <balls>`, "
                                   "`accept` or `walk`")
    takes = [int(g) for g in match.groups()]
    for name, want, have in zip(ITEMS, takes, counts):
        if not 0 <= want <= have:
            raise MoveError("illegal", f"you cannot take {want} {name}: the pool has {have}")
    return "propose", takes


class Negotiation(SeatedGame):
    """Two seats dividing a pool (see the module docstring); seat 0 proposes first.

    Example:
        >>> game = Negotiation()
        >>> game.reset(task=game.draw_task("train", 0))
        >>> game.act(0, "Final Answer: propose 1 1 1"), game.act(1, "Final Answer: accept")
        (None, None)
        >>> game.done, game.deal
        (True, [1, 1, 1])
    """

    roles: ClassVar[tuple[str, ...]] = ("first", "second")
    private_keys: ClassVar[tuple[str, ...]] = ("values", "bot_seed")
    legacy_ids: ClassVar[frozenset[str]] = frozenset({"Negotiation-v0"})

    def __init__(self, *, env_id: str = "Negotiation-v1", max_retries: int = 1,
                 illegal_move_policy: str = "forfeit") -> None:
        super().__init__(max_retries=max_retries, illegal_move_policy=illegal_move_policy)
        self.env_id = env_id
        self.counts: list[int] = [1, 1, 1]
        self.values: list[list[int]] = [[0, 0, 0], [0, 0, 0]]
        self.max_turns = MAX_TURNS
        self.proposals: list[tuple[int, list[int]]] = []
        self.deal: list[int] | None = None  # what seat 0 gets, once agreed
        self.ended = False
        self.turn = 0

    def draw_task(self, split: str, index: int) -> Task:
        def candidate(rng: np.random.Generator) -> dict[str, Any]:
            while True:
                counts = [int(c) for c in rng.integers(1, 4, size=3)]
                options = [list(v) for v in product(range(POOL_VALUE + 1), repeat=3)
                           if split_value(list(v), counts) == POOL_VALUE]
                if len(options) < 2:  # e.g. 3 of each: no whole values make the pool worth 10
                    continue
                values = [options[int(rng.integers(len(options)))] for _ in range(2)]
                if values[0] != values[1]:
                    return {"counts": counts, "values": values, "max_turns": MAX_TURNS,
                            "bot_seed": int(rng.integers(2**31))}

        deal, _ = draw_in_split("Negotiation", split, index, candidate, lambda m: json.dumps(m, sort_keys=True))
        return self.make_task(split, index, deal, RULES)

    def start(self, task: Task) -> None:
        meta = self.deal_of(task)
        counts, values = meta.get("counts"), meta.get("values")
        if not (isinstance(counts, list) and len(counts) == 3 and isinstance(values, list) and len(values) == 2
                and all(split_value(v, counts) == POOL_VALUE for v in values)):
            raise ConfigError("A negotiation task needs meta['counts'] (3 numbers) and answer['values'] (two value "
                              f"lists, each worth {POOL_VALUE} for the whole pool).")
        self.counts = [int(c) for c in counts]
        self.values = [[int(x) for x in v] for v in values]
        self.max_turns = int(meta.get("max_turns", MAX_TURNS))
        self.proposals = []
        self.deal = None
        self.ended = False
        self.turn = 0

    def current_seat(self) -> int | None:
        return None if self.ended else self.turn % 2

    def parse(self, seat: int, action: str) -> tuple[str, list[int]]:
        token = extract_move_text(action)
        if token is None:
            raise MoveError("no_move", "no action found; end your reply with `Final Answer: <action>`, where "
                                       "<action> is `propose <books> <hats> <balls>`, `accept` or `walk`")
        kind, takes = parse_action(token, self.counts)
        if kind == "accept" and not self._offer_to(seat):
            raise MoveError("illegal", "there is no proposal from the other player to accept")
        return kind, takes

    def _offer_to(self, seat: int) -> list[int] | None:
        """What ``seat`` would get from the other player's standing proposal, if there is one."""
        if not self.proposals or self.proposals[-1][0] == seat:
            return None
        takes = self.proposals[-1][1]
        return [c - t for c, t in zip(self.counts, takes)]

    def play(self, seat: int, move: Any) -> list[str]:
        kind, takes = move
        self.turn += 1
        if kind == "walk":
            self.ended = True
            self._last_move[seat] = "walk"
            return ["You walked away: no deal.", "The other player walked away: no deal."][:: 1 if seat == 0 else -1]
        if kind == "accept":
            offer = self._offer_to(seat)
            assert offer is not None
            self.deal = offer if seat == 0 else [c - o for c, o in zip(self.counts, offer)]
            self.ended = True
            self._last_move[seat] = "accept"
            return ["You accepted: deal.", "The other player accepted your proposal: deal."][:: 1 if seat == 0 else -1]
        self.proposals.append((seat, list(takes)))
        self._last_move[seat] = "propose " + " ".join(map(str, takes))
        lines = [f"You proposed to take {self._items(takes)}.",
                 f"The other player proposes to take {self._items(takes)}, leaving you "
                 f"{self._items([c - t for c, t in zip(self.counts, takes)])}."]
        if self.turn >= self.max_turns:
            self.ended = True
            lines = [f"{line} The turns are used up: no deal." for line in lines]
        return lines if seat == 0 else lines[::-1]

    def _items(self, takes: list[int]) -> str:
        return ", ".join(f"{n} {name}" for n, name in zip(takes, ITEMS))

    def random_move(self, seat: int, rng: np.random.Generator) -> tuple[str, list[int]]:
        takes = [int(rng.integers(c + 1)) for c in self.counts]
        return "propose", takes

    def forfeit(self, seat: int) -> list[str]:
        self.ended = True
        return ["" if s == seat else "The other player forfeited (no playable action): no deal." for s in range(2)]

    def shares(self) -> list[list[int]] | None:
        """What each seat gets in the deal, or ``None`` without one."""
        if self.deal is None:
            return None
        return [list(self.deal), [c - d for c, d in zip(self.counts, self.deal)]]

    def payoffs(self) -> list[float]:
        shares = self.shares()
        if shares is None:
            return [0.0, 0.0]
        return [split_value(self.values[s], shares[s]) / POOL_VALUE for s in range(2)]

    def outcome(self, seat: int) -> tuple[str, bool, dict[str, Any]]:
        payoff = self.payoffs()[seat]
        result = "deal" if self.deal is not None else "no_deal"
        return result, self.deal is not None and payoff >= 0.5, {
            "points": split_value(self.values[seat], (self.shares() or [[0, 0, 0]] * 2)[seat]),
            "shares": self.shares(), "turns": self.turn}

    def system_prompt(self, seat: int) -> str:
        return (f"You are negotiating with another player. {RULES} On your turn, think if you like, then give your "
                "action on the last line as `Final Answer: <action>`, where <action> is `propose <books> <hats> "
                "<balls>` (the numbers you take), `accept` or `walk` (for example `Final Answer: propose 1 0 2`).")

    def intro(self, seat: int) -> str:
        return f"You are the {self.roles[seat]} player."

    def view(self, seat: int, *, final: bool) -> str:
        values = self.values[seat]
        parts = [f"Pool: {self._items(self.counts)}.",
                 "Your values per item: " + ", ".join(f"{name} {v}" for name, v in zip(ITEMS, values)) + "."]
        offer = self._offer_to(seat)
        if final:
            payoff = self.payoffs()[seat]
            parts.append(f"Game over: {'deal' if self.deal is not None else 'no deal'}; your reward is {payoff:g}.")
            return "\n".join(parts)
        if offer is not None:
            parts.append(f"Standing offer to you: {self._items(offer)}, worth {split_value(values, offer)} to you.")
        parts.append(f"Turns left (both players): {self.max_turns - self.turn}. It is your turn.")
        parts.append("Answer with `Final Answer: propose <books> <hats> <balls>`, `accept` or `walk`.")
        return "\n".join(parts)

    def seat_info(self, seat: int) -> dict[str, Any]:
        offer = self.proposals[-1] if self.proposals else None
        legal: list[str] = []
        if not self.done:
            legal = ["walk"] + (["accept"] if self._offer_to(seat) else [])
            legal += ["propose " + " ".join(map(str, t)) for t in product(*(range(c + 1) for c in self.counts))]
        return {"counts": list(self.counts), "values": list(self.values[seat]),
                "offer": None if offer is None else {"by": offer[0], "takes": list(offer[1])},
                "turns_left": self.max_turns - self.turn, "legal_moves": legal}


class FairNegotiator:
    """The reference bot: demands ``start`` of 10, concedes a point a turn down to ``floor``, accepts at its demand.

    It proposes the split worth at least its demand that takes the fewest items (more left for the other
    player), and on the last turn accepts any offer worth more than 0. ``"fair"`` is 7 down to 5;
    ``"tough"`` is 9 down to 7.
    """

    def __init__(self, start: int = 7, floor: int = 5, name: str = "fair") -> None:
        self.start, self.floor, self.name = start, floor, name

    def reset(self, seed: int | None = None) -> None:
        """Deterministic; nothing to reset."""

    def act(self, observation: str, info: dict[str, Any]) -> str:
        counts, values = list(info["counts"]), list(info["values"])
        turns_left = int(info["turns_left"])
        my_turn = (MAX_TURNS - turns_left) // 2
        demand = max(self.floor, self.start - my_turn)
        offer = info.get("offer")
        if offer is not None and offer["by"] != info.get("seat"):
            mine = [c - t for c, t in zip(counts, offer["takes"])]
            worth = split_value(values, mine)
            if worth >= demand or (turns_left <= 1 and worth > 0):
                return "Final Answer: accept"
        options = [list(t) for t in product(*(range(c + 1) for c in counts))]
        good = [t for t in options if split_value(values, t) >= demand]
        best = min(good, key=lambda t: (sum(t), -split_value(values, t), t)) if good else \
            max(options, key=lambda t: split_value(values, t))
        return "Final Answer: propose " + " ".join(map(str, best))


class RandomNegotiator(RandomSeatBot):
    """A uniformly random legal action."""

    fallback = "walk"


def make_negotiation_bot(name: str) -> SeatBot:
    """``"fair"``, ``"tough"`` or ``"random"``."""
    if name == "fair":
        return FairNegotiator()
    if name == "tough":
        return FairNegotiator(9, 7, name="tough")
    if name == "random":
        return RandomNegotiator()
    raise ConfigError(f"Unknown negotiation bot {name!r}; use 'fair', 'tough' or 'random'.")


class NegotiationEnv(SeatedTextEnv):
    """The negotiation game against a bot (the fair negotiator by default); see the module docstring."""

    default_opponent = "fair"
    levels: ClassVar[tuple[Level, ...]] = (
        Level("fair", {"opponent": "fair"}, "demands 7 of 10, concedes to 5, accepts at its demand"),
        Level("tough", {"opponent": "tough"}, "demands 9 of 10, concedes to 7, accepts at its demand"),
    )
    levels_grow: ClassVar[str] = ("the opponent's demand: the fair negotiator, then the tough one (the oracle's "
                                  "payoff falls)")

    def new_game(self, *, max_retries: int, illegal_move_policy: str) -> Negotiation:
        return Negotiation(max_retries=max_retries, illegal_move_policy=illegal_move_policy)

    def make_bot(self, name: str) -> SeatBot:
        return make_negotiation_bot(name)
