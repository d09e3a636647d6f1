"""The MATH verifier on real data: recall on MATH500, rewritings, false positives, AIME and AMC."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from rollgym.core.extraction import extract_boxed
from rollgym.core.task import Task
from rollgym.verifiers.math import MathVerifyConfig, answers_equal, answers_equal_many, verify_math
from tests.conftest import require_modules

require_modules("sympy", "math_verify")  # the symbolic checks need the math extra


def _rows(folder: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (folder / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def test_every_math500_gold_answer_matches_its_solutions_box(shared_data: Path) -> None:
    rows = _rows(shared_data, "math500.jsonl")
    assert len(rows) == 500
    pairs = [(row["answer"], extract_boxed(row["solution"])) for row in rows]
    assert all(pred is not None for _, pred in pairs)
    verdicts = answers_equal_many(pairs)  # type: ignore[arg-type]
    missed = [(g, p, v) for (g, p), v in zip(pairs, verdicts) if not v.correct]
    assert missed == []


def test_every_math500_solution_scores_one_as_a_whole_response(shared_data: Path) -> None:
    # Eight solutions box twice; each time both boxes hold the same answer, so the
    # strict "every distinct box must be right" policy still accepts all 500.
    rows = _rows(shared_data, "math500.jsonl")
    scores = [verify_math(row["answer"], row["solution"]) for row in rows]
    failures = [(row["unique_id"], s.error) for row, s in zip(rows, scores) if not s.correct]
    assert failures == []
    assert sum(1 for row in rows if row["solution"].count("\\boxed") > 1) == 8


#: Each gold answer, and spellings of it that must be accepted as equal.
SPELLINGS: dict[str, list[str]] = {
    r"\frac12": ["0.5"],
    r"\frac{1}{2}": [r"\dfrac{1}{2}", r"\tfrac12", "1/2"],
    r"\left( 3, \frac{\pi}{2} \right)": [r"(3, \frac{\pi}{2})", r"(3, \pi/2)"],
    r"\frac{1}{\sqrt{3}}": [r"\frac{\sqrt{3}}{3}"],
    r"\frac{\sqrt{3}}{3}": [r"\frac{1}{\sqrt{3}}"],
    r"90^\circ": ["90", r"90^{\circ}"],
    r"76^\circ": ["76 degrees"],
    r"\text{Evelyn}": ["Evelyn", r"\text{evelyn}"],
    r"\text{(C)}": ["C", "(C)", r"\textbf{(C)}"],
    "52_8": ["52", "52_{8}"],
    r"1\frac{4}{5}": [r"\frac95"],
    r"137 \frac{1}{2}": ["137.5"],
    r"\$32,\!348": ["32348"],
    "58,500": ["58500"],
    r"10,\!080": ["10,080"],
    r"\{1\pm\sqrt{5},-2\}": [r"-2, 1-\sqrt5, 1+\sqrt5"],
    r"3 \pm 2 \sqrt{2}": [r"3-2\sqrt2, 3+2\sqrt2"],
    r"x \in [-2,7]": ["[-2,7]"],
    r"864 \mbox{ inches}^2": ["864"],
    r"\frac{270}7\text{ degrees}": [r"\frac{270}{7}"],
    "3, 5, 7": ["7,5,3"],
    "1,-2": ["-2, 1"],
    r"(0,9) \cup (9,36)": [r"(9,36)\cup(0,9)"],
    r"\begin{pmatrix} -1/3 \\ 2/3 \\ 5/3 \end{pmatrix}": [
        r"\begin{pmatrix} -\frac13 \\ \frac23 \\ \frac53 \end{pmatrix}",
    ],
    r"10\%": ["10"],
    ".0000672": [r"6.72\times 10^{-5}"],
    "2500": ["2.5e3"],
    "6 - 5i": ["-5i+6"],
    "x^3+3x-6": ["-6+3x+x^3"],
    "y = 2x + 3": ["2x+3"],
    r"\cot x": [r"\frac{\cos x}{\sin x}"],
    r"\$18.90": ["18.9"],
    r"5.4 \text{ cents}": ["5.4"],
    r"\text{east}": ["East"],
    r"(-\infty, 0]": [r"(-\infty,0]"],
    r"11\sqrt2": [r"\sqrt{242}"],
    "2k+2": ["2(k+1)"],
    "(a+5)(b+2)": ["ab+2a+5b+10"],
    "27.0": ["27"],
    "025": ["25"],
    "5": ["x=5"],
    r"1 \pm \sqrt{19}": [r"1+\sqrt{19},1-\sqrt{19}"],
    r"\pi": [r"\pi"],
    r"288 \pi": [r"288\pi"],
    r"\{1,2\}": [r"\{2,1\}"],
}
REWRITINGS = [(gold, pred) for gold, preds in SPELLINGS.items() for pred in preds]


@pytest.mark.parametrize(("gold", "pred"), REWRITINGS)
def test_equivalent_rewritings_are_accepted(gold: str, pred: str) -> None:
    assert len(REWRITINGS) >= 30
    result = answers_equal(gold, pred)
    assert result.correct, result
    assert verify_math(gold, f"So the answer is $\\boxed{{{pred}}}$.").correct


DIFFERENT = [
    (r"90^\circ", r"\frac{\pi}{2}"),
    (r"\text{Evelyn}", r"\text{Navin}"),
    (r"\text{(C)}", r"\text{(B)}"),
    ("52_8", "42"),
    ("52_8", "52_{10}"),
    (r"1\frac{4}{5}", r"\frac45"),
    ("3, 5, 7", "3,5"),
    ("(6,31,-1)", "(-1,31,6)"),
    ("1,-2", "(-2,1)"),
    ("(3,4]", "(3,4)"),
    (r"\begin{pmatrix} -1/3 \\ 2/3 \\ 5/3 \end{pmatrix}", r"\begin{pmatrix} 2/3 \\ -1/3 \\ 5/3 \end{pmatrix}"),
    (r"3 \pm 2 \sqrt{2}", r"3+2\sqrt2"),
    (r"\pi", "3.14159"),
    (r"\text{even}", r"\text{odd}"),
    (r"\frac{1}{3}", "0.333"),
    ("y = 2x + 3", "x = 2x + 3"),
    ("1", "2"),
    ("(1,2)", "(2,1)"),
]


@pytest.mark.parametrize(("gold", "pred"), DIFFERENT)
def test_different_answers_are_rejected(gold: str, pred: str) -> None:
    assert not answers_equal(gold, pred).correct


# Pairs of MATH500 gold answers that really are equal although written differently.
TRULY_EQUAL = {
    frozenset({"x=5", "5"}),  # "x = 5" answers "find x" as well as "5" does
    frozenset({"120^\\circ", "120"}),  # degrees are implied
    frozenset({"90^\\circ", "90"}),
    frozenset({"15", "15\\mbox{ cm}^2"}),  # units are implied
    frozenset({"2\\sqrt{5}", "2 \\sqrt{5}"}),  # spacing only
}


def sample_pairs(n_per_gold: int, seed: int = 0) -> list[tuple[int, int]]:
    """Each MATH500 row paired with ``n_per_gold`` other rows, drawn with a fixed seed."""
    rng = random.Random(seed)
    return [(i, j) for i in range(500) for j in rng.sample([k for k in range(500) if k != i], n_per_gold)]


@pytest.mark.timeout(600)
def test_no_false_positives_between_different_math500_answers(shared_data: Path) -> None:
    # Every gold answer against the gold answers of 20 other problems: the same 10,000 pairs
    # (seed 0) that bench/bench_math.py times against math-verify alone.
    rows = _rows(shared_data, "math500.jsonl")
    pairs = sample_pairs(20, seed=0)
    assert len(pairs) == 10_000
    verdicts = answers_equal_many([(rows[i]["answer"], rows[j]["answer"]) for i, j in pairs])
    accepted = [
        (rows[i]["answer"], rows[j]["answer"])
        for (i, j), v in zip(pairs, verdicts)
        if v.correct and rows[i]["answer"] != rows[j]["answer"]
    ]
    unexplained = [pair for pair in accepted if frozenset(pair) not in TRULY_EQUAL]
    assert unexplained == []
    assert not any(v.error == "timeout" for v in verdicts)


def test_aime24_integer_answers(shared_data: Path) -> None:
    rows = _rows(shared_data, "aime24.jsonl")
    assert len(rows) == 30
    for row in rows:
        gold = row["answer"]
        value = int(gold)
        assert verify_math(gold, f"\\boxed{{{value}}}").correct
        assert verify_math(gold, f"\\boxed{{{value:03d}}}").correct
        assert not verify_math(gold, f"\\boxed{{{value + 1}}}").correct
        assert not verify_math(gold, f"\\boxed{{{value}.5}}").correct


def test_amc23_float_answers_match_integers(shared_data: Path) -> None:
    from rollgym.envs.math.datasets import answer_text

    rows = _rows(shared_data, "amc23.jsonl")
    assert len(rows) == 40
    for row in rows:
        raw = row["answer"]
        assert isinstance(raw, float)
        for gold in (str(raw), answer_text(raw)):
            assert verify_math(gold, f"\\boxed{{{int(raw)}}}").correct, gold
            assert verify_math(gold, f"\\boxed{{{raw}}}").correct, gold
            assert not verify_math(gold, f"\\boxed{{{int(raw) + 1}}}").correct, gold


def test_task_answers_are_read_from_the_task() -> None:
    task = Task("t", "MATH500-v0", "What is 1/2?", r"\frac{1}{2}")
    assert verify_math(task, r"\boxed{0.5}").correct
    assert verify_math(task, r"\boxed{0.6}").error == "wrong"


def test_config_errors_are_one_clear_sentence() -> None:
    from rollgym.core.errors import ConfigError

    with pytest.raises(ConfigError, match="box_policy"):
        MathVerifyConfig(box_policy="first")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="timeout_s"):
        MathVerifyConfig(timeout_s=0)
