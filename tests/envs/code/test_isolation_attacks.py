"""Attacks on the code envs through their public API: a candidate that looks for another job's data
in its own process (frame introspection, which the audit hook allows) finds none, and one answer
cannot break grading for the answers after it (issue 28). Each attack here scored 1.0, or made
an honest answer score 0, before the jobs were forked from a clean zygote and a broken sandbox was
retired."""

from __future__ import annotations

import gymnasium as gym

from rollgym.envs.code import humaneval_grader
from rollgym.envs.code.codegen.env import grade_codegen
from rollgym.envs.code.policies import codegen_oracle
from tests.envs.code.conftest import canonical

# A candidate that computes nothing: it walks every frame of its process (and what their variables
# hold) for a results file another job left in memory (HumanEval's recording: lines with "outputs";
# a graded sample's: lines with "i" and "v"), and returns those answers call by call.
COPIER = r'''
import json, sys
STATE = {"i": 0, "found": None}

def _answers():
    frame = sys._getframe(2)
    decode = frame.f_globals.get("decode")
    todo, seen, found = [], set(), []
    while frame is not None:
        todo.append(frame.f_locals)
        frame = frame.f_back
    while todo and len(seen) < 200000:
        value = todo.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, dict):
            todo.extend(value.values())
        elif isinstance(value, (list, tuple)):
            todo.extend(value)
        elif isinstance(value, (bytes, bytearray, memoryview, str)):
            data = value.encode() if isinstance(value, str) else bytes(value)
            if b'"outputs"' in data or b'"v"' in data:
                found.append(data)
    for data in found:
        for line in data.splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and "outputs" in record:
                return [decode(v) for v in record["outputs"]]
    by_index = {}
    for data in found:
        for line in data.splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and "v" in record and isinstance(record.get("i"), int):
                by_index.setdefault(record["i"], decode(record["v"]))
    return [by_index.get(i) for i in range(max(by_index, default=-1) + 1)]

def {name}(*args, **kwargs):
    if STATE["found"] is None:
        STATE["found"] = _answers()
    i = STATE["i"]
    STATE["i"] += 1
    return STATE["found"][i] if i < len(STATE["found"]) else None
'''


def test_a_humaneval_candidate_cannot_return_the_recorded_reference_outputs(humaneval_tasks, grader) -> None:
    """The grader's trusted recording of a problem's hidden calls ran in a sandbox no candidate ever runs in,
    and a candidate's process holds nothing of any other job: the copier scores 0, the reference 1."""
    for task in humaneval_tasks[:3]:
        humaneval_grader._recordings.pop(humaneval_grader.problem_key(task), None)  # recorded again, now
        copier = f"```python\n{COPIER.replace('{name}', task.meta['entry_point'])}```"
        copied, honest = grader.grade([(task, copier), (task, canonical(task))])
        assert honest.correct, honest
        assert copied.reward == 0.0 and not copied.correct, (task.id, copied)


def test_a_codegen_copier_cannot_take_the_previous_samples_answers() -> None:
    """CodeGen-v0's ``verify_batch``: copiers behind one honest sample in the same batch (the same kept
    sandbox) find nothing of its answers and score 0."""
    env = gym.make("CodeGen-v0").unwrapped
    _, info = env.reset(options={"task_index": 0})
    honest = codegen_oracle("", {**info, "task_index": 0})
    copier = f"```python\n{COPIER.replace('{name}', env.task.meta['entry_point'])}```"
    scores = grade_codegen(env.runner, [(env.task, honest)] + [(env.task, copier)] * 4, env.limits, 2.0)
    assert scores[0].correct, scores[0]
    assert all(s.reward == 0.0 and not s.correct for s in scores[1:]), scores[1:]
    env.close()


# An answer that is correct and plants a chain of 1500 folders in /tmp.
DEEP_CHAIN = '''
import os
os.chdir("/tmp")
for _ in range(1500):
    os.mkdir("d")
    os.chdir("d")
os.chdir("/tmp")
'''


def test_a_deep_folder_chain_does_not_fail_the_answers_after_it(humaneval_tasks, grader) -> None:
    """HumanEval-v0: the answer that plants the chain scores as it deserves (1.0: it is correct), and every
    correct answer graded after it in the same kept sandboxes still scores 1.0."""
    task = humaneval_tasks[0]
    planted = f"```python\n{DEEP_CHAIN}{task.meta['code_prompt']}{task.answer['canonical_solution']}\n```"
    scores = grader.grade([(task, planted)] + [(task, canonical(task))] * 6)
    assert [s.reward for s in scores] == [1.0] * 7, [(s.error, s.details.get("run")) for s in scores]
    again = grader.grade([(task, canonical(task))] * 4)  # the next batch, in the same kept sandboxes
    assert all(s.correct for s in again), [s.error for s in again]


def test_a_sandbox_failure_is_a_labelled_failure_that_the_collector_retries() -> None:
    """A run the sandbox failed (here: its supervisor died) is never a silent 0 for the answer: the score is
    labelled ``sandbox_error`` and the step's ``info["failure"]`` makes the collector fail and retry the
    rollout. A run that broke its own sandbox is that answer's failure: ``broke_sandbox``, no retry."""
    from rollgym.envs.code.runner import failure_info, judge_expected, parse_outcome
    from rollgym.sandbox import RunResult

    lost = judge_expected(parse_outcome(RunResult(error="supervisor_died: the sandbox exited"), "nonce", 2), [1, 2])
    assert lost.error == "sandbox_error" and failure_info(lost.to_info())["failure"]["type"] == "SandboxError"
    broke = judge_expected(parse_outcome(RunResult(error="sandbox_broken: the zygote died"), "nonce", 2), [1, 2])
    assert broke.error == "broke_sandbox" and "failure" not in failure_info(broke.to_info())
