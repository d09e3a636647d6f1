"""Kuhn poker: the smallest poker with imperfect information, with exact payoffs and a Nash bot.

Description:
    Three cards, Jack < Queen < King. Each of two players antes 1 chip and is
    dealt one card, which only they see. The first player checks or bets 1; a
    player facing a bet calls or folds; after check, check the cards are shown.
    Histories: ``check check`` (showdown for 1), ``bet call`` and
    ``check bet call`` (showdown for 2), ``bet fold`` and ``check bet fold`` (the
    folder loses 1). The game value is -1/18 for the first player under any Nash
    equilibrium (Kuhn, 1950); :func:`kuhn_value` computes a strategy pair's value
    exactly by enumerating the six deals.

Action Space:
    Text; the move is read from ``Final Answer: <action>`` (or a bracketed or lone
    word), one of ``check``, ``bet``, ``call``, ``fold``. ``check``/``bet`` are legal
    when nobody has bet, ``call``/``fold`` when facing a bet.

Observation Space:
    Text: the seat's own card, the betting so far, the pot, and the legal actions.
    The opponent's card is shown only at a showdown.

Starting State:
    A task is a deal (one card per seat) and a seed for the bots, drawn from the
    task index within its split (splits disjoint by that content). In the
    single-agent env the agent's seat alternates with the task index. The deal and
    the seed are the task's ``answer``: its public ``meta`` holds only the agent's
    seat (and a difficulty level's opponent).

Rewards:
    The chips won or lost, at the end: +-1 or +-2 (zero-sum). A forfeit (no
    playable answer after the retries) is a fold: the forfeiting seat loses what
    it has put in.

Episode End:
    At a fold or a showdown (at most three actions), or a forfeit.

Information:
    Every step: ``card`` (the seat's own), ``history`` (the actions so far), ``legal_moves``,
    ``seat``, ``role``; never the opponent's card or the bots' seed. At the end the Score
    fields (``correct`` = won chips, ``details["cards"]``: both cards) and ``payoffs``.

Arguments:
    ``opponent``: ``"nash"`` (the equilibrium family with ``alpha`` 1/6), ``"nash-<alpha>"`` with
    alpha in [0, 1/3] as a fraction (``"nash-0"``, ``"nash-1/3"``), or ``"random"``. Difficulty levels:
    ``random``, then ``nash``;
    ``agent_seat`` (``None`` alternates); ``max_retries``; ``illegal_move_policy``.

Version History:
    v1: the deal and the bots' seed move from the task's ``meta`` to its ``answer`` (same
    deals and scores as v0), so no ``info["task_meta"]`` can show the opponent's card.
    v0: initial release (kept so that its task ids and results stay valid; its tasks hold
    the deal in ``meta``, which ``info["task_meta"]`` leaves out).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from fractions import Fraction
from itertools import permutations
from typing import Any, ClassVar

import numpy as np

from rollgym.core.difficulty import Level
from rollgym.core.errors import ConfigError
from rollgym.core.seeding import draw_in_split
from rollgym.core.task import Task
from rollgym.envs.games.base import MoveError
from rollgym.envs.games.seats import RandomSeatBot, SeatBot, SeatedGame, SeatedTextEnv
from rollgym.envs.games.text_env import extract_move_text

__all__ = ["ACTIONS", "CARDS", "KuhnPoker", "KuhnPokerEnv", "NashKuhnBot", "RandomKuhnBot", "kuhn_payoff",
           "kuhn_value", "legal_actions", "nash_strategy"]

CARDS: tuple[str, ...] = ("Jack", "Queen", "King")
ACTIONS: tuple[str, ...] = ("check", "bet", "call", "fold")
#: Betting histories that end the game.
TERMINAL: frozenset[tuple[str, ...]] = frozenset({
    ("check", "check"), ("bet", "call"), ("bet", "fold"), ("check", "bet", "call"), ("check", "bet", "fold")})

RULES = (
    "Kuhn poker: a deck of three cards, Jack < Queen < King. Each player antes 1 chip and gets one card that only "
    "they see. The first player checks or bets 1 chip. A player facing a bet calls (puts in 1 chip) or folds (loses "
    "what they put in). If both check, or a bet is called, the higher card wins the pot. Your reward is the chips "
    "you win or lose."
)


def legal_actions(history: tuple[str, ...]) -> tuple[str, ...]:
    """The actions allowed after ``history`` (empty once it is terminal).

    Example:
        >>> legal_actions(()), legal_actions(("check", "bet")), legal_actions(("bet", "fold"))
        (('check', 'bet'), ('call', 'fold'), ())
    """
    if history in TERMINAL:
        return ()
    return ("call", "fold") if history and history[-1] == "bet" else ("check", "bet")


def kuhn_payoff(cards: tuple[int, int], history: tuple[str, ...]) -> int:
    """The first player's chips won at terminal ``history`` (the second player's is its negative).

    Example:
        >>> kuhn_payoff((2, 0), ("bet", "call")), kuhn_payoff((2, 0), ("check", "bet", "fold"))
        (2, -1)
    """
    if history not in TERMINAL:
        raise ValueError(f"{history!r} is not a finished Kuhn poker betting history.")
    if history[-1] == "fold":
        folder = (len(history) - 1) % 2
        return -1 if folder == 0 else 1
    stake = 2 if "bet" in history else 1
    return stake if cards[0] > cards[1] else -stake


#: A strategy: ``(card, history) -> {action: probability}`` for the player to move.
Strategy = Callable[[int, tuple[str, ...]], dict[str, Fraction]]


def nash_strategy(alpha: Fraction = Fraction(1, 6)) -> Strategy:
    """Kuhn's equilibrium family (alpha in [0, 1/3]) for both seats, as exact fractions.

    First player: bets a Jack with probability alpha, a King with 3 alpha, never a Queen;
    after check, bet calls with a Queen with alpha + 1/3, always with a King, never with a Jack.
    Second player: bets a King and calls with it; with a Queen checks and calls a bet with 1/3;
    with a Jack bets after a check with 1/3 and folds to a bet.
    """
    alpha = Fraction(alpha)
    if not 0 <= alpha <= Fraction(1, 3):
        raise ConfigError(f"alpha must be between 0 and 1/3, got {alpha}.")

    def mix(p_first: Fraction, first: str, second: str) -> dict[str, Fraction]:
        return {first: p_first, second: 1 - p_first}

    def strategy(card: int, history: tuple[str, ...]) -> dict[str, Fraction]:
        if history == ():
            return mix((alpha, Fraction(0), 3 * alpha)[card], "bet", "check")
        if history == ("check", "bet"):
            return mix((Fraction(0), alpha + Fraction(1, 3), Fraction(1))[card], "call", "fold")
        if history == ("check",):
            return mix((Fraction(1, 3), Fraction(0), Fraction(1))[card], "bet", "check")
        if history == ("bet",):
            return mix((Fraction(0), Fraction(1, 3), Fraction(1))[card], "call", "fold")
        raise ValueError(f"no decision after {history!r}")

    return strategy


def kuhn_value(first: Strategy, second: Strategy) -> Fraction:
    """The first player's exact expected chips when ``first`` plays ``second``, over the six deals.

    Example:
        >>> kuhn_value(nash_strategy(), nash_strategy())
        Fraction(-1, 18)
    """
    total = Fraction(0)
    for cards in permutations(range(3), 2):
        total += _value_from(cards, (), (first, second)) / 6
    return total


def _value_from(cards: tuple[int, ...], history: tuple[str, ...], players: tuple[Strategy, Strategy]) -> Fraction:
    if history in TERMINAL:
        return Fraction(kuhn_payoff((cards[0], cards[1]), history))
    seat = len(history) % 2
    probs = players[seat](cards[seat], history)
    return sum((p * _value_from(cards, (*history, a), players) for a, p in probs.items() if p), Fraction(0))


class KuhnPoker(SeatedGame):
    """Two seats at Kuhn poker (see the module docstring); seat 0 acts first.

    Example:
        >>> game = KuhnPoker()
        >>> game.reset(task=game.draw_task("train", 0))
        >>> game.act(0, "Final Answer: bet"), game.act(1, "Final Answer: fold")
        (None, None)
        >>> game.done, game.payoffs()
        (True, [1.0, -1.0])
    """

    roles: ClassVar[tuple[str, ...]] = ("first", "second")
    private_keys: ClassVar[tuple[str, ...]] = ("cards", "bot_seed")
    legacy_ids: ClassVar[frozenset[str]] = frozenset({"KuhnPoker-v0"})

    def __init__(self, *, env_id: str = "KuhnPoker-v1", max_retries: int = 1,
                 illegal_move_policy: str = "forfeit") -> None:
        super().__init__(max_retries=max_retries, illegal_move_policy=illegal_move_policy)
        self.env_id = env_id
        self.cards: tuple[int, int] = (0, 1)
        self.history: tuple[str, ...] = ()

    def draw_task(self, split: str, index: int) -> Task:
        def candidate(rng: np.random.Generator) -> dict[str, Any]:
            deal = [int(c) for c in rng.permutation(3)[:2]]
            return {"cards": deal, "bot_seed": int(rng.integers(2**31))}

        deal, _ = draw_in_split("KuhnPoker", split, index, candidate, lambda m: json.dumps(m, sort_keys=True))
        return self.make_task(split, index, deal, RULES)

    def start(self, task: Task) -> None:
        cards = self.deal_of(task).get("cards")
        if not (isinstance(cards, list) and len(cards) == 2 and sorted(set(cards)) == sorted(cards)
                and all(c in (0, 1, 2) for c in cards)):
            raise ConfigError("A Kuhn poker task needs answer['cards'], two different cards from 0 to 2; "
                              f"got {cards!r}.")
        self.cards = (int(cards[0]), int(cards[1]))
        self.history = ()

    def current_seat(self) -> int | None:
        return None if self.history in TERMINAL else len(self.history) % 2

    def parse(self, seat: int, action: str) -> str:
        token = extract_move_text(action)
        if token is None:
            raise MoveError("no_move", "no action found; end your reply with `Final Answer: <action>` "
                                       "(check, bet, call or fold)")
        word = token.strip().lower()
        legal = legal_actions(self.history)
        if word not in ACTIONS:
            raise MoveError("invalid", f"{token[:24]!r} is not an action; say check, bet, call or fold")
        if word not in legal:
            raise MoveError("illegal", f"{word} is not allowed now; you may {' or '.join(legal)}")
        return word

    def play(self, seat: int, move: Any) -> list[str]:
        self.history = (*self.history, str(move))
        self._last_move[seat] = str(move)
        lines = [f"You {move}." if s == seat else f"Your opponent {self._verb(str(move))}." for s in range(2)]
        if self.history in TERMINAL and self.history[-1] != "fold":
            lines = [f"{line} Showdown: your opponent had the {CARDS[self.cards[1 - s]]}." for s, line in
                     enumerate(lines)]
        return lines

    @staticmethod
    def _verb(action: str) -> str:
        return {"check": "checks", "bet": "bets 1 chip", "call": "calls", "fold": "folds"}[action]

    def random_move(self, seat: int, rng: np.random.Generator) -> str:
        legal = legal_actions(self.history)
        return legal[int(rng.integers(len(legal)))]

    def forfeit(self, seat: int) -> list[str]:
        return ["" if s == seat else "Your opponent forfeited (no playable action), which counts as a fold."
                for s in range(2)]

    def _chips(self) -> int:
        """The first seat's chips; a forfeit is a fold: the forfeiting seat loses what it has put in."""
        if self._forfeited is not None:
            put_in = 1 + sum(1 for i, a in enumerate(self.history) if i % 2 == self._forfeited and a in ("bet", "call"))
            return -put_in if self._forfeited == 0 else put_in
        return kuhn_payoff(self.cards, self.history)

    def payoffs(self) -> list[float]:
        chips = self._chips()
        return [float(chips), float(-chips)]

    def outcome(self, seat: int) -> tuple[str, bool, dict[str, Any]]:
        chips = self.payoffs()[seat]
        result = "win" if chips > 0 else "loss"
        return result, chips > 0, {"chips": chips, "history": list(self.history),
                                   "cards": [CARDS[c] for c in self.cards]}

    def system_prompt(self, seat: int) -> str:
        return (f"You are playing Kuhn poker against another player. {RULES} On your turn, think if you like, then "
                "give your action on the last line as `Final Answer: <action>`, where <action> is check, bet, call "
                "or fold (for example `Final Answer: check`).")

    def intro(self, seat: int) -> str:
        return f"You are the {self.roles[seat]} player. Your card is the {CARDS[self.cards[seat]]}."

    def view(self, seat: int, *, final: bool) -> str:
        said = " ".join(self.history) if self.history else "(none yet)"
        parts = [f"Your card: {CARDS[self.cards[seat]]}.", f"Betting so far: {said}."]
        if final:
            chips = self.payoffs()[seat]
            parts.append(f"Game over: you {'won' if chips > 0 else 'lost'} {abs(int(chips))} chip(s).")
        else:
            legal = legal_actions(self.history)
            parts.append(f"It is your turn. Legal actions: {' '.join(legal)}.")
            parts.append("Answer with `Final Answer: <action>`.")
        return "\n".join(parts)

    def seat_info(self, seat: int) -> dict[str, Any]:
        return {"card": CARDS[self.cards[seat]], "history": list(self.history),
                "legal_moves": list(legal_actions(self.history)) if not self.done else []}


class NashKuhnBot:
    """Plays :func:`nash_strategy` from a seat's ``info`` (card and history), sampling with its own seed."""

    def __init__(self, alpha: Fraction = Fraction(1, 6), seed: int | None = None) -> None:
        self.alpha = Fraction(alpha)
        self.strategy = nash_strategy(self.alpha)
        self.name = f"nash-{self.alpha}"
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act(self, observation: str, info: dict[str, Any]) -> str:
        card = CARDS.index(str(info["card"]))
        probs = self.strategy(card, tuple(info["history"]))
        actions = sorted(probs)
        pick = self.rng.choice(len(actions), p=[float(probs[a]) for a in actions])
        return f"Final Answer: {actions[int(pick)]}"


class RandomKuhnBot(RandomSeatBot):
    """A uniformly random legal action."""

    fallback = "check"


def make_kuhn_bot(name: str) -> SeatBot:
    """``"nash"``, ``"nash-<alpha>"`` (alpha a fraction in [0, 1/3]) or ``"random"``."""
    if name == "random":
        return RandomKuhnBot()
    if name == "nash":
        return NashKuhnBot()
    if name.startswith("nash-"):
        try:
            alpha = Fraction(name[5:])
        except (ValueError, ZeroDivisionError):
            raise ConfigError(f"Unknown Kuhn poker bot {name!r}; alpha must be a fraction such as 1/6.") from None
        return NashKuhnBot(alpha)
    raise ConfigError(f"Unknown Kuhn poker bot {name!r}; use 'nash', 'nash-<alpha>' (0 to 1/3) or 'random'.")


def seeded_rng(info: dict[str, Any]) -> np.random.Generator:
    """A generator fixed by the task and the betting so far, for stateless policies (the oracle)."""
    key = json.dumps([info.get("task_id"), info.get("history"), info.get("seat")], sort_keys=True)
    return np.random.default_rng(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))


class KuhnPokerEnv(SeatedTextEnv):
    """Kuhn poker against a bot (Nash by default); see the module docstring."""

    default_opponent = "nash"
    levels: ClassVar[tuple[Level, ...]] = (
        Level("random", {"opponent": "random"}, "a uniformly random legal action"),
        Level("nash", {"opponent": "nash"}, "the Nash equilibrium (alpha 1/6): unexploitable"),
    )
    levels_grow: ClassVar[str] = "the opponent: random play, then the Nash equilibrium (the oracle wins fewer chips)"

    @classmethod
    def lowest_reward(cls, kwargs: Mapping[str, Any]) -> float:
        """Losing a called bet: -2 chips."""
        return -2.0

    def new_game(self, *, max_retries: int, illegal_move_policy: str) -> KuhnPoker:
        return KuhnPoker(max_retries=max_retries, illegal_move_policy=illegal_move_policy)

    def make_bot(self, name: str) -> SeatBot:
        return make_kuhn_bot(name)
