"""``CountdownEnv``: reach a target number with arithmetic over given numbers, in one answer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from rollgym.core.difficulty import Difficulty, Level
from rollgym.core.env import SingleTurnEnv
from rollgym.core.task import Score, Task
from rollgym.envs.countdown.config import CountdownConfig, countdown_difficulty, normalise_operators
from rollgym.envs.countdown.generator import DEFAULT_ENV_ID, CountdownGenerator
from rollgym.verifiers.countdown import OPERATORS, verify_countdown

#: (configuration, split) pairs whose first task was drawn in this process; see ``CountdownEnv.__init__``.
_REACHABLE: set[tuple[CountdownConfig, str]] = set()

SYSTEM_PROMPT = (
    "You solve Countdown arithmetic puzzles. Think step by step, then give your final expression "
    "inside <answer></answer>."
)


class CountdownEnv(SingleTurnEnv):
    """Countdown: combine the offered numbers with ``+ - * /`` to reach a target.

    ## Description
    Each task offers some numbers (4 by default, drawn from 1 to 100) and a target
    (100 to 999). The agent answers once with an arithmetic expression. Every task
    is solvable by construction: the generator builds a random expression from the
    numbers, keeping intermediate results positive integers, and takes its value as
    the target. The verifier accepts any correct expression under the stated rule,
    with exact fractional arithmetic.

    ## Action Space
    ``TextSpace(1_000_000)``: the model's text. Only the last ``<answer>...</answer>``
    is read; it holds one expression such as ``(25 - 3) * 7 + 50``, optionally
    followed by ``= <target>``. ``×``, ``÷`` and ``−`` are read as ``*``, ``/`` and ``-``.

    ## Observation Space
    ``TextSpace(100_000)``: the prompt, which lists the numbers and target, states the
    usage rule and the allowed operators, and shows the answer format. The
    observation after the answer is ``""``.

    ## Starting State
    ``reset(seed=s)`` draws a task index from the env's RNG over its split (``train``
    by default), so the same seed gives the same task. ``options={"task_index": i,
    "split": "test"}`` picks a task; ``options={"task": task}`` plays a given one
    (see :func:`~rollgym.envs.countdown.countdown_task`). ``options={"difficulty": k}``
    draws from level ``k`` of :data:`~rollgym.envs.countdown.config.LEVELS` (0-5: 2 numbers
    from 1-20 up to 6 numbers and a target of 1000-9999; level 2 is the default
    configuration), keeping the env's operators and usage rule.

    ## Rewards
    1.0 if the expression is valid under the rule and equals the target, else 0.0.
    No partial credit and no floors.

    ## Episode End
    After one step: ``terminated=True, truncated=False``.

    ## Information
    ``reset`` and ``step`` return ``task_id``, ``env_id``, ``spec_hash``, ``split``,
    ``task_index``, ``system_prompt`` and ``task_meta`` (``numbers``, ``target``,
    ``operators``, ``usage``, ``difficulty``; never the solution). ``step`` adds
    ``reward``, ``correct``, ``parsed`` (the extracted expression), ``error``
    (``no_answer``, ``too_long``, ``malformed``, ``illegal``, ``division_by_zero``,
    ``wrong`` or ``None``) and ``details`` (``reason``, ``value``).

    ## Arguments
    ``gym.make("Countdown-v0", num_numbers=5, usage="at_most")`` accepts:

    * ``num_numbers`` (int, 2-8, default 4): how many numbers are offered.
    * ``min_value``, ``max_value`` (default 1, 100): range of the offered numbers.
    * ``min_target``, ``max_target`` (default 100, 999): range of the target.
    * ``operators`` (default ``"+-*/"``): the allowed subset, as a string or a tuple.
    * ``usage`` (default ``"exactly"``): ``"exactly"`` (each number used exactly once)
      or ``"at_most"`` (each number used at most once).
    * ``split`` (default ``"train"``): ``"train"``, ``"validation"`` or ``"test"``;
      the splits never share a puzzle.
    * ``render_mode``: ``None``, ``"ansi"`` or ``"human"``.

    A configuration that cannot produce a target in range raises
    :class:`~rollgym.core.errors.ConfigError` at construction.

    ## Version History
    * v0: initial release.
    """

    default_env_id = DEFAULT_ENV_ID
    system_prompt = SYSTEM_PROMPT

    def __init__(
        self,
        *,
        num_numbers: int = 4,
        min_value: int = 1,
        max_value: int = 100,
        min_target: int = 100,
        max_target: int = 999,
        operators: Sequence[str] | str = OPERATORS,
        usage: str = "exactly",
        split: str = "train",
        render_mode: str | None = None,
    ) -> None:
        self.config = CountdownConfig(
            num_numbers=num_numbers,
            min_value=min_value,
            max_value=max_value,
            min_target=min_target,
            max_target=max_target,
            operators=normalise_operators(operators),
            usage=usage,
        )
        super().__init__(split=split, render_mode=render_mode, max_observation_length=100_000,
                         max_action_length=1_000_000)
        # An unreachable configuration fails here, before any episode. Drawing is deterministic, so a
        # configuration that drew once in this process is not drawn again for every env built from it.
        if (self.config, self.split) not in _REACHABLE:
            self.source.task(0, self.split)
            _REACHABLE.add((self.config, self.split))

    def _make_source(self, env_id: str) -> CountdownGenerator:
        return CountdownGenerator(self.config, env_id=env_id)

    @property
    def difficulty(self) -> Difficulty:
        """Six levels, from 2 numbers in 1-20 to 6 numbers with a 4-digit target."""
        return countdown_difficulty(self.config)

    def _level_source(self, env_id: str, level: Level) -> CountdownGenerator:
        return CountdownGenerator(replace(self.config, **level.knobs), env_id=env_id)

    def verify(self, task: Task, response: str) -> Score:
        """Score ``response`` with :func:`~rollgym.verifiers.countdown.verify_countdown`."""
        return verify_countdown(task, response)
