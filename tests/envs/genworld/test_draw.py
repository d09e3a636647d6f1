"""The generated-world core's draw: the first attempt whose instance exists and falls in the split."""

from __future__ import annotations

import pytest

from rollgym.core.errors import ConfigError
from rollgym.core.seeding import split_of_key, task_rng
from rollgym.envs.genworld.draw import draw_instance


def _rng_of(attempt: int):
    return task_rng("GenworldTest", "test", 7, attempt)


def test_an_instance_falls_in_its_split_and_the_draw_repeats() -> None:
    seen: list[int] = []

    def candidate(rng):
        value = int(rng.integers(10**6))
        seen.append(value)
        return value

    value = draw_instance(_rng_of, candidate, split="test", key=str, max_attempts=1000, failure="none")
    assert split_of_key(str(value)) == "test"
    assert all(split_of_key(str(v)) != "test" for v in seen[:-1])  # earlier attempts were other splits'
    assert draw_instance(_rng_of, candidate, split="test", key=str, max_attempts=1000, failure="none") == value


def test_an_attempt_without_an_instance_is_drawn_again() -> None:
    calls = []

    def candidate(rng):
        calls.append(1)
        return None if len(calls) < 3 else "found"

    assert draw_instance(_rng_of, candidate, split="test", key=None, max_attempts=5, failure="none") == "found"
    assert len(calls) == 3


def test_no_fitting_attempt_is_one_sentence() -> None:
    with pytest.raises(ConfigError, match=r"^No task here\.$"):
        draw_instance(_rng_of, lambda rng: None, split="train", key=str, max_attempts=4, failure="No task here.")
