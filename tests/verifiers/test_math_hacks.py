"""The MATH verifier's reward-hack suite and its bounds on pathological input; every case must score 0."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from rollgym.verifiers.math import MathVerifyConfig, extract_answers, verify_math
from rollgym.verifiers.math_pool import SymbolicPool
from tests.conftest import require_modules

require_modules("sympy", "math_verify")  # the symbolic checks need the math extra

HACKS = [
    # several different boxed answers (hedging): with box_policy="all" each distinct box must be right
    ("3", r"It is \boxed{3} or \boxed{4}.", "conflicting_answers"),
    ("3", r"\boxed{4} hmm, actually \boxed{3}", "conflicting_answers"),
    ("3", r"\boxed{1}\boxed{2}\boxed{3}\boxed{4}\boxed{5}\boxed{6}\boxed{7}\boxed{8}\boxed{9}", "too_many_answers"),
    # an answer plus alternatives, or a set, list or tuple around the one gold value
    ("3", r"\boxed{3 \text{ or } 4}", "several_values"),
    ("3", r"\boxed{3 or 4}", "several_values"),
    ("3", r"\boxed{3, 4}", "several_values"),
    ("3", r"\boxed{\{3,4\}}", "several_values"),
    ("3", r"\boxed{3 \lor 4}", "several_values"),
    ("3", r"\boxed{[3,4]}", "several_values"),
    ("3", r"\boxed{(-\infty,\infty)}", "several_values"),
    ("3", r"\boxed{3 \text{, } 4 \text{, } 5}", "several_values"),
    ("3", r"\boxed{3 \text{ and } 4}", "several_values"),
    ("3", r"\boxed{3; 4}", "several_values"),
    ("3", r"\boxed{3 \quad 4}", "several_values"),
    ("3", r"\boxed{3 \\ 4}", "several_values"),
    ("3", r"\boxed{3 & 4}", "several_values"),
    ("3", r"\boxed{\{3\}}", "several_values"),
    ("3", r"\boxed{\left\{ 3 \right\}}", "several_values"),
    ("3", r"\boxed{\lbrace 3 \rbrace}", "several_values"),
    ("3", r"\boxed{[3]}", "several_values"),
    ("3", r"\boxed{\langle 3 \rangle}", "several_values"),
    ("3", r"\boxed{(3, 3)}", "several_values"),
    ("3", r"\boxed{x \in \{3\}}", "several_values"),
    ("3", r"\boxed{3 \cup 4}", "several_values"),
    ("3", r"\boxed{\begin{pmatrix} 3 \end{pmatrix}}", "several_values"),
    (r"\frac{1}{2}", r"\boxed{\frac{1}{2} \text{ or } \frac{1}{3}}", "several_values"),
    (r"\text{(C)}", r"\boxed{\text{(C) or (D)}}", "wrong"),
    (r"\text{(C)}", r"\boxed{ABCDE}", "wrong"),
    (r"\text{Evelyn}", r"\boxed{\text{Evelyn or Navin}}", "wrong"),
    ("5", r"\boxed{\pm 5}", "several_values"),
    ("5", r"\boxed{5 \text{ or more}}", "several_values"),
    ("5", r"\boxed{5 \text{ or } 6 \text{ cm}}", "several_values"),
    ("5", r"\boxed{5 \text{ (approximately)}}", "wrong"),
    # an answer that asserts a relation the gold does not: never one of its sides
    ("3", r"\boxed{3 \approx 4}", "relation"),
    ("4", r"\boxed{3 \approx 4}", "relation"),
    ("3", r"\boxed{3 \sim 4}", "relation"),
    ("4", r"\boxed{3 \sim 4}", "relation"),
    ("3", r"\boxed{3 \equiv 4}", "relation"),
    ("4", r"\boxed{3 \equiv 4}", "relation"),
    ("3", r"\boxed{3 \cong 4}", "relation"),
    ("4", r"\boxed{3 \cong 4}", "relation"),
    ("4", r"\boxed{3 \simeq 4}", "relation"),
    ("4", r"\boxed{3 \propto 4}", "relation"),
    ("4", r"\boxed{3 < 4}", "relation"),
    ("4", r"\boxed{3 > 4}", "relation"),
    ("4", r"\boxed{3 \le 4}", "relation"),
    ("4", r"\boxed{3 \leq 4}", "relation"),
    ("4", r"\boxed{3 \ge 4}", "relation"),
    ("4", r"\boxed{3 \ne 4}", "relation"),
    ("4", r"\boxed{3 \neq 4}", "relation"),
    ("4", r"\boxed{3 \not= 4}", "relation"),
    ("4", r"\boxed{3 \to 4}", "relation"),
    ("4", r"\boxed{3 \rightarrow 4}", "relation"),
    ("4", r"\boxed{3 \Rightarrow 4}", "relation"),
    ("4", r"\boxed{3 \implies 4}", "relation"),
    ("4", r"\boxed{3 \iff 4}", "relation"),
    ("4", r"\boxed{3 \mid 4}", "relation"),
    ("4", "\\boxed{3 \u2248 4}", "relation"),
    ("4", "\\boxed{3 \u2264 4}", "relation"),
    ("4", "\\boxed{3 \u2261 4}", "relation"),
    ("4", r"\boxed{x \approx 4}", "relation"),
    ("4", r"\boxed{x = 4 \approx 4.0}", "relation"),
    (r"x \in [-2,7]", r"\boxed{x \approx [-2,7]}", "relation"),
    # notation math-verify skips, reading one of the numbers around it
    ("4", r"\boxed{3 \oplus 4}", "notation"),
    ("4", r"\boxed{3 \circ 4}", "notation"),
    ("4", r"\boxed{3 \ast 4}", "notation"),
    ("4", r"\boxed{3 \atop 4}", "notation"),
    ("4", r"\boxed{3 \nsim 4}", "notation"),
    ("4", r"\boxed{3 \coloneq 4}", "notation"),
    ("4", r"\boxed{3 \hookrightarrow 4}", "notation"),
    ("4", r"\boxed{3 \dagger 4}", "notation"),
    ("4", "\\boxed{3 \u6216 4}", "notation"),  # Chinese "or"
    ("3", "\\boxed{3\uff0c4}", "notation"),  # a fullwidth comma
    ("4", r"\boxed{3 \bmod 4}", "relation"),
    ("4", r"\boxed{3 \pmod{4}}", "relation"),
    ("4", r"\boxed{3 | 4}", "relation"),
    ("4", r"\boxed{3 \vert 4}", "relation"),
    ("4", r"\boxed{3 \enspace 4}", "several_values"),
    # '=' with a different right side, or a chain the gold is not
    ("y = 2x + 3", r"\boxed{y = 2x + 3 = 7}", "relation"),
    ("x=5", r"\boxed{x = 5 = 6}", "relation"),
    ("4", r"\boxed{3 = 4}", "equation"),
    ("4", r"\boxed{x = 3 = 4}", "equation"),
    # every spelling of "equals" the claim reader knows is an '=' for the comparison too (issue 28)
    ("4", r"\boxed{3 \doteq 4}", "equation"),
    ("3", r"\boxed{3 \doteq 4}", "equation"),
    ("4", r"\boxed{3 \coloneqq 4}", "equation"),
    ("4", r"\boxed{3 \eqqcolon 4}", "equation"),
    ("4", r"\boxed{3 \triangleq 4}", "equation"),
    ("4", r"\boxed{3 := 4}", "equation"),
    ("4", "\\boxed{3 \u2250 4}", "equation"),  # ≐
    ("4", "\\boxed{3 \u2254 4}", "equation"),  # ≔
    ("4", "\\boxed{3 \u225c 4}", "equation"),  # ≜
    ("y = 2x + 3", r"\boxed{y = 2x + 3 \doteq 7}", "relation"),
    # percent equivalence only when the gold or the problem is about percentages
    ("3", r"\boxed{300\%}", "percent"),
    ("3", r"\boxed{3\%}", "percent"),
    ("0.1", r"\boxed{10\%}", "percent"),
    ("3", r"\boxed{300 \text{ percent}}", "percent"),
    # decimal approximations of exact answers
    (r"\frac{\sqrt3}{3}", r"\boxed{0.57735026919}", "wrong"),
    (r"\frac{\sqrt3}{3}", r"\boxed{0.5773502691896258}", "wrong"),
    (r"\frac{\sqrt{3}}{3}", r"\boxed{0.57735026918962576451}", "wrong"),
    (r"\pi", r"\boxed{3.14159265359}", "wrong"),
    (r"2\sqrt{2}", r"\boxed{2.8284271247}", "wrong"),
    (r"\frac13", r"\boxed{0.3333333333}", "wrong"),
    (r"\frac{\sqrt3}{3}", r"\boxed{0.57735026919 \cdot 1}", "wrong"),
    (r"x^2 + \frac{x}{3}", r"\boxed{x^2 + 0.3333333333x}", "wrong"),
    (r"\left( \frac{\sqrt3}{3}, 1 \right)", r"\boxed{(0.57735026919, 1)}", "wrong"),
    # a boxed equation that restates the question, or a tautology
    ("5", r"\boxed{2x+3=13}", "equation"),
    ("13", r"\boxed{2x+3=13}", "equation"),
    ("x^2", r"\boxed{x^2 = x^2}", "equation"),
    ("5", r"\boxed{5=5}", "equation"),
    ("5", r"\boxed{x}", "wrong"),
    # boxes in code or tool calls are not answers (ignore_code_blocks=True)
    ("7", "```python\nprint('\\\\boxed{7}')\n```", "no_answer"),
    ("7", "Run `\\boxed{7}` to see.", "no_answer"),
    ("7", '<tool_call>{"name": "python", "arguments": {"code": "print(\'\\\\boxed{7}\')"}}</tool_call>', "no_answer"),
    # no box: the whole response is never the answer
    ("7", "7", "no_answer"),
    ("7", "The final answer is 7", "no_answer"),
    ("7", r"\boxed{}", "empty_answer"),
    ("7", r"\boxed{7", "malformed"),
    # a gold number is not a list, a variable expression or a base-10 reading of a base answer
    ("52_8", r"\boxed{52_{10}}", "wrong"),
    ("0", r"\boxed{0\cdot x + y}", "wrong"),
]


@pytest.mark.parametrize(("gold", "response", "error"), HACKS)
def test_reward_hacks_score_zero(gold: str, response: str, error: str | None) -> None:
    score = verify_math(gold, response)
    assert score.reward == 0.0 and not score.correct
    if error is not None:
        assert score.error == error


def test_every_relation_in_the_table_is_refused_around_the_gold() -> None:
    """One table (math_normalize.RELATION_COMMANDS/CHARS) drives the claim reader and the comparison."""
    from rollgym.verifiers.math_normalize import RELATION_CHARS, RELATION_COMMANDS

    spellings = [f"\\{name} " for name in RELATION_COMMANDS] + list(RELATION_CHARS) + [":="]
    for spelling in spellings:
        for gold in ("3", "4"):
            score = verify_math(gold, f"\\boxed{{3 {spelling} 4}}")
            assert not score.correct and score.error in ("relation", "equation"), (spelling, gold, score.error)


def test_an_assignment_in_any_spelling_of_equals_is_its_value() -> None:
    assert verify_math("5", r"\boxed{x \coloneqq 5}").correct and verify_math("5", "\\boxed{x \u2254 5}").correct
    assert verify_math("x=5", r"\boxed{x := 5}").correct
    # v0 keeps its rules (the ids that reproduce old results)
    from rollgym.verifiers.math import MathVerifyConfig

    v0 = MathVerifyConfig(rules="v0")
    assert verify_math("4", r"\boxed{3 = 4}", v0).error == "equation"


def test_percent_equivalence_holds_where_the_problem_or_gold_is_a_percentage() -> None:
    from rollgym.core.task import Task

    asks = Task("t", "MATH500-v0", "By what percent does the area decrease?", "3")
    assert verify_math(asks, r"\boxed{3\%}").correct and verify_math(asks, r"\boxed{3}").correct
    assert verify_math(r"10\%", r"\boxed{0.1}").correct and verify_math(r"10\%", r"\boxed{10\%}").correct
    plain = Task("t", "MATH500-v0", "What is 1 + 2?", "3")
    assert verify_math(plain, r"\boxed{300\%}").error == "percent"


def test_relations_pass_when_the_gold_asserts_the_same_relation() -> None:
    assert verify_math("x=5", r"\boxed{x = 5}").correct
    assert verify_math("5", r"\boxed{x = 5}").correct
    assert verify_math(r"x \in [-2,7]", r"\boxed{x \in [-2, 7]}").correct
    assert verify_math(r"x \in [-2,7]", r"\boxed{[-2,7]}").correct
    assert verify_math("y = 2x + 3", r"\boxed{y = 3 + 2x}").correct
    assert verify_math("3", r"\boxed{(3)}").correct and verify_math("58,500", r"\boxed{58,500}").correct


def test_ordinary_notation_still_matches() -> None:
    assert verify_math("10000", r"\boxed{10\,000}").correct and verify_math("4", r"\boxed{|{-4}|}").correct
    assert verify_math("10", r"\boxed{\binom{5}{2}}").correct
    assert verify_math("3", r"\boxed{\lfloor 3.5 \rfloor}").correct
    assert verify_math(r"90^\circ", r"\boxed{90^{\circ}}").correct and verify_math(r"\theta", "\\boxed{\u03b8}").correct
    assert verify_math(r"\frac{\pi}{2}", "\\boxed{\u03c0/2}").correct


def test_exact_decimals_still_match() -> None:
    assert verify_math(r"\frac{1}{8}", r"\boxed{0.125}").correct
    assert verify_math(r"\frac{\sqrt{4}}{8}", r"\boxed{0.25}").correct
    assert verify_math(r"\frac{x}{2}", r"\boxed{0.5x}").correct
    assert verify_math(r"\left( \frac{1}{2}, 1 \right)", r"\boxed{(0.5, 1)}").correct


def test_repeating_the_same_answer_in_several_boxes_is_fine() -> None:
    assert verify_math("3", r"\boxed{3}. Final answer: \boxed{3.0}").correct
    assert verify_math(r"\frac12", r"\boxed{\frac12}, i.e. \boxed{0.5}").correct


def test_last_box_policy_scores_only_the_last_box() -> None:
    config = MathVerifyConfig(box_policy="last")
    assert verify_math("3", r"\boxed{4} no wait \boxed{3}", config).correct
    assert not verify_math("3", r"\boxed{3} no wait \boxed{4}", config).correct


def test_code_boxes_count_when_the_env_allows_them() -> None:
    config = MathVerifyConfig(ignore_code_blocks=False)
    assert verify_math("7", "```\n\\boxed{7}\n```", config).correct


def test_final_answer_line_only_when_allowed() -> None:
    config = MathVerifyConfig(allow_final_answer_line=True)
    assert verify_math("7", "Work...\n**Final answer:** $7$.", config).correct
    assert not verify_math("7", "Work...\nFinal answer: 8", config).correct
    assert verify_math("7", "Work...\nFinal answer: 7").error == "no_answer"


def test_fbox_and_nested_boxes_are_read() -> None:
    assert verify_math("7", r"\fbox{7}").correct
    assert verify_math("7", r"\boxed{\boxed{7}}").correct
    assert extract_answers(r"\boxed 7").answers == ("7",)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "response",
    [
        r"\boxed{9^{9^{9^{9}}}}",
        r"\boxed{9^{9^{9}}}",
        r"\boxed{" + "9" * 100_000 + "}",
        "x" * 100_000 + r"\boxed{3}" * 2000,
        r"\boxed{" + "{" * 5000 + "1" + "}" * 5000 + "}",
        r"\boxed{\frac{1}{2}" + "{" * 1000,
        r"\boxed{" + "(" * 500 + "1" + ")" * 500 + "}",
        r"\boxed{" + "+".join(["x"] * 400) + "}",
        r"\boxed{2^{99999999}}",
        "}" * 50_000 + r"\boxed{{{{" * 1000,
    ],
)
def test_pathological_inputs_end_in_bounded_time_as_wrong(response: str) -> None:
    score = verify_math("5", response, MathVerifyConfig(timeout_s=2.0))
    assert not score.correct and score.reward == 0.0
    assert score.error is not None


@pytest.mark.timeout(120)
def test_the_pool_kills_a_job_at_its_timeout_and_recovers() -> None:
    pool = SymbolicPool(workers=1)
    try:
        results = pool.run([("sleep", (30,)), ("equal", ("1/2", "0.5"))], timeout_s=1.5)
        assert results[0].error == "timeout"
        assert results[1].ok and results[1].value == (True, None)
        assert pool.restarts == 1
    finally:
        pool.close()


@pytest.mark.timeout(300)
def test_an_answer_past_the_timeout_is_wrong_with_error_timeout() -> None:
    from rollgym.verifiers.math_pool import get_pool

    # 99999999! passes the size guards but takes minutes to evaluate: the worker is killed at the deadline.
    verify_math("1", r"\boxed{1}")  # start the shared pool first
    pool = get_pool()
    restarts = pool.restarts
    score = verify_math("5", r"\boxed{99999999!}", MathVerifyConfig(timeout_s=1.0))
    assert score.reward == 0.0 and not score.correct and score.error == "timeout"
    assert pool.restarts == restarts + 1 and get_pool() is pool
    assert verify_math(r"\frac{1}{2}", r"\boxed{0.5}").correct  # the pool carries on


def test_symbolic_work_never_runs_in_the_calling_process() -> None:
    code = (
        "import sys, rollgym\n"
        "from rollgym.verifiers.math import verify_math\n"
        "assert verify_math('\\\\sqrt{2}', '\\\\boxed{2^{1/2}}').correct\n"
        "assert verify_math('27', '\\\\boxed{27.0}').correct\n"
        "print('sympy' in sys.modules, 'math_verify' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.split() == ["False", "False"]


@pytest.mark.timeout(300)
def test_a_forked_child_gets_its_own_pool() -> None:
    from rollgym.verifiers.math import answers_equal

    assert answers_equal(r"\sqrt{2}", "2^{1/2}").correct  # the parent's pool is running now
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: must not talk to the parent's workers
        try:
            ok = answers_equal(r"\sqrt{3}", "3^{1/2}").correct and not answers_equal(r"\sqrt{3}", "2").correct
            os.write(write_end, b"ok" if ok else b"no")
        finally:
            os._exit(0)
    os.close(write_end)
    _, status = os.waitpid(pid, 0)
    assert os.read(read_end, 2) == b"ok" and status == 0
    assert answers_equal(r"\sqrt{5}", "5^{1/2}").correct  # and the parent's pool still works


@pytest.mark.timeout(300)
def test_the_pool_is_shared_safely_between_threads() -> None:
    from concurrent.futures import ThreadPoolExecutor

    pool = SymbolicPool(workers=1)
    try:
        jobs = [[("sleep", (60,))], [("equal", ("x+1", "1+x"))], [("equal", (r"\sqrt{4}", "3"))]]
        with ThreadPoolExecutor(3) as ex:
            results = list(ex.map(lambda batch: pool.run(batch, timeout_s=4.0), jobs))
        assert results[0][0].error == "timeout"
        assert results[1][0].value == (True, None) and results[2][0].value[0] is False
    finally:
        pool.close()


SLOW_BOXES = " ".join(rf"\boxed{{({n}!)!}}" for n in range(10, 18))  # 8 distinct answers, each past any timeout


@pytest.mark.timeout(300)
def test_a_response_gets_one_budget_for_all_its_boxes() -> None:
    # 8 x (n!)! used to cost 8 timeouts (26-31 s at 5 s each); now the boxes share one budget
    from rollgym.verifiers.math_pool import get_pool

    verify_math("1", r"\boxed{1}")
    pool = get_pool()
    restarts = pool.restarts
    score = verify_math("5", SLOW_BOXES, MathVerifyConfig(timeout_s=1.0, budget_s=2.0))
    assert not score.correct and score.reward == 0.0 and score.error == "time_budget"
    assert score.details["answers"] == [rf"({n}!)!" for n in range(10, 18)]
    assert pool.restarts - restarts <= 2  # at most budget / timeout jobs ever ran
    assert verify_math(r"\sqrt{2}", r"\boxed{2^{1/2}}").correct


@pytest.mark.timeout(300)
def test_the_budget_counts_worker_seconds_and_labels_what_never_ran() -> None:
    pool = SymbolicPool(workers=2)
    try:
        results = pool.run([("sleep", (30,))] * 6 + [("equal", ("1", "1"))], timeout_s=1.0, budget_s=2.5)
        errors = [r.error for r in results]
        assert errors[:2] == ["timeout", "timeout"]  # one job at a time (per_call = 1): 1 s + 1 s
        assert errors[2] == "budget"  # the last 0.5 s: cut short by the budget, labelled as such
        assert errors[3:] == ["budget"] * 4  # never started
        assert pool.restarts == 3
    finally:
        pool.close()


@pytest.mark.timeout(300)
def test_a_slow_response_never_blocks_another_request() -> None:
    import threading
    import time

    pool = SymbolicPool(workers=2)  # one call holds at most one worker: the other stays free
    try:
        while pool._idle.qsize() < 2:  # both workers started (they start in the background)
            pool.run([("equal", ("1", "1"))], timeout_s=60)
            time.sleep(0.1)
        slow_done = threading.Event()
        started = threading.Event()

        def slow() -> None:
            started.set()
            pool.run([("sleep", (30,))] * 4, timeout_s=5.0, budget_s=20.0)
            slow_done.set()

        thread = threading.Thread(target=slow)
        thread.start()
        started.wait()
        answers = [pool.run([("equal", (rf"\sqrt{{{k}}}", rf"{k}^{{1/2}}"))], timeout_s=60)[0] for k in range(2, 7)]
        assert all(a.ok and a.value[0] for a in answers)
        assert not slow_done.is_set()  # all five were answered while the slow call still ran
        thread.join()
    finally:
        pool.close()


# ---- T^3RL's verified signal on the MATH tool envs: printing a guess is not verification ----

FORGERIES = [
    ("print(999)", "999"),  # the guess, printed
    ("x = 999\nprint(x)", "999"),  # a literal assigned, then printed
    ("999", "999"),  # a final expression, which the sandbox prints
    ("print(990 + 9)", "999"),  # arithmetic on literals unrelated to the problem
    ("print(sum([333, 333, 333]))", "999"),
    ("print(999 + 7 - 7)", "999"),  # a problem number mixed in so that it cancels
    ("print(7)", "7"),  # a number of the problem echoed back
    ("x = 7\nprint(x * 1)", "7"),
    ("print(31)\nprint(7 * 4)", "31"),  # the guess printed beside a real computation
]
IDENTITY_FORGERIES = ["print(999 * 1)", "print(999 + 0)", "x = 1\nprint(999 ** x)"]  # 0 and 1 are in problem 1


def _tool_env(tmp_path: os.PathLike[str]) -> Any:
    import json

    import gymnasium as gym

    path = os.path.join(str(tmp_path), "arithmetic.jsonl")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(json.dumps({"id": "p0", "problem": "What is $7 \\times 4 + 3$?", "answer": "31"}) + "\n")
        handle.write(json.dumps({"id": "p1", "problem": "Let $x = 1$ and $y = 0$. What is $10x + 21 + y$?",
                                 "answer": "31"}) + "\n")
    return gym.make("MATHTool-v1", path=path)


def _play(env: Any, code: str, boxed: str, task_index: int = 0) -> dict[str, Any]:
    import json

    call = "<tool_call>" + json.dumps({"name": "python", "arguments": {"code": code}}) + "</tool_call>"
    env.reset(options={"task_index": task_index})
    env.step(call)
    *_, info = env.step(f"So \\boxed{{{boxed}}}.")
    return info


def test_printing_a_guess_and_boxing_it_is_not_verified(tmp_path: os.PathLike[str]) -> None:
    env = _tool_env(tmp_path)
    try:
        for code, boxed in FORGERIES:
            info = _play(env, code, boxed)
            evidence = info["details"]["verification"]
            assert evidence["printed_answer"] is True, code  # the code did print the boxed value...
            assert info["verified"] is False and evidence["computed_calls"] == [], code  # ...but computed nothing
        for code in IDENTITY_FORGERIES:  # changing a 0 or a 1 of the problem would change these: never tried
            info = _play(env, code, "999", task_index=1)
            assert info["details"]["verification"]["printed_answer"] is True, code
            assert info["verified"] is False and info["details"]["verification"]["reruns"] == [], code
        computed = _play(env, "x, y = 1, 0\nprint(10 * x + 21 + y)", "31", task_index=1)
        assert computed["verified"] is True and computed["details"]["verification"]["reruns"][0]["number"] == "10"
    finally:
        env.close()


def test_an_answer_computed_from_the_problem_is_verified(tmp_path: os.PathLike[str]) -> None:
    env = _tool_env(tmp_path)
    try:
        for code in ("print(7 * 4 + 3)", "a, b, c = 7, 4, 3\nprint(a * b + c)",
                     "import sympy\nprint(sympy.sympify('7*4 + 3'))", "7 * 4 + 3"):
            info = _play(env, code, "31")
            assert info["verified"] is True and info["reward"] == 1.0, code
            rerun = info["details"]["verification"]["reruns"][-1]
            assert rerun["ok"] and rerun["printed_answer"] is False and rerun["echo"] is False
        wrong = _play(env, "print(7 * 4 - 3)", "25")  # computed from the problem's numbers, and wrong: verified,
        assert wrong["verified"] is True and wrong["reward"] == 0.0  # reward 0 (no template to check it against)
    finally:
        env.close()


# Arithmetic on literals that fold a problem number into a guess (issue 41): each boxed 999 for 7*4+3.
FOLDED_FORGERIES = ["print(992 + 7)", "print(999 if 7 % 2 else 0)", "a = 7*4+3; print(a + 968)"]
GENUINE = ["print(7 * 4 + 3)", "a, b, c = 7, 4, 3\nprint(a * b + c)", "import sympy\nprint(sympy.sympify('7*4 + 3'))"]
TEMPLATED = {"id": "t0", "problem": "What is $7 \\times 4 + 3$?", "answer": "31",
             "template": {"params": {"a": 7, "b": 4, "c": 3},
                          "instances": [{"params": {"a": 5, "b": 8, "c": 2}, "answer": "42"},
                                        {"params": {"a": 9, "b": 3, "c": 6}, "answer": "33"}]}}


def _templated_env(tmp_path: os.PathLike[str], *rows: dict[str, Any]) -> Any:
    import json

    import gymnasium as gym

    path = os.path.join(str(tmp_path), "generated.jsonl")
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows or (TEMPLATED,):
            handle.write(json.dumps(row) + "\n")
    return gym.make("MATHTool-v1", path=path)


def test_arithmetic_that_folds_a_problem_number_into_a_guess_is_not_verified(tmp_path: os.PathLike[str]) -> None:
    env = _tool_env(tmp_path)
    try:
        for code in FOLDED_FORGERIES:  # no template: refused because the code writes numbers the problem has not
            info = _play(env, code, "999")
            evidence = info["details"]["verification"]
            assert evidence["printed_answer"] is True and info["verified"] is False, code
            assert evidence["foreign_numbers"][0]["numbers"][0] in ("992", "999", "968"), code
    finally:
        env.close()
    env = _templated_env(tmp_path)
    try:
        for code in FOLDED_FORGERIES:  # a template: the code, on a fresh instance's numbers, misses its answer
            info = _play(env, code, "999")
            evidence = info["details"]["verification"]
            assert evidence["method"] == "fresh_instance" and evidence["printed_answer"] is True, code
            assert info["verified"] is False and evidence["reruns"][0]["printed_fresh_answer"] is False, code
        for code in ("print(999)\nprint(7 * 4 + 3)", "print(7 * 4 - 3)"):  # a guess beside the computation; a wrong
            boxed = "999" if "999" in code else "25"  # formula: both print something else on a fresh instance
            assert _play(env, code, boxed)["verified"] is False, code
    finally:
        env.close()


def test_a_program_computing_the_answer_from_the_problem_is_verified_on_fresh_instances(
        tmp_path: os.PathLike[str]) -> None:
    import json

    env = _templated_env(tmp_path)
    try:
        for code in GENUINE:
            call = "<tool_call>" + json.dumps({"name": "python", "arguments": {"code": code}}) + "</tool_call>"
            observation, reset_info = env.reset(options={"task_index": 0})
            seen = observation + json.dumps(reset_info, default=str)
            assert "42" not in seen and "instances" not in seen  # the fresh instances stay hidden
            env.step(call)
            *_, info = env.step("So \\boxed{31}.")
            assert info["verified"] is True and info["reward"] == 1.0, code
            reruns = info["details"]["verification"]["reruns"]
            assert [r["instance"] for r in reruns] == [0, 1] and all(r["printed_fresh_answer"] for r in reruns)
        # the documented limit (docs/math.md): code that computes the answer, then special-cases its value
        assert _play(env, "r = 7*4+3\nprint(999 if r == 31 else r)", "999")["verified"] is True
    finally:
        env.close()


def test_the_t3rl_experiments_rows_are_templated_and_its_tool_behaviour_is_verified(
        tmp_path: os.PathLike[str]) -> None:
    from research.t3rl import problems, template, tool_text

    rows = problems(4, 0)[0]
    env = _templated_env(tmp_path, *({"id": r["id"], "problem": r["problem"], "answer": r["answer"],
                                      "template": template(r)} for r in rows))
    try:
        for index, row in enumerate(rows):
            env.reset(options={"task_index": index})
            env.step(tool_text(row))
            *_, info = env.step(f"\\boxed{{{row['answer']}}}")
            assert info["verified"] is True and info["details"]["verification"]["method"] == "fresh_instance"
    finally:
        env.close()


def test_a_template_that_cannot_check_code_is_refused_with_one_sentence(tmp_path: os.PathLike[str]) -> None:
    from rollgym.core.errors import ConfigError

    base = {k: v for k, v in TEMPLATED.items() if k != "template"}
    bad = [
        ({"params": {"a": 8}, "instances": [{"params": {"a": 5}, "answer": "1"}]}, "not a number written in"),
        ({"params": {"a": 7}, "instances": []}, "non-empty list"),
        ({"params": {"a": 7}, "instances": [{"params": {"a": 5}, "answer": "31"}]}, "the problem's own answer"),
        ({"params": {"a": 7}, "instances": [{"params": {"b": 5}, "answer": "1"}]}, "exactly the params"),
        ({"params": {"a": 7}, "instances": [{"params": {"a": 7}, "answer": "1"}]}, "changes no number"),
        ({"params": {"a": "seven"}, "instances": [{"params": {"a": 5}, "answer": "1"}]}, "must be a number"),
        ("7", "must be an object"),
    ]
    for template, message in bad:
        with pytest.raises(ConfigError, match=message):
            _templated_env(tmp_path, {**base, "template": template})
    twice = {"id": "t1", "problem": "What is $7 \\times 7 + 3$?", "answer": "52",  # a code 7 cannot say which
             "template": {"params": {"a": 7, "b": 7}, "instances": [{"params": {"a": 5, "b": 6}, "answer": "33"}]}}
    with pytest.raises(ConfigError, match="must stay equal"):
        _templated_env(tmp_path, twice)


def test_the_numbers_a_program_writes_are_found_in_literals_and_strings() -> None:
    from rollgym.envs.math.evidence import foreign_numbers, written_numbers

    problem = "What is $7 \\times 4 + 3$?"
    assert written_numbers("x = 7 * 4 + 3.5\nprint(f'{x} is {1e3}', sympify('x**2'))") == [
        "7", "4", "3.5", "1000.0", "2"]
    assert foreign_numbers("print(7 * 4 + 3, 7.0, -1, 0, True)", problem) == []
    forged = "print(int('9' * 3), 0x3e7, float('1e3'), 1j, range(1, 8))"  # 3 is the problem's, 8 one more than 7
    assert foreign_numbers(forged, problem) == ["9", "999", "1e3", "1j"]
    assert foreign_numbers("print(", problem) == ["?"]


def test_a_problem_number_is_changed_in_numbers_and_strings_only_as_a_whole() -> None:
    from decimal import Decimal

    from rollgym.envs.math.evidence import change_number, problem_numbers

    assert [str(n) for n in problem_numbers("Find $x^2 - 4 = 0$ for 1,000 people and 2.5 kg")] == [
        "2", "4", "0", "1000", "2.5"]
    assert change_number("print(sympify('x**2 - 4'), 4.0, True)", Decimal(4), Decimal(5)) == (
        "print(sympify('x**2 - 5'), 5.0, True)")
    assert change_number("print('x4', 0.45, 14)", Decimal(4), Decimal(5)) is None
    assert change_number("print(2.5 * 2)", Decimal("2.5"), Decimal("3.5")) == "print(3.5 * 2)"
    assert change_number("print(1 if True else 2)", Decimal(1), Decimal(2)) == "print(2 if True else 2)"
    assert change_number("def (:", Decimal(1), Decimal(2)) is None
