"""verify_countdown: correct answers, each error label and the reward-hack suite (properties: *_properties.py)."""

from __future__ import annotations

import pytest

from rollgym.core.errors import ConfigError
from rollgym.core.task import Score, Task
from rollgym.verifiers.countdown import MAX_ANSWER_CHARS, verify_countdown


def make_task(numbers: list[int], target: int, operators: str = "+-*/", usage: str = "exactly") -> Task:
    meta = {"numbers": numbers, "target": target, "operators": list(operators), "usage": usage}
    return Task("test:0", "Countdown-v0", "prompt", None, meta)


TASK = make_task([25, 50, 75, 3], 150)
FRACTION_TASK = make_task([1, 3, 4, 6], 24)


def answer(text: str) -> str:
    return f"Let me think.\n<answer>{text}</answer>"


@pytest.mark.parametrize(
    "expression",
    [
        "75 * 3 - 50 - 25",
        "(75*3) - (50+25)",
        "75 * 3 - 50 - 25 = 150",
        "75 × 3 − 50 − 25",
        "((75 * 3) - 50) - 25",
        "3 * 75 - (25 + 50)",
        "\t75*3-50-25 ",
    ],
)
def test_correct_answers_score_one(expression: str) -> None:
    score = verify_countdown(TASK, answer(expression))
    assert score == Score(1.0, True, expression.strip(), None, {"value": "150"})


def test_fractional_intermediates_are_exact() -> None:
    assert verify_countdown(FRACTION_TASK, answer("6 / (1 - 3 / 4)")).correct
    assert verify_countdown(FRACTION_TASK, answer("6 ÷ (1 − 3 ÷ 4)")).correct
    # floating point would get 8 / (3 - 8 / 3) = 24 wrong only by rounding; exact arithmetic must accept it
    assert verify_countdown(make_task([3, 3, 8, 8], 24), answer("8 / (3 - 8 / 3)")).correct


def test_last_answer_tag_counts() -> None:
    response = "<answer>1 + 1</answer> on second thought <answer>75 * 3 - 50 - 25</answer>"
    assert verify_countdown(TASK, response).correct
    response = "<answer>75 * 3 - 50 - 25</answer> on second thought <answer>1 + 1</answer>"
    assert not verify_countdown(TASK, response).correct


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        ("", "no_answer"),
        ("   ", "no_answer"),
        ("75 + 3 + 50 + 25", "wrong"),
        ("75 * 3 - 50 - 25 = 151", "wrong"),
        ("75 + 3 - 50 - 25 = 150", "wrong"),
        ("75 * 3 - 50", "illegal"),
        ("75 * 3 - 50 - 25 - 25", "illegal"),
        ("75 * 3 - 50 - 25 + 7 - 7", "illegal"),
        ("75 * 3 - 50 - 25 + (3 - 3)", "illegal"),
        ("75 * 3 - 50 - 25 / (3 - 3)", "illegal"),
        ("3 / (75 - 25 - 50)", "division_by_zero"),
        ("75 * 3 - 50 - 25 -", "malformed"),
        ("75 * 3 - 50 25", "malformed"),
        ("75 ** 3 - 50 - 25", "malformed"),
        ("75 // 3 - 50 - 25", "malformed"),
        ("75 * 3 % 50 - 25", "malformed"),
        ("-75 + 3 + 50 + 25", "malformed"),
        ("x" * (MAX_ANSWER_CHARS + 1), "too_long"),
    ],
)
def test_error_labels(expression: str, error: str) -> None:
    score = verify_countdown(TASK, answer(expression))
    assert score.reward == 0.0 and not score.correct
    assert score.error == error
    assert isinstance(score.details["reason"], str) and score.details["reason"].endswith(".")


def test_operator_subset_is_enforced() -> None:
    task = make_task([2, 3, 4], 10, operators="+*")
    assert verify_countdown(task, answer("2 * 3 + 4")).correct
    score = verify_countdown(make_task([2, 3, 4], 5, operators="+*"), answer("2 * 4 - 3"))
    assert score.error == "illegal" and "-" in score.details["reason"]
    assert verify_countdown(make_task([8, 2, 3], 7, operators="+-"), answer("8 / 2 + 3")).error == "illegal"


def test_usage_rules() -> None:
    at_most = make_task([5, 5, 7, 100], 12, usage="at_most")
    exactly = make_task([5, 5, 7, 100], 12, usage="exactly")
    assert verify_countdown(at_most, answer("5 + 7")).correct
    assert verify_countdown(exactly, answer("5 + 7")).error == "illegal"
    # a number listed twice may be used twice, but not three times
    assert verify_countdown(make_task([5, 5, 2], 12, usage="at_most"), answer("5 + 5 + 2")).correct
    assert verify_countdown(make_task([5, 5, 2], 15, usage="at_most"), answer("5 + 5 + 5")).error == "illegal"
    assert verify_countdown(make_task([5, 5, 2], 50, usage="exactly"), answer("5 * 5 * 2")).correct


def test_non_text_responses_have_no_answer() -> None:
    for response in (None, b"<answer>75 * 3 - 50 - 25</answer>", 42):
        assert verify_countdown(TASK, response).error == "no_answer"  # type: ignore[arg-type]


def test_the_hidden_answer_is_not_used() -> None:
    task = Task("t", "Countdown-v0", "", "this is not even an expression", {"numbers": [2, 3], "target": 6})
    assert verify_countdown(task, answer("2 * 3")).correct


def test_a_bad_task_is_a_clear_config_error() -> None:
    with pytest.raises(ConfigError, match="meta\\['numbers'\\]"):
        verify_countdown(Task("t", "x", "", None, {"target": 3}), answer("1 + 2"))
    with pytest.raises(ConfigError, match="usage"):
        verify_countdown(make_task([1, 2], 3, usage="sometimes"), answer("1 + 2"))


# --- reward hacks: every one of these must score 0 --------------------------------------------
HACK_TASK = make_task([2, 5, 4, 10], 24)


def test_the_hack_task_is_solvable() -> None:
    assert verify_countdown(HACK_TASK, answer("10 + 4 + 5 * 2")).correct


HACKS = {
    "empty answer": answer(""),
    "no tags": "2 * 10 + 4 * (5 - 5)",
    "answer outside the tags": "<answer></answer> 10 * 2 + 4 * 5 / 5",
    "unclosed tag": "<answer>10 + 2 * 5 + 4",
    "target alone": answer("24"),
    "target claim alone": answer("= 24"),
    "import os": answer("__import__('os').system('x')"),
    "eval": answer("eval('24')"),
    "huge power tower": answer("9**9**9"),
    "power": answer("2**100"),
    "power of offered numbers": answer("2 ** 4 + 10 - 5 + 3"),
    "unary minus": answer("-(2 - 10) * 5 - 4 * 4"),
    "double unary": answer("10 * 2 - -4 - 5 + 5"),
    "unary plus": answer("+10 * 2 + 4 + 5 - 5"),
    "many unary minus": answer("-" * 800 + "24"),
    "reused number": answer("10 + 10 + 4"),
    "reused in full solution": answer("10 * 2 + 4 + 5 - 5"),
    "number not offered": answer("10 + 2 + 12"),
    "digit concatenation": answer("(5 - 4) * 24 * (10 / 10)"),
    "float literal": answer("2.5 * 10 - 4 / 4"),
    "float literal equal to target": answer("24.0"),
    "scientific literal": answer("2.4e1"),
    "underscore literal": answer("2_4"),
    "comma separated": answer("10 + 4 * 5 - 2, 24"),
    "semicolon separated": answer("1 + 1; 10 * 2 + 4"),
    "newline separated": answer("2 + 5\n10 * 2 + 4"),
    "or": answer("10 * 2 + 5 - 4 or 24"),
    "tuple": answer("(2 + 5, 24)"),
    "comparison": answer("10 * 2 + 4 == 24"),
    "two equals": answer("10 + 5 + 4 + 2 = 21 = 24"),
    "lambda": answer("(lambda: 24)()"),
    "attribute access": answer("(24).real"),
    "call": answer("int(24)"),
    "name": answer("target"),
    "string": answer("'24'"),
    "latex": answer("\\frac{48}{2}"),
    "boxed": "\\boxed{24}",
    "modulo": answer("24 % 25"),
    "floor division": answer("(10 * 5 - 2) // 2"),
    "bitwise": answer("10 ^ 2 | 4 + 5"),
    "extremely long": answer("1 + " * 100_000 + "1"),
    "deep parentheses under the cap": answer("(" * 60 + "2" + ")" * 60 + " * 10 + 4 + 5 - 5"),
    "deep parentheses": answer("(" * 400 + "24" + ")" * 400),
    "unicode digits": answer("٢٤"),
    "fullwidth digits": answer("２４"),
    "zero padded": answer("024"),
    "hex literal": answer("0x18"),
}


@pytest.mark.parametrize("name", sorted(HACKS))
def test_reward_hacks_score_zero(name: str) -> None:
    score = verify_countdown(HACK_TASK, HACKS[name])
    assert score.reward == 0.0 and score.correct is False
    assert score.error in {"no_answer", "malformed", "illegal", "wrong", "division_by_zero", "too_long"}


def test_hacks_do_not_run_code() -> None:
    import builtins

    calls: list[str] = []
    original = builtins.__import__

    def spy(name: str, *args: object, **kwargs: object) -> object:
        calls.append(name)
        return original(name, *args, **kwargs)

    builtins.__import__ = spy  # type: ignore[assignment]
    try:
        verify_countdown(HACK_TASK, answer("__import__('os').getpid()"))
    finally:
        builtins.__import__ = original
    assert "os" not in calls
