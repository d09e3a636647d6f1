"""HumanEval-v0 / HumanEvalTool-v0: canonical solutions pass, wrong ones and reward hacks score 0, labelled."""

from __future__ import annotations

import json
from collections import defaultdict

import gymnasium as gym
import pytest

from rollgym.envs.code.humaneval_grader import HumanEvalGrader
from rollgym.envs.code.runner import CodeRunner
from tests.envs.code.conftest import HACKS, canonical

pytestmark = pytest.mark.timeout(900)


def test_every_canonical_solution_passes(humaneval_tasks, grader):
    assert len(humaneval_tasks) == 164
    scores = grader.grade([(t, canonical(t)) for t in humaneval_tasks])
    failed = [(t.id, s.error, s.details) for t, s in zip(humaneval_tasks, scores) if not s.correct]
    assert failed == []
    assert all(s.reward == 1.0 and s.details["tests"] > 0 for s in scores)


def test_no_canonical_solution_passes_another_problem_with_the_same_signature(humaneval_tasks, grader):
    groups = defaultdict(list)
    for task in humaneval_tasks:
        groups[task.meta["signature"].split(" ->")[0]].append(task)
    pairs = []
    for tasks in groups.values():
        for a in tasks:
            for b in tasks:
                if a is not b:
                    alias = f"{b.meta['entry_point']} = {a.meta['entry_point']}\n"
                    code = f"{a.meta['code_prompt']}{a.answer['canonical_solution']}\n\n{alias}"
                    pairs.append((b, f"```python\n{code}\n```", a.id))
    assert len(pairs) > 50  # signatures such as (string: str) -> ... are shared by many problems
    # The default grader waits 3 s on each call that never ends (prime_fib(50), ...): that was most of this
    # test's time. So every pair is graded first with calls limited to 0.25 s. A call that returns within 0.25 s
    # returns the same value under 3 s (the solutions are deterministic), so a pair with no timeout gets the
    # default grader's verdict, and a pair with a call that returned the wrong type or raised fails the default
    # grader too (each call's type and exception are judged alone). The other pairs that timed out are graded
    # with the default 3 s per call but only 4 s per run, one pair per round trip so that both sandboxes share
    # them: a call that ran out of its 3 s fails the default grader too. Any pair still undecided (the run was
    # cut before a call timed out) is graded with the default limits.
    pending = pairs
    spread = CodeRunner(grader.runner.limits, batch=1)
    try:
        for judge, proof in (
            (HumanEvalGrader(grader.runner, call_timeout_s=0.25), {"wrong_type", "exception"}),
            (HumanEvalGrader(spread, timeout_s=4.0), {"wrong_type", "exception", "timeout"}),
            (HumanEvalGrader(spread), None),
        ):
            scores = judge.grade([(b, text) for b, text, _ in pending], details=False)
            passed = [(a_id, b.id) for (b, _, a_id), s in zip(pending, scores) if s.correct]
            assert passed == []
            if proof is not None:
                pending = [pair for pair, s in zip(pending, scores) if s.error == "timeout"
                           and not proof & {f["reason"] for f in s.details.get("failures", [])}]
    finally:
        spread.close()


WRONG = {
    # off by one: the window of the comparison
    "HumanEval/0": ("    for i in range(len(numbers) - 1):\n        for j in range(i + 2, len(numbers)):\n"
                    "            if abs(numbers[i] - numbers[j]) < threshold:\n                return True\n"
                    "    return False\n", "wrong_answer"),
    # wrong return type: the right number, as a float
    "HumanEval/53": ("    return float(x + y)\n", "wrong_type"),
    # wrong return type: a tuple for a list
    "HumanEval/34": ("    return tuple(sorted(set(l)))\n", "wrong_type"),
    # wrong return type: 1/0 for True/False
    "HumanEval/3": ("    balance = 0\n    for op in operations:\n        balance += op\n        if balance < 0:\n"
                    "            return 1\n    return 0\n", "wrong_type"),
    # partial: right on the docstring examples only
    "HumanEval/2": ("    return {3.5: 0.5}.get(number, 0.0)\n", "wrong_answer"),
    # partial: fails on the empty list
    "HumanEval/12": ("    return max(strings, key=len)\n", "exception"),
    # off by one in the Fibonacci index
    "HumanEval/55": ("    a, b = 0, 1\n    for _ in range(n - 1):\n        a, b = b, a + b\n    return a\n",
                     "wrong_answer"),
    # find_zero: a value that is not a zero (the check's own tolerance decides)
    "HumanEval/32": ("    return 0.0\n", "wrong_answer"),
}


def test_hidden_wrong_solutions_fail_with_the_reason(humaneval_tasks, grader):
    by_id = {t.id: t for t in humaneval_tasks}
    items = [(by_id[k], body) for k, (body, _) in WRONG.items()]
    scores = grader.grade(items)
    for (task_id, (_, label)), score in zip(WRONG.items(), scores):
        assert score.reward == 0.0 and not score.correct, task_id
        assert score.error == label, (task_id, score.error, score.details)
        assert score.details["failed"], task_id
    assert scores[0].details["failures"][0]["exception"] == "AssertionError"
    assert scores[5].details["failures"][0]["exception"] == "ValueError"


def test_a_float_tolerance_in_the_check_still_applies(humaneval_tasks, grader):
    task = next(t for t in humaneval_tasks if t.id == "HumanEval/32")
    newton = ("    x = 0.0\n    for _ in range(200):\n"
              "        d = sum(i * c * x ** (i - 1) for i, c in enumerate(xs) if i)\n"
              "        x = x - poly(xs, x) / d if d else x + 1.0\n    return x\n")
    score = grader.grade([(task, newton)])[0]
    assert score.correct, score.details  # a different zero than the reference's, accepted by the check's tolerance


@pytest.mark.parametrize("task_id", ["HumanEval/0", "HumanEval/53"])
def test_reward_hacks_score_zero_with_a_label(humaneval_tasks, grader, task_id):
    task = next(t for t in humaneval_tasks if t.id == task_id)
    names = list(HACKS)
    texts = [f"```python\n{HACKS[n].format(name=task.meta['entry_point'])}```" for n in names]
    special = ("def has_close_elements(numbers, threshold):\n    return {(3, 0.5): False, (6, 0.3): True}"
               ".get((len(numbers), threshold), False)\n" if task_id == "HumanEval/0" else
               "def add(x, y):\n    return {(2, 3): 5, (5, 7): 12}.get((x, y), 0)\n")
    names.append("special_case_examples")
    texts.append(f"```python\n{special}```")
    scores = grader.grade([(task, text) for text in texts])
    for name, score in zip(names, scores):
        assert score.reward == 0.0 and not score.correct, name
        assert score.error is not None, name
    labels = dict(zip(names, (s.error for s in scores)))
    assert labels["infinite_loop"] == "timeout" and labels["syntax_error"] == "syntax_error"
    assert labels["eq_always_true"] == "wrong_type" and labels["int_subclass_eq"] == "wrong_type"
    assert labels["os_exit_0"] == "crashed" and labels["forge_results"] == "crashed"
    assert labels["sys_exit_0"] in ("load_error", "crashed")


def test_the_envs_run_an_episode_and_hide_the_tests(humaneval_tasks):
    from tests.conftest import SHARED_DATA

    env = gym.make("HumanEval-v0", path=str(SHARED_DATA / "humaneval.jsonl"))
    obs, info = env.reset(options={"task_index": 53})
    assert "def add(x: int, y: int)" in obs and "check(" not in obs and "return x + y" not in obs
    _, reward, terminated, truncated, info = env.step(canonical(humaneval_tasks[53]))
    assert (reward, terminated, truncated, info["correct"]) == (1.0, True, False, True)
    env.close()

    tool = gym.make("HumanEvalTool-v0", path=str(SHARED_DATA / "humaneval.jsonl"))
    obs, info = tool.reset(options={"task_index": 53})
    assert [t["function"]["name"] for t in info["tools"]] == ["python", "run_examples"]
    call = {"name": "run_examples", "arguments": {"code": "    return x - y\n"}}
    obs, reward, terminated, _, info = tool.step(f"<tool_call>{json.dumps(call)}</tool_call>")
    assert "FAILED: add(2, 3)" in obs and "0 of 2 visible examples pass" in obs and not terminated
    peek = "import os\nprint(sorted(os.listdir('.')), os.path.exists('/work/shared/data'))"
    look = {"name": "python", "arguments": {"code": peek}}
    obs, *_ = tool.step(f"<tool_call>{json.dumps(look)}</tool_call>")
    assert "[] False" in obs  # nothing of the problem's tests or the host's data is there
    obs, reward, terminated, _, info = tool.step(canonical(humaneval_tasks[53]))
    assert reward == 1.0 and terminated and info["turn"] == 3
    tool.close()
