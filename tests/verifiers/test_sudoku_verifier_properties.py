"""Property tests of verify_sudoku: arbitrary and near-miss grids never make it raise.

They need hypothesis (the ``dev`` extra): without it this module skips (and fails in CI),
while the plain tests in test_sudoku_verifier.py still run.
"""

# ruff: noqa: E402  (hypothesis is imported after the check that it is installed)
from __future__ import annotations

from tests.conftest import require_module

require_module("hypothesis")

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rollgym.verifiers.sudoku import verify_sudoku
from tests.verifiers.test_sudoku_verifier import TASK, answer

CELL_TEXT = st.text(alphabet=st.sampled_from(list("0123456789 .|-+_\n,[]*x")), max_size=400)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=2000))
def test_never_raises_on_arbitrary_text(text: str) -> None:
    for response in (text, f"<answer>{text}</answer>"):
        for partial in (False, True):
            score = verify_sudoku(TASK, response, partial_credit=partial)
            assert 0.0 <= score.reward <= 1.0
            assert score.correct == (score.reward == 1.0 and score.error is None)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CELL_TEXT, st.integers(0, 80), st.sampled_from(["1", "5", "9", "0", ".", "", "\n"]))
def test_never_raises_on_near_grids(noise: str, position: int, digit: str) -> None:
    rows = list(TASK.answer)
    flat = "".join(rows)
    mutated = flat[:position] + digit + flat[position + 1 :]
    near = "\n".join(" ".join(mutated[i : i + 9]) for i in range(0, len(mutated), 9))
    for body in (near, near + noise, noise + near, noise):
        for partial in (False, True):
            score = verify_sudoku(TASK, answer(body), partial_credit=partial)
            assert 0.0 <= score.reward <= 1.0
            assert score.error in {None, "no_answer", "malformed", "wrong_size", "changed_given", "invalid"}
            if score.correct:
                assert score.parsed == TASK.answer

