"""Property tests of verify_countdown: no text makes it raise, in bounded time; well-formed
expressions get a verdict on their value.

They need hypothesis (the ``dev`` extra): without it this module skips (and fails in CI),
while the plain tests in test_countdown_verifier.py still run.
"""

# ruff: noqa: E402  (hypothesis is imported after the check that it is installed)
from __future__ import annotations

from tests.conftest import require_module

require_module("hypothesis")

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rollgym.core.task import Score
from rollgym.verifiers.countdown import verify_countdown
from tests.verifiers.test_countdown_verifier import HACK_TASK, answer, make_task

ALPHABET = "0123456789+-*/() =×÷−"
PROPERTY_TASKS = [HACK_TASK, make_task([1, 3, 4, 6], 24, usage="at_most"), make_task([7, 7], 49, operators="*")]


def _check(score: Score) -> None:
    assert isinstance(score, Score)
    assert score.reward in (0.0, 1.0)
    assert score.correct == (score.reward == 1.0)
    assert (score.error is None) == score.correct


# Bounded time is guarded by pytest-timeout (a hang fails the test), not by asserting on wall-clock time:
# hundreds of verdicts on inputs up to the size cap must finish far inside it.


@pytest.mark.timeout(120)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(max_size=300), index=st.integers(0, len(PROPERTY_TASKS) - 1))
def test_never_raises_on_arbitrary_text(text: str, index: int) -> None:
    for response in (text, f"<answer>{text}</answer>"):
        _check(verify_countdown(PROPERTY_TASKS[index], response))


@pytest.mark.timeout(120)
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(alphabet=ALPHABET, max_size=1200), index=st.integers(0, len(PROPERTY_TASKS) - 1))
def test_never_raises_on_the_allowed_alphabet(text: str, index: int) -> None:
    _check(verify_countdown(PROPERTY_TASKS[index], f"<answer>{text}</answer>"))


@st.composite
def expressions(draw: st.DrawFn, numbers: list[int]) -> str:
    """A random expression tree over a random sub-multiset of ``numbers``, with + - * / only."""
    k = draw(st.integers(1, len(numbers)))
    parts = [str(n) for n in draw(st.permutations(numbers))[:k]]
    while len(parts) > 1:
        i = draw(st.integers(0, len(parts) - 2))
        op = draw(st.sampled_from("+-*/"))
        parts[i : i + 2] = [f"({parts[i]} {op} {parts[i + 1]})"]
    return parts[0]


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_well_formed_expressions_get_a_verdict_on_their_value(data: st.DataObject) -> None:
    """Expressions over the offered numbers are never malformed or illegal under ``at_most``."""
    numbers = [2, 5, 4, 10]
    expression = data.draw(expressions(numbers))
    task = make_task(numbers, 24, usage="at_most")
    score = verify_countdown(task, answer(expression))
    assert score.error in {None, "wrong", "division_by_zero"}
