"""Two small envs for the collector and CLI tests, registered on import.

``ToyAdd-v0`` is single-turn (answer ``a + b``); ``ToyGuess-v0`` is multi-turn
(guess a hidden number with higher/lower hints). Both are real rollgym envs with
oracle and random policies, so tests exercise the same code paths as the real
families. Subprocess tests name them ``rollgym_toyenv:ToyAdd-v0`` with this
folder on ``PYTHONPATH``.
"""

from __future__ import annotations

import re
import time
from typing import Any

import numpy as np

from rollgym.core.env import SingleTurnEnv, StepResult, TextEnv
from rollgym.core.registration import register_env
from rollgym.core.seeding import task_rng
from rollgym.core.task import Score, Task


class AddSource:
    """Tasks ``a + b`` with a, b in 0..99, drawn from per-task seed streams."""

    family = "toyadd"

    def task(self, index: int, split: str = "train") -> Task:
        rng = task_rng(self.family, split, index)
        a, b = (int(x) for x in rng.integers(0, 100, size=2))
        return Task(
            f"toyadd-{split}-{index}",
            "ToyAdd-v0",
            f"What is {a} + {b}? Reply with the number.",
            a + b,
            {"a": a, "b": b},
        )

    def size(self, split: str) -> int | None:
        return 50  # small on purpose: some runs draw a task twice


class ToyAddEnv(SingleTurnEnv):
    """Description: answer ``a + b``. Action Space: text. Observation Space: text. Starting State: a prompt.
    Rewards: 1 if correct else 0. Episode End: after one answer. Information: Score fields.
    Arguments: ``crash`` makes ``step`` raise when the answer is a multiple of 3; ``delay`` seconds of
    work per step (so that a test can interrupt a run midway).
    Version History: v0.
    """

    default_env_id = "ToyAdd-v0"

    def __init__(
        self, split: str = "train", crash: bool = False, delay: float = 0.0, render_mode: str | None = None
    ) -> None:
        super().__init__(AddSource(), split=split, render_mode=render_mode)
        self.crash = crash
        self.delay = delay

    def verify(self, task: Task, response: str) -> Score:
        text = response.strip()
        if not re.fullmatch(r"-?\d+", text):
            return Score.fail("malformed")
        return Score.success(int(text)) if int(text) == task.answer else Score.fail("wrong", int(text))

    def _advance(self, action: str) -> StepResult:
        assert self.task is not None
        if self.crash and self.task.answer % 3 == 0:
            raise_in_env(self.task)
        if self.delay:
            time.sleep(self.delay)
        return super()._advance(action)


def raise_in_env(task: Task) -> None:
    raise RuntimeError(f"toy env crash on {task.id}")


def add_oracle(observation: str, info: dict[str, Any]) -> str:
    a, b = (int(x) for x in re.findall(r"\d+", observation)[:2])
    return str(a + b)


def add_random(observation: str, info: dict[str, Any], rng: np.random.Generator) -> str:
    return str(int(rng.integers(0, 199)))


class GuessSource:
    """A hidden number in 1..8."""

    family = "toyguess"

    def task(self, index: int, split: str = "train") -> Task:
        secret = int(task_rng(self.family, split, index).integers(1, 9))
        return Task(f"toyguess-{split}-{index}", "ToyGuess-v0", "Guess my number in 1..8.", secret, {})

    def size(self, split: str) -> int | None:
        return None


class ToyGuessEnv(TextEnv):
    """Description: guess a number with higher/lower hints. Action Space: text. Observation Space: text.
    Starting State: a prompt. Rewards: 1 on the right guess, else 0. Episode End: right guess
    (terminated) or ``max_guesses`` wrong ones (truncated). Information: ``low``, ``high`` bounds.
    Arguments: ``max_guesses``. Version History: v0.
    """

    default_env_id = "ToyGuess-v0"

    def __init__(self, split: str = "train", max_guesses: int = 4, render_mode: str | None = None) -> None:
        super().__init__(GuessSource(), split=split, render_mode=render_mode)
        self.max_guesses = max_guesses
        self.low, self.high, self.guesses = 1, 8, 0

    def _start(self, task: Task) -> str:
        self.low, self.high, self.guesses = 1, 8, 0
        return task.prompt

    def _advance(self, action: str) -> StepResult:
        assert self.task is not None
        self.guesses += 1
        try:
            guess = int(action.strip())
        except ValueError:
            guess = -1
        info = {"low": self.low, "high": self.high}
        if guess == self.task.answer:
            return "", 1.0, True, False, {**info, **Score.success(guess).to_info()}
        if guess < self.task.answer:
            self.low = max(self.low, guess + 1)
            hint = "higher"
        else:
            self.high = min(self.high, guess - 1)
            hint = "lower"
        info = {"low": self.low, "high": self.high, "correct": False}
        truncated = self.guesses >= self.max_guesses
        if truncated:  # the episode ends here, so it ends with the Score fields like every env
            info.update(Score.fail("out_of_guesses", guess).to_info())
        return hint, 0.0, False, truncated, info


def guess_oracle(observation: str, info: dict[str, Any]) -> str:
    low, high = info.get("low", 1), info.get("high", 8)
    return str((low + high) // 2)


def guess_random(observation: str, info: dict[str, Any], rng: np.random.Generator) -> str:
    return str(int(rng.integers(1, 9)))


# ToyAdd-v0 and ToyGuess-v0: ToyXEnv with its x_oracle and x_random policies
for _name, _description in (("Add", "Add two numbers (test env)."),
                            ("Guess", "Guess a number with hints (multi-turn test env).")):
    register_env(
        f"Toy{_name}-v0",
        f"rollgym_toyenv:Toy{_name}Env",
        description=_description,
        family="toy",
        components=["rollgym_toyenv"],
        oracle=f"rollgym_toyenv:{_name.lower()}_oracle",
        random_policy=f"rollgym_toyenv:{_name.lower()}_random",
    )
