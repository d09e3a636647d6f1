"""Attacks on the code envs through their public API: a candidate that looks for another job's data
in its own process (frame introspection, which the audit hook allows) finds none, and one answer
cannot break grading for the answers after it (issue 28). Each attack here scored 1.0, or made
an honest answer score 0, before the jobs were forked from a clean zygote and a broken sandbox was
retired."""

from __future__ import annotations

import base64
import json

import gymnasium as gym

from rollgym.envs.code import humaneval_grader
from rollgym.envs.code.codegen.env import grade_codegen
from rollgym.envs.code.policies import codegen_oracle
from rollgym.envs.code.terminal.env import check_state
from tests.conftest import require_binary
from tests.envs.code.conftest import canonical
from tests.sandbox.conftest import REACHABLE_BYTES

# A candidate that computes nothing: it walks every frame of its process (and what their variables
# hold) for a results file another job left in memory (HumanEval's recording: lines with "outputs";
# a graded sample's: lines with "i" and "v"), and returns those answers call by call.
COPIER = REACHABLE_BYTES + r'''
import json, sys
STATE = {"i": 0, "found": None}

def _answers():
    frame = sys._getframe(2)
    decode = frame.f_globals.get("decode")
    found = [data for data in reachable_bytes(frame, 200000) if b'"outputs"' in data or b'"v"' in data]
    records = []
    for data in found:
        for line in data.splitlines():
            try:
                records.append(json.loads(line))
            except ValueError:
                continue
    for record in records:
        if isinstance(record, dict) and "outputs" in record:
            return [decode(v) for v in record["outputs"]]
    by_index = {}
    for record in records:
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


# Terminal-v0 permissions task: everything right but secret.txt (left 0644), and modules planted in the working
# folder that, if the mode listing imported them, would print a forged listing with secret.txt at 0600.
FORGED_LISTING = (
    "import sys, json as _j\n"
    "sys.stdout.write(_j.dumps({'secret.txt': 0o100600, 'bin/tool0.sh': 0o100755, 'bin/tool1.sh': 0o100755,"
    " 'bin/tool2.sh': 0o100755, 'bin/readme.txt': 0o100644}) + chr(10)); sys.stdout.flush()\n"
)
PLANTED = ("json", "os", "posixpath", "genericpath", "stat", "encodings", "codecs", "io", "abc", "_json",
           "sitecustomize", "usercustomize")


def _bash(env, command: str) -> str:
    return env.step("<tool_call>" + json.dumps({"name": "bash", "arguments": {"command": command}}) + "</tool_call>")[0]


def _permissions_env(fix_secret: bool):
    env = gym.make("Terminal-v0", kinds="permissions")
    env.reset(options={"task_index": 0})
    expect = env.unwrapped.task.answer["expect"]
    assert expect["mode_600"] == ["secret.txt"] and len(expect["executable"]) == 3, expect
    _bash(env, "chmod +x " + " ".join(expect["executable"]) + (" && chmod 600 secret.txt" if fix_secret else ""))
    planted = base64.b64encode(FORGED_LISTING.encode()).decode()
    _bash(env, " && ".join(f"echo {planted} | base64 -d > {name}.py" for name in PLANTED))
    return env


def test_terminal_planted_modules_cannot_forge_the_modes_the_check_reads() -> None:
    """Terminal-v0: modules planted in the working folder (json, os, sitecustomize...) do not stand in for the
    mode listing's code: the unfinished task fails on secret.txt's mode, and the finished one still passes."""
    env = _permissions_env(fix_secret=False)
    _, reward, terminated, _, info = env.step("Done.")
    assert terminated and reward == 0.0 and info["details"]["mode_600"] is False, info
    env.close()
    env = _permissions_env(fix_secret=True)
    assert env.step("Done.")[1] == 1.0
    env.close()


def test_terminal_final_check_starts_no_process_in_the_agents_sandbox() -> None:
    """The modes are listed by the sandbox's supervisor, not by a job forked where the agent's commands ran
    (with the working folder on ``sys.path``): between two of the agent's commands, the final check of a
    permissions task starts no process there (the sandbox's own pid namespace numbers them in turn)."""
    require_binary("bwrap")
    env = _permissions_env(fix_secret=True)
    session = env.unwrapped.session
    before = int(session.run_command(["bash", "-c", "echo $$"]).stdout)
    assert check_state(session, env.unwrapped.task).correct
    after = int(session.run_command(["bash", "-c", "echo $$"]).stdout)
    assert after == before + 1, (before, after)
    env.close()
