"""Games in which every seat is an agent: the env side of self-play and multi-agent episodes.

A :class:`SeatedGame` holds one game for two or more seats. Seats take turns;
each sees only its own view (:meth:`SeatedGame.observe`): what happened since it
last acted, its private information, and the public state. The rollout side
(:mod:`rollgym.rollout.selfplay`) asks the seat to move for an action, passes
it to :meth:`SeatedGame.act`, and builds one trajectory per seat.

Model output never crashes a game. An action that is not a legal move is
labelled (``no_move``, ``invalid``, ``illegal``, ``ambiguous``, as in the
single-agent envs) and the seat retries with feedback, up to ``max_retries``
times; then ``illegal_move_policy`` applies: ``"forfeit"`` (the seat loses, as
the game defines losing) or ``"random"`` (a random legal move is played for
it). An action from a seat whose turn it is not is refused, labelled
``out_of_turn``, and changes nothing.

:class:`~rollgym.envs.games.board_seats.BoardSeats` seats two agents at
Chess, Chess960, Connect Four or Hex; Kuhn poker
(:mod:`rollgym.envs.games.kuhn`) and the negotiation game
(:mod:`rollgym.envs.games.negotiation`) are seated games of their own.
:class:`SeatedTextEnv` turns a seated game into a single-agent env: the agent
takes one seat and bots take the others.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from rollgym.core.agent import SeededAgent, conforms
from rollgym.core.config import check_choice, check_int
from rollgym.core.difficulty import Difficulty, Level
from rollgym.core.env import StepResult, TextEnv
from rollgym.core.errors import ConfigError
from rollgym.core.sources import UnboundedSource
from rollgym.core.task import Score, Task
from rollgym.envs.games.base import MoveError
from rollgym.envs.games.bots import NamedBot
from rollgym.envs.games.config import ILLEGAL_MOVE_POLICIES

__all__ = ["OUT_OF_TURN", "SeatBot", "SeatedGame", "SeatedTextEnv"]

#: The label of an action sent by a seat whose turn it is not.
OUT_OF_TURN = "out_of_turn"


class SeatedGame(ABC):
    """A turn-based game for ``len(roles)`` agent seats; see the module docstring.

    Subclasses supply the rules through the hooks below; this class keeps the
    per-seat event logs, retries, the illegal-move policy and the final Score
    fields, so that every seated game reports its end the same way.

    Args:
        max_retries: Retries a seat gets for an unplayable answer, each with feedback (0 or more).
        illegal_move_policy: ``"forfeit"`` or ``"random"`` once the retries are spent.
    """

    #: The role id of each seat, e.g. ``("first", "second")``; a seat's index is its position.
    roles: ClassVar[tuple[str, ...]] = ("first", "second")
    #: The id the game's tasks and trajectories carry.
    env_id: str = ""
    #: The keys of a drawn deal that only some seats may know (cards, private values, the bots' seed): a task
    #: keeps them in ``Task.answer``, never in its public ``meta`` (which ``info["task_meta"]`` shows).
    private_keys: ClassVar[tuple[str, ...]] = ()
    #: Ids whose tasks were published with the private keys in ``meta`` (kept so that their task ids, tasks and
    #: recorded results stay valid); their envs still leave those keys out of ``info["task_meta"]``.
    legacy_ids: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, *, max_retries: int = 1, illegal_move_policy: str = "forfeit") -> None:
        check_int("max_retries", max_retries, 0)
        check_choice("illegal_move_policy", illegal_move_policy, ILLEGAL_MOVE_POLICIES)
        self.max_retries = max_retries
        self.illegal_move_policy = illegal_move_policy

    def serve(self, env_id: str) -> None:
        """Name the env this game plays for: the id its tasks and ``info`` carry. Each env builds its own
        game (:meth:`SeatedTextEnv.new_game`), so a game is never shared between ids."""
        self.env_id = env_id
        self.task: Task | None = None
        self._rng = np.random.default_rng(0)
        self._started = False

    def make_task(self, split: str, index: int, deal: dict[str, Any], prompt: str) -> Task:
        """The task of a drawn ``deal``: its :attr:`private_keys` go to ``answer``, the rest to ``meta``."""
        task_id = f"{self.env_id}:{split}:{index}"
        if self.env_id in self.legacy_ids:
            return Task(id=task_id, env_id=self.env_id, prompt=prompt, answer=None, meta=deal)
        meta = {k: v for k, v in deal.items() if k not in self.private_keys}
        secret = {k: v for k, v in deal.items() if k in self.private_keys}
        return Task(id=task_id, env_id=self.env_id, prompt=prompt, answer=secret, meta=meta)

    @classmethod
    def deal_of(cls, task: Task) -> dict[str, Any]:
        """The whole deal of ``task``: its public ``meta`` and its private ``answer`` (or, for a legacy id, meta)."""
        secret = task.answer if isinstance(task.answer, dict) else {}
        return {**task.meta, **{k: v for k, v in secret.items() if k in cls.private_keys}}

    # -- the rules: hooks ------------------------------------------------------
    @abstractmethod
    def draw_task(self, split: str, index: int) -> Task:
        """The task (a pure function of split and index) that :meth:`reset` starts."""

    @abstractmethod
    def start(self, task: Task) -> None:
        """Set up the game for ``task``."""

    @abstractmethod
    def current_seat(self) -> int | None:
        """The seat to move, or ``None`` when the game is over."""

    @abstractmethod
    def parse(self, seat: int, action: str) -> Any:
        """The legal move ``action`` names for ``seat``; raises :class:`MoveError` otherwise."""

    @abstractmethod
    def play(self, seat: int, move: Any) -> list[str]:
        """Play ``seat``'s legal move; one event line per seat (what each seat is told happened)."""

    @abstractmethod
    def random_move(self, seat: int, rng: np.random.Generator) -> Any:
        """A uniformly random legal move for ``seat`` (the ``"random"`` illegal-move policy)."""

    @abstractmethod
    def forfeit(self, seat: int) -> list[str]:
        """End the game with ``seat`` losing by forfeit; one event line per seat."""

    @abstractmethod
    def payoffs(self) -> list[float]:
        """Each seat's reward in the finished game."""

    @abstractmethod
    def outcome(self, seat: int) -> tuple[str, bool, dict[str, Any]]:
        """``(result, correct, details)`` of ``seat`` in the finished game (``result``: win, draw, loss, ...)."""

    @abstractmethod
    def system_prompt(self, seat: int) -> str:
        """The rules and answer format, as ``seat`` is told them."""

    @abstractmethod
    def view(self, seat: int, *, final: bool) -> str:
        """What ``seat`` may see now: its private information and the public state."""

    def seat_info(self, seat: int) -> dict[str, Any]:
        """Game-specific ``info`` entries for ``seat`` (bots in a seat rebuild the game from them)."""
        return {}

    def intro(self, seat: int) -> str:
        """The first line ``seat`` reads."""
        return f"You are seat {seat} ({self.roles[seat]})."

    # -- the episode -------------------------------------------------------------
    @property
    def num_seats(self) -> int:
        """How many seats the game has."""
        return len(self.roles)

    def reset(self, seed: int | None = None, *, split: str = "train", task_index: int | None = None,
              task: Task | None = None) -> None:
        """Start a game: ``task``, else the task at ``task_index``, else one drawn from ``seed``."""
        rng = np.random.default_rng(seed)
        index = int(rng.integers(2**31)) if task_index is None else int(task_index)
        self.task = task if task is not None else self.draw_task(split, index)
        self._rng = np.random.default_rng(int(rng.integers(2**31)))
        self._events: list[list[str]] = [[] for _ in self.roles]
        self._greeted = [False] * self.num_seats
        self._retries = [self.max_retries] * self.num_seats
        self._errors: list[str | None] = [None] * self.num_seats
        self._last_move: list[str | None] = [None] * self.num_seats
        self._forfeited: int | None = None
        self.start(self.task)
        self._started = True

    @property
    def to_move(self) -> int | None:
        """The seat whose action the game waits for; ``None`` once the game is over."""
        self._check_started()
        return None if self._forfeited is not None else self.current_seat()

    @property
    def done(self) -> bool:
        """Whether the game is over."""
        return self.to_move is None

    def act(self, seat: int, action: str) -> str | None:
        """Apply ``seat``'s answer; returns the error label when it could not be played, else ``None``.

        Never raises for model output: a non-string answer is read as text, an answer
        from a seat that is not to move is refused (``out_of_turn``) and changes nothing.
        """
        self._check_started()
        if not isinstance(seat, int) or not 0 <= seat < self.num_seats:
            raise ConfigError(f"seat must be 0 to {self.num_seats - 1}, got {seat!r}.")
        if seat != self.to_move:
            self._events[seat].append("It is not your turn; your message was ignored.")
            self._errors[seat] = OUT_OF_TURN
            return OUT_OF_TURN
        text = action if isinstance(action, str) else str(action)
        self._errors[seat] = None
        try:
            move = self.parse(seat, text)
        except MoveError as err:
            return self._unplayable(seat, err.label, str(err))
        except Exception as exc:  # a parser bug must never crash a game
            return self._unplayable(seat, "invalid", f"the move could not be read ({type(exc).__name__})")
        self._retries[seat] = self.max_retries
        self._broadcast(self.play(seat, move))
        return None

    def _unplayable(self, seat: int, label: str, reason: str) -> str:
        self._errors[seat] = label
        if self._retries[seat] > 0:
            self._retries[seat] -= 1
            left = self._retries[seat]
            chance = "this is your last try" if left == 0 else f"{left + 1} tries left"
            self._events[seat].append(f"Your answer could not be played ({label}): {reason}. Try again ({chance}).")
            return label
        self._retries[seat] = self.max_retries
        if self.illegal_move_policy == "random":
            self._events[seat].append(f"Your answer could not be played ({label}): {reason}. "
                                      "A random legal move was played for you.")
            self._broadcast(self.play(seat, self.random_move(seat, self._rng)))
            return label
        self._events[seat].append(f"Your answer could not be played ({label}): {reason}. "
                                  "You have no retries left, so you forfeit.")
        self._forfeited = seat
        self._broadcast(self.forfeit(seat))
        return label

    def _broadcast(self, lines: list[str]) -> None:
        for seat, line in enumerate(lines):
            if line:
                self._events[seat].append(line)

    def observe(self, seat: int) -> tuple[str, dict[str, Any]]:
        """``seat``'s observation and info: its events since it last looked, and its view.

        The first call of an episode starts with the seat's intro; ``info`` carries the
        ``system_prompt`` (the chat agents' system message), ``seat``, ``role`` and, once the
        game is over, the Score fields (``reward``, ``correct``, ``parsed``, ``error``, ``details``)
        from this seat's point of view.
        """
        self._check_started()
        final = self.done
        parts = [] if self._greeted[seat] else [self.intro(seat)]
        self._greeted[seat] = True
        parts += self._events[seat]
        self._events[seat] = []
        parts.append(self.view(seat, final=final))
        return "\n".join(parts), self.info(seat)

    def info(self, seat: int) -> dict[str, Any]:
        """``seat``'s info now, without reading its events (see :meth:`observe`)."""
        self._check_started()
        assert self.task is not None
        info: dict[str, Any] = {
            "env_id": self.env_id, "task_id": self.task.id, "seat": seat, "role": self.roles[seat],
            "system_prompt": self.system_prompt(seat), "error": self._errors[seat],
            "retries_left": self._retries[seat], **self.seat_info(seat),
        }
        if self.done:
            info.update(self.final_info(seat))
        return info

    def final_info(self, seat: int) -> dict[str, Any]:
        """The Score fields of ``seat`` in the finished game, plus every seat's ``payoffs``."""
        result, correct, details = self.outcome(seat)
        if self._forfeited is not None:
            details = {**details, "forfeited_by": self._forfeited}
        payoffs = self.payoffs()
        score = Score(reward=float(payoffs[seat]), correct=correct, parsed=self._last_move[seat],
                      error=self._errors[seat], details={"result": result, **details})
        return {**score.to_info(), "result": result, "payoffs": [float(p) for p in payoffs]}

    def _check_started(self) -> None:
        if not self._started:
            raise RuntimeError("Call reset() before playing a seated game.")


@runtime_checkable
class ActsInSeat(Protocol):
    """Anything with ``act(observation, info)``: what a seated env accepts as its opponent."""

    def act(self, observation: str, info: dict[str, Any]) -> str: ...


class SeatBot(Protocol):
    """A scripted player for a seat: reads the seat's observation and info, answers in text."""

    name: str

    def reset(self, seed: int | None = None) -> None: ...

    def act(self, observation: str, info: dict[str, Any]) -> str: ...


class RandomSeatBot(SeededAgent):
    """A uniformly random legal action (``fallback`` when the info lists none)."""

    fallback: ClassVar[str]

    def act(self, observation: str, info: dict[str, Any]) -> str:
        legal = list(info.get("legal_moves") or [self.fallback])
        return f"Final Answer: {legal[int(self.rng.integers(len(legal)))]}"


class _GameTasks(UnboundedSource):
    """The task source of a :class:`SeatedTextEnv`: the game's tasks plus the agent's seat."""

    family = "games"

    def __init__(self, game: SeatedGame, seat_of: Callable[[int], int], level: Level | None = None) -> None:
        self.game = game
        self.seat_of = seat_of
        self.level = level

    def task(self, index: int, split: str = "train") -> Task:
        task = self.game.draw_task(split, index)
        meta = {**task.meta, "agent_seat": self.seat_of(index)}
        task_id = task.id
        if self.level is not None:  # the level's opponent, in the task itself
            meta["opponent"] = self.level.knobs["opponent"]
            task_id += f"@{self.level.name}"
        return Task(id=task_id, env_id=task.env_id, prompt=task.prompt, answer=task.answer, meta=meta)


class SeatedTextEnv(TextEnv):
    """A seated game as a single-agent env: the agent plays one seat, bots play the others.

    The agent's seat alternates with the task index (seat ``index % num_seats``) unless
    ``agent_seat`` fixes it. The reward is the agent's payoff, given at the end; the
    terminal ``info`` carries the Score fields from the agent's seat. Subclasses build
    the game (:meth:`new_game`) and name the bots (:meth:`make_bot`); their :attr:`levels`
    are opponents, weakest first (``reset(options={"difficulty": k})`` plays level ``k``'s bot).
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "human"], "render_fps": 4}  # noqa: RUF012
    #: Difficulty levels, easiest first: each sets the knob ``opponent`` (a bot name).
    levels: ClassVar[tuple[Level, ...]] = ()
    #: What grows from one level to the next.
    levels_grow: ClassVar[str] = "the opponent's strength"
    #: The bot :meth:`make_bot` makes when ``opponent`` is not given (or ``None``).
    default_opponent: ClassVar[str]

    def __init__(self, *, opponent: Any = None, agent_seat: int | None = None, max_retries: int = 1,
                 illegal_move_policy: str = "forfeit", split: str = "train", render_mode: str | None = None) -> None:
        if opponent is None:
            opponent = self.default_opponent
        self.game = self.new_game(max_retries=max_retries, illegal_move_policy=illegal_move_policy)
        seats = self.game.num_seats
        if agent_seat is not None and (not isinstance(agent_seat, int) or not 0 <= agent_seat < seats):
            raise ConfigError(f"agent_seat must be 0 to {seats - 1} or None (alternate), got {agent_seat!r}.")
        self.agent_seat_option = agent_seat
        self.opponent: SeatBot = self.make_bot(opponent) if isinstance(opponent, str) else opponent
        if not isinstance(self.opponent, ActsInSeat):
            raise ConfigError("opponent must be a bot name or an object with act(observation, info).")
        self._own_opponent = self.opponent
        named = conforms(opponent, NamedBot)
        self._opponent_name = opponent if isinstance(opponent, str) else (opponent.name if named else None)
        self._level_bots: dict[str, SeatBot] = {}
        super().__init__(split=split, render_mode=render_mode)
        self.game.serve(self.env_id)
        self.agent_seat = 0
        self.system_prompt = self.game.system_prompt(0)

    @classmethod
    def lowest_reward(cls, kwargs: Mapping[str, Any]) -> float:
        """The worst payoff an episode can end with (benchmarks count an abandoned episode as this)."""
        return 0.0

    @abstractmethod
    def new_game(self, *, max_retries: int, illegal_move_policy: str) -> SeatedGame:
        """The seated game this env plays."""

    @abstractmethod
    def make_bot(self, name: str) -> SeatBot:
        """The bot a name such as ``"nash"`` stands for; raises :class:`ConfigError` for an unknown one."""

    def _make_source(self, env_id: str) -> _GameTasks:
        self.game.serve(env_id)
        seats = self.game.num_seats
        fixed = self.agent_seat_option
        return _GameTasks(self.game, lambda index: index % seats if fixed is None else fixed)

    @property
    def difficulty(self) -> Difficulty | None:
        """The :attr:`levels` (opponents, weakest first); the default is the level of this env's own opponent."""
        if not self.levels:
            return None
        default = next((i for i, level in enumerate(self.levels) if level.knobs["opponent"] == self._opponent_name),
                       None)
        return Difficulty(self.levels, default=default, grows=self.levels_grow)

    def _level_source(self, env_id: str, level: Level) -> _GameTasks:
        self.game.serve(env_id)
        seats = self.game.num_seats
        fixed = self.agent_seat_option
        return _GameTasks(self.game, lambda index: index % seats if fixed is None else fixed, level=level)

    def _start(self, task: Task) -> str:
        name = task.meta.get("opponent")
        if name is None:
            self.opponent = self._own_opponent
        else:
            if name not in self._level_bots:
                self._level_bots[str(name)] = self.make_bot(str(name))
            self.opponent = self._level_bots[str(name)]
        self.agent_seat = int(task.meta.get("agent_seat", 0))
        bot_seed = int(self.game.deal_of(task).get("bot_seed", 0))
        self.game.reset(bot_seed, task=task)
        self.opponent.reset(seed=bot_seed)
        self.system_prompt = self.game.system_prompt(self.agent_seat)
        self._bots_move()
        observation, _ = self.game.observe(self.agent_seat)
        return observation

    def _bots_move(self) -> None:
        """Let the bots act until it is the agent's turn or the game is over."""
        guard = 0
        while not self.game.done and self.game.to_move != self.agent_seat and guard < 1000:
            seat = int(self.game.to_move)  # type: ignore[arg-type]
            observation, info = self.game.observe(seat)
            self.game.act(seat, str(self.opponent.act(observation, info)))
            guard += 1

    def _advance(self, action: str) -> StepResult:
        self.game.act(self.agent_seat, action)
        self._bots_move()
        observation, info = self.game.observe(self.agent_seat)
        if self.game.done:
            return observation, float(info["reward"]), True, False, info
        return observation, 0.0, False, False, info

    def _common_info(self) -> dict[str, Any]:
        info = super()._common_info()
        # the other seats' secrets never reach info, whatever the task's layout (legacy ids keep them in meta)
        info["task_meta"] = {k: v for k, v in info["task_meta"].items() if k not in self.game.private_keys}
        if self.game.task is not None:
            info.update({k: v for k, v in self.game.info(self.agent_seat).items() if k not in info})
        info["agent_seat"] = self.agent_seat
        return info

    def render(self) -> str | None:  # type: ignore[override]
        if self.game.task is None:
            return None
        text = self.game.view(self.agent_seat, final=self.game.done)
        if self.render_mode == "human":
            print(text)
            return None
        return text
