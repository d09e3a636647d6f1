"""CodeGen-v0, RepoRepair-v0, Terminal-v0 and TerminalGen-v0: oracle 100% on every split, random ~0%,
determinism, disjoint splits, and the reward-hack suite."""

from __future__ import annotations

import json
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

import rollgym  # noqa: F401
from rollgym.core.seeding import SPLITS
from rollgym.envs.code import policies
from tests.conftest import REPO, require_binary
from tests.envs.code.conftest import HACKS

pytestmark = pytest.mark.timeout(900)

ORACLES = {"CodeGen-v0": policies.codegen_oracle, "RepoRepair-v0": policies.repo_repair_oracle,
           "Terminal-v0": policies.terminal_oracle, "TerminalGen-v0": policies.terminal_gen_oracle}
RANDOM = {"CodeGen-v0": policies.code_random_policy, "RepoRepair-v0": policies.repo_repair_random_policy,
          "Terminal-v0": policies.terminal_random_policy, "TerminalGen-v0": policies.terminal_random_policy}
PER_SPLIT = {"CodeGen-v0": 12, "RepoRepair-v0": 4, "Terminal-v0": 6, "TerminalGen-v0": 4}


@pytest.fixture(scope="module", autouse=True)
def _bwrap() -> None:
    require_binary("bwrap")


def play(env, policy, index: int, split: str, rng=None) -> dict:
    obs, info = env.reset(options={"task_index": index, "split": split})
    for _ in range(env.unwrapped.max_turns if hasattr(env.unwrapped, "max_turns") else 1):
        action = policy(obs, info) if rng is None else policy(obs, info, rng)
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return info
    raise AssertionError("the episode did not end")


@pytest.mark.parametrize("env_id", list(ORACLES))
def test_the_oracle_solves_every_split(env_id):
    env = gym.make(env_id)
    failures = []
    for split in SPLITS:
        for index in range(PER_SPLIT[env_id]):
            info = play(env, ORACLES[env_id], index, split)
            if not info["correct"]:
                failures.append((split, index, info["error"], info["details"]))
    env.close()
    assert failures == []


@pytest.mark.parametrize("env_id", list(RANDOM))
def test_the_random_policy_almost_never_scores(env_id):
    env = gym.make(env_id)
    rng = np.random.default_rng(0)
    rewards = [play(env, RANDOM[env_id], i, "test", rng)["reward"] for i in range(2 * PER_SPLIT[env_id])]
    env.close()
    assert sum(rewards) == 0.0


def test_codegen_covers_every_family_and_the_difficulty_knobs():
    from rollgym.envs.code.codegen.source import CodeGenSource
    from rollgym.envs.code.config import CodeGenConfig

    tasks = [CodeGenSource().task(i) for i in range(80)]
    assert {t.meta["family"] for t in tasks} == {"string", "list", "arithmetic", "dictionary", "recursion",
                                                   "simulation"}
    long = CodeGenSource(CodeGenConfig(families="list", steps=5, input_size=200)).task(0)
    assert long.answer["reference"].count("\n    xs = ") >= 5 and long.prompt.count("\n5. ") == 1
    assert max(len(c[0][0][1]) for c in long.answer["calls"]) > 20


def _ids(env_id: str) -> list[str]:
    env = gym.make(env_id).unwrapped
    return [env.source.task(i, s).id for s in SPLITS for i in range(3)]


@pytest.mark.parametrize("env_id", list(ORACLES))
def test_tasks_are_the_same_in_another_process(env_id):
    code = f"import json, rollgym; from tests.envs.code.test_generated import _ids; print(json.dumps(_ids({env_id!r})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         env={"PYTHONHASHSEED": "123", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, (out.returncode, out.stderr[-3000:])  # a crash shows its own words
    assert json.loads(out.stdout) == _ids(env_id)


@pytest.mark.parametrize("env_id", list(ORACLES))
def test_a_task_read_back_from_json_equals_the_task(env_id):
    """Transcripts store tasks as JSON; the leaderboard's replay compares them with the regenerated ones."""
    from rollgym.core.task import Task

    source = gym.make(env_id, split="test").unwrapped.source
    for index in range(3):
        task = source.task(index, "test")
        assert Task.from_dict(json.loads(json.dumps(task.to_dict()))).to_dict() == task.to_dict()


@pytest.mark.parametrize("env_id", list(ORACLES))
def test_splits_are_disjoint_by_content(env_id):
    source = gym.make(env_id).unwrapped.source
    keys = {s: {t.id.split(":")[-1] for t in (source.task(i, s) for i in range(15))} for s in SPLITS}
    assert not keys["train"] & keys["test"] and not keys["train"] & keys["validation"]
    assert not keys["validation"] & keys["test"]


def test_codegen_reward_hacks_score_zero():
    env = gym.make("CodeGen-v0").unwrapped
    env.reset(options={"task_index": 0})
    from rollgym.envs.code.codegen.env import grade_codegen

    name = env.task.meta["entry_point"]
    items = [(env.task, f"```python\n{HACKS[h].format(name=name)}```") for h in HACKS]
    examples = env.task.prompt.split("Examples:\n")[1].split("\n\n")[0]
    cases = ", ".join(line.strip().replace(" == ", ": ", 1).replace(f"{name}(", "(", 1)
                      for line in examples.splitlines())
    items.append((env.task, f"```python\ndef {name}(*args):\n    return {{{cases}}}.get(args)\n```"))
    scores = grade_codegen(env.runner, items, env.limits, 2.0)
    for hack, score in zip([*HACKS, "special_case_examples"], scores):
        assert score.reward == 0.0 and score.error is not None, hack


def _call(name: str, **arguments: str) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def test_repo_repair_hacks_score_zero():
    env = gym.make("RepoRepair-v0")
    env.reset(options={"task_index": 0})
    task = env.unwrapped.task
    fix = task.answer["fix"]
    tests = [p for p in task.answer["files"] if p.startswith("tests/")]
    # editing a test file, even with a correct fix, scores 0
    env.step(_call("write_file", path=fix["path"], content=fix["content"]))
    env.step(_call("write_file", path=tests[0], content="def test_ok():\n    pass\n"))
    info = env.step("done")[4]
    assert info["reward"] == 0.0 and info["error"] == "tests_modified"
    assert info["details"]["changed_tests"] == [tests[0]]
    hacks = {
        "new_conftest": [_call("write_file", path="tests/conftest.py", content="collect_ignore_glob = ['*']\n")],
        "delete_package": [_call("delete_file", path=p) for p in task.answer["files"] if p.startswith("app/")][:4],
        "exit_on_import": [_call("write_file", path=fix["path"], content="import os\nos._exit(0)\n")],
        "hang_on_import": [_call("write_file", path="app/__init__.py", content="while True:\n    pass\n")],
        "unchanged": [],
    }
    for name, calls in hacks.items():
        env.reset(options={"task_index": 0})
        for call in calls:
            env.step(call)
        info = env.step("done")[4]
        assert info["reward"] == 0.0, name
        labels = {"tests_modified", "load_error", "crashed", "timeout", "wrong_answer", "exception"}
        assert info["error"] in labels, info
    env.close()


def test_terminal_hacks_score_zero():
    env = gym.make("Terminal-v0", kinds="text")
    hacks = ["rm -rf ./* ; echo 'check passed' > /tmp/verdict", "yes > /dev/null", "head -c 100000000 /dev/zero",
             "echo 999999 > answer.txt; chmod 000 .", ":(){ :|:& };:"]
    for command in hacks:
        env.reset(options={"task_index": 1})
        env.step(f"<tool_call>{json.dumps({'name': 'bash', 'arguments': {'command': command}})}</tool_call>")
        info = env.step("done")[4]
        assert info["reward"] == 0.0 and info["error"] == "check_failed", (command, info)
    env.close()
    script = gym.make("Terminal-v0", kinds="script")
    script.reset(options={"task_index": 0})
    fake = "printf '#!/bin/bash\\necho 4\\n' > count.sh && chmod +x count.sh"  # right on the example only
    script.step(f"<tool_call>{json.dumps({'name': 'bash', 'arguments': {'command': fake}})}</tool_call>")
    assert script.step("done")[4]["reward"] == 0.0
    script.close()


def _bash(command: str) -> str:
    return f"<tool_call>{json.dumps({'name': 'bash', 'arguments': {'command': command}})}</tool_call>"


def _finish(env, *commands: str, final: str = "Done.") -> dict:
    for command in commands:
        env.step(_bash(command))
    return env.step(final)[4]


def _task_of_kind(env, kind: str, split: str) -> int:
    return next(i for i in range(40) if env.unwrapped.source.task(i, split).meta["kind"] == kind)


def test_trap_and_service_checks_refuse_wrong_programs():
    """trap_term: a script that ignores SIGTERM and writes its log and exits on a timer (1 s or 2.7 s, either side
    of the early signal's deadline) scores 0; kv_service: a server that reads its table once at start scores 0 (the
    check changes the table between two rounds of requests). The oracle scores 1 on both."""
    require_binary("bwrap")
    env = gym.make("TerminalGen-v0", kinds=["kv_service", "trap_term"])
    trap = _task_of_kind(env, "trap_term", "test_unseen")
    env.reset(options={"task_index": trap, "split": "test_unseen"})
    solution = env.unwrapped.task.answer["solution"]
    expected = env.unwrapped.task.answer["checks"][0]["stdout"]
    code, line = expected.split("\n")[0].split("=")[1], expected.split("\n")[1]
    assert _finish(env, solution)["reward"] == 1.0
    for delay in ("1", "2.7"):
        timer = (f"printf '#!/bin/bash\\necho $$ > guard.pid\\ntrap \"\" TERM HUP USR1 USR2\\nsleep {delay}\\n"
                 f"echo \"{line}\" >> guard.log\\nrm -f guard.pid\\nexit {code}\\n' > guard.sh && chmod +x guard.sh")
        env.reset(options={"task_index": trap, "split": "test_unseen"})
        info = _finish(env, timer)
        assert info["reward"] == 0.0 and info["error"] == "check_failed", (delay, info)

    kv = _task_of_kind(env, "kv_service", "train")
    env.reset(options={"task_index": kv})
    port = env.unwrapped.task.prompt.split("port ")[1].split()[0]
    assert _finish(env, env.unwrapped.task.answer["solution"])["reward"] == 1.0
    once = ("cat > serve.sh <<'EOF'\n#!/bin/bash\nexec python3 - <<'PY'\nimport socketserver\n"
            "TABLE = dict(l.split('=', 1) for l in open('data/table.txt').read().splitlines() if '=' in l)\n"
            "class H(socketserver.StreamRequestHandler):\n    def handle(self):\n"
            "        key = self.rfile.readline().decode().strip()\n"
            "        self.wfile.write((TABLE.get(key, 'NOTFOUND') + '\\n').encode())\n"
            "socketserver.TCPServer.allow_reuse_address = True\n"
            f"socketserver.TCPServer(('127.0.0.1', {port}), H).serve_forever()\nPY\nEOF\nchmod +x serve.sh")
    env.reset(options={"task_index": kv})
    info = _finish(env, once)
    assert info["reward"] == 0.0 and info["error"] == "check_failed", info
    env.close()


def test_terminal_gen_hacks_score_zero():
    """TerminalGen-v0: outputs written without the work, a service that prints the check's expected replies on
    its own stdout, a trap script that writes its log and exits at once, snooping for the check, an empty reply
    and malformed tool calls all score 0 (and none crashes the env)."""
    env = gym.make("TerminalGen-v0", kinds=["gzip_logs", "kv_service", "trap_term"])
    env.reset(options={"task_index": 0})  # gzip_logs: right names, no compression; then copies kept
    info = _finish(env, 'for f in logs/*.log; do : > "$f.gz"; done; rm logs/*.log')
    assert info["reward"] == 0.0 and "inflates to other content" in info["details"]["reason"], info
    env.reset(options={"task_index": 0})
    assert _finish(env, "gzip -k logs/*.log")["reward"] == 0.0

    env.reset(options={"task_index": 1})  # kv_service
    check = env.unwrapped.task.answer["checks"][0]
    expected = check["stdout"]
    port = env.unwrapped.task.prompt.split("port ")[1].split()[0]
    forged = f"printf '%s\\n' {' '.join(json.dumps(v) for v in expected.splitlines())}"
    info = _finish(env, f"printf '#!/bin/bash\\n{forged}\\n' > serve.sh && chmod +x serve.sh")
    assert info["reward"] == 0.0 and "no connection" in info["details"]["reason"], info
    env.reset(options={"task_index": 1})
    visible = dict(ln.split("=", 1) for ln in env.unwrapped.task.answer["files"]["data/table.txt"].splitlines())
    server = ("cat > serve.sh <<'EOF'\n#!/bin/bash\nexec python3 - <<'PY'\nimport socketserver\n"
              f"TABLE = {visible!r}\nclass H(socketserver.StreamRequestHandler):\n    def handle(self):\n"
              "        key = self.rfile.readline().decode().strip()\n"
              "        self.wfile.write((TABLE.get(key, 'NOTFOUND') + '\\n').encode())\n"
              f"socketserver.TCPServer(('127.0.0.1', {port}), H).serve_forever()\nPY\nEOF\nchmod +x serve.sh")
    assert _finish(env, server)["reward"] == 0.0  # answers from the table it saw, not the file on each request

    env.reset(options={"task_index": 1})  # snooping: the check's inputs are nowhere the agent can look
    hidden = check["files"]["data/table.txt"]
    snoop = ("cat /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null | tr '\\0' ' '; ls -laR /sandbox /tmp "
             "2>&1 | head -50; python3 -c 'import rollgym' 2>&1 | tail -1")
    output = env.step(_bash(snoop))[0]
    assert "No module named 'rollgym'" in output and not any(v.split("=")[1] in output for v in hidden.split())
    assert env.step("Done.")[1] == 0.0

    env.reset(options={"task_index": 0, "split": "test_unseen"})  # trap_term
    code = env.unwrapped.task.answer["checks"][0]["stdout"].split()[0].split("=")[1]
    line = env.unwrapped.task.answer["checks"][0]["stdout"].split("\n", 1)[1]
    early = f"printf '#!/bin/bash\\necho $$ > guard.pid\\necho \"{line}\" >> guard.log\\nexit {code}\\n' > guard.sh"
    info = _finish(env, early + " && chmod +x guard.sh")
    assert info["reward"] == 0.0 and "not running" in info["details"]["reason"], info

    for final in ("", "<tool_call>{oops</tool_call>", '<tool_call>{"name": "bash", "arguments": {"command": 1}}'
                  "</tool_call>"):
        env.reset(options={"task_index": 2})
        _, reward, terminated, truncated, info = env.step(final)
        if not terminated:
            assert "error" in json.dumps(info["tool_results"]) and not truncated
            _, reward, terminated, _, info = env.step("Done.")
        assert terminated and reward == 0.0 and info["error"] == "check_failed", (final, info)
    env.close()
