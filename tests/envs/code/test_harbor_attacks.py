"""Harbor tasks cannot grade themselves: the agent's leftovers (a read-only reward file, a module or a test.sh in
the tests folder, a ``usercustomize.py`` under HOME, a ``conftest.py`` above the tests) never reach ``test.sh``, which
runs on pristine tests in a folder the grader made, with a fresh HOME and reward folder. Each attack scored 1.0 with
no work before; each scores 0 now, and the oracle still scores 1."""

from __future__ import annotations

import json

import pytest

from rollgym.envs.code.harbor.env import HarborEnv
from rollgym.envs.code.harbor.taskdir import read_task
from tests.conftest import require_binary

pytestmark = pytest.mark.timeout(300)

CHECK_PY = """import json, sys
with open("/app/out/total.txt") as handle:
    sys.exit(0 if json.loads(handle.read()) == 12 else 1)
"""
TEST_SH = """#!/bin/bash
mkdir -p /logs/verifier
cd /app
if {python} /tests/check.py; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""
PYTEST_SH = """#!/bin/bash
mkdir -p /logs/verifier
cd /app
if python3 -m pytest -q -p no:cacheprovider /tests/test_outputs.py; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""
TEST_OUTPUTS = """def test_total():
    assert open("/app/out/total.txt").read().strip() == "12"
"""
SOLVE = "#!/bin/bash\nmkdir -p /app/out\nawk '{s+=$1} END {print s}' /app/numbers.txt > /app/out/total.txt\n"


def _task(folder, test_sh: str, tests: dict[str, str]):
    for sub in ("environment", "tests", "solution"):
        (folder / sub).mkdir(parents=True)
    (folder / "task.toml").write_text('version = "1.0"\n')
    (folder / "instruction.md").write_text("Sum the numbers in /app/numbers.txt into /app/out/total.txt.\n")
    (folder / "environment" / "Dockerfile").write_text("FROM ubuntu:24.04\nWORKDIR /app\nCOPY numbers.txt .\n")
    (folder / "environment" / "numbers.txt").write_text("3\n4\n5\n")
    (folder / "tests" / "test.sh").write_text(test_sh)
    for name, text in tests.items():
        (folder / "tests" / name).write_text(text)
    (folder / "solution" / "solve.sh").write_text(SOLVE)
    return folder


def _play(env: HarborEnv, command: str | None) -> dict:
    env.reset(options={"task_index": 0})
    if command is not None:
        env.step(f"<tool_call>{json.dumps({'name': 'bash', 'arguments': {'command': command}})}</tool_call>")
    return env.step("Done.")[4]


# The agent's folder is /sandbox/work; before the fix the grader wrote the tests to .harbor/tests and the
# reward to .harbor/logs/verifier below it, ran test.sh there with HOME=/sandbox/work.
READ_ONLY_REWARD = ("mkdir -p .harbor/logs/verifier && echo 1 > .harbor/logs/verifier/reward.txt && "
                    "chmod 444 .harbor/logs/verifier/reward.txt && chmod 555 .harbor/logs/verifier .harbor/logs")
SHADOW_MODULE = "mkdir -p .harbor/tests && printf 'import os\\nos._exit(0)\\n' > .harbor/tests/json.py"
USER_SITE = ("d=$(/usr/bin/python3 -c 'import site; print(site.getusersitepackages())') && mkdir -p $d && "
             "printf 'import os\\nos._exit(0)\\n' > $d/usercustomize.py")
USER_SITE_OTHERS = ("d=$(/usr/bin/python3 -c 'import site; print(site.getusersitepackages())') && mkdir -p $d && "
                    "printf 'import os\\nos._exit(0)\\n' > $d/sitecustomize.py && "
                    "printf 'import os; os._exit(0)\\n' > $d/zz.pth")
READ_ONLY_TESTS = ("mkdir -p .harbor/tests && printf '#!/bin/bash\\nmkdir -p /sandbox/work/.harbor/logs/verifier\\n"
                   "echo 1 > /sandbox/work/.harbor/logs/verifier/reward.txt\\n' > .harbor/tests/test.sh && "
                   "chmod 555 .harbor/tests .harbor")
LINKED_TESTS = ("mkdir -p mine .harbor && printf '#!/bin/bash\\nmkdir -p /sandbox/work/.harbor/logs/verifier\\n"
                "echo 1 > /sandbox/work/.harbor/logs/verifier/reward.txt\\n' > mine/test.sh && "
                "ln -s ../mine .harbor/tests")
CONFTEST = ("printf 'import pytest\\n@pytest.hookimpl(hookwrapper=True)\\ndef pytest_runtest_makereport(item, call):\\n"
            "    outcome = yield\\n    outcome.get_result().outcome = \"passed\"\\n' > conftest.py && "
            "printf '[pytest]\\n' > pytest.ini && cp conftest.py pytest.ini /tmp/ && "
            "mkdir -p .harbor && cp conftest.py pytest.ini .harbor/")


@pytest.mark.parametrize("name, python, attack", [
    ("read_only_reward", "python3", READ_ONLY_REWARD),
    ("shadow_module_in_tests", "python3", SHADOW_MODULE),
    ("usercustomize_in_home", "/usr/bin/python3", USER_SITE),
    ("sitecustomize_and_pth_in_home", "/usr/bin/python3", USER_SITE_OTHERS),
    ("read_only_tests_folder", "python3", READ_ONLY_TESTS),
    ("tests_folder_is_a_link", "python3", LINKED_TESTS),
])
def test_an_agent_cannot_grade_its_own_harbor_task(tmp_path, name, python, attack):
    require_binary("bwrap")
    if python.startswith("/") and not require_python(python):
        pytest.skip(f"{python} is not installed")
    env = HarborEnv(path=_task(tmp_path / name, TEST_SH.format(python=python), {"check.py": CHECK_PY}))
    try:
        assert _play(env, read_task(tmp_path / name).solution)["reward"] == 1.0
        info = _play(env, attack)
        assert info["reward"] == 0.0 and not info["correct"], (name, info)
    finally:
        env.close()


def test_a_conftest_above_the_tests_cannot_pass_them(tmp_path):
    """pytest reads conftest.py and pytest.ini from the tests' folder and its parents: none of them is the
    agent's (the tests live outside the working folder, in a /tmp emptied before grading)."""
    require_binary("bwrap")
    env = HarborEnv(path=_task(tmp_path / "pytest", PYTEST_SH, {"test_outputs.py": TEST_OUTPUTS}))
    try:
        assert _play(env, read_task(tmp_path / "pytest").solution)["reward"] == 1.0
        assert _play(env, None)["reward"] == 0.0
        info = _play(env, CONFTEST)
        assert info["reward"] == 0.0, info
    finally:
        env.close()


def require_python(path: str) -> bool:
    import os

    return os.access(path, os.X_OK)


def test_a_grading_area_that_cannot_be_made_is_a_grading_error_never_the_agents_files(tmp_path):
    """A working folder the grader cannot write (the agent made it read-only, its own test.sh waiting in
    .harbor/tests) scores 0 with one label; nothing of the agent's runs."""
    require_binary("bwrap")
    env = HarborEnv(path=_task(tmp_path / "locked", TEST_SH.format(python="python3"), {"check.py": CHECK_PY}))
    try:
        info = _play(env, f"{READ_ONLY_TESTS} && chmod 555 /sandbox/work")
        assert info["reward"] == 0.0 and info["error"] == "grading_error", info
    finally:
        env.close()
