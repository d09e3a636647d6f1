"""Harbor's task format: export TerminalGen-v0 and Terminal-v0 tasks, import them back, the oracle passes and wrong
answers fail in rollgym's sandbox; a hand-written Harbor task plays too; malformed task dirs are one sentence."""

from __future__ import annotations

import json
import os

import pytest

from rollgym.core.errors import ConfigError
from rollgym.envs.code.harbor.env import HarborEnv, harbor_oracle
from rollgym.envs.code.harbor.export import export_harbor
from rollgym.envs.code.harbor.taskdir import read_task
from rollgym.envs.code.terminal_gen.source import TerminalGenSource
from tests.conftest import require_binary

pytestmark = pytest.mark.timeout(900)


def _play(env: HarborEnv, index: int, commands: str | None) -> dict:
    env.reset(options={"task_index": index})
    if commands is not None:
        call = {"name": "bash", "arguments": {"command": commands}}
        env.step(f"<tool_call>{json.dumps(call)}</tool_call>")
    return env.step("Done.")[4]


def test_terminal_gen_tasks_round_trip_through_harbor_directories(tmp_path):
    """Seven held-out tasks (one per category: files to a TCP service) and three seen ones: exported, read back
    and played, the oracle's solve.sh passes, the task's wrong solution and doing nothing fail."""
    require_binary("bwrap")
    written = export_harbor("TerminalGen-v0", "test_unseen", tmp_path / "unseen", limit=7)
    written += export_harbor("TerminalGen-v0", "train", tmp_path / "seen", limit=3)
    specs = [TerminalGenSource().spec(i, "test_unseen") for i in range(7)] + [
        TerminalGenSource().spec(i, "train") for i in range(3)]
    for folder in written:
        assert sorted(os.listdir(folder)) == ["environment", "instruction.md", "solution", "task.toml", "tests"]
        assert os.access(folder / "tests" / "test.sh", os.X_OK) and "/logs/verifier/reward.txt" in (
            folder / "tests" / "test.sh").read_text()
    for root, count, offset in ((tmp_path / "unseen", 7, 0), (tmp_path / "seen", 3, 7)):
        env = HarborEnv(path=root)
        for index in range(count):
            spec = specs[offset + index]
            observation, info = env.reset(options={"task_index": index})
            assert spec["instruction"][:40] in observation and ".harbor" not in observation
            info = env.step(harbor_oracle(observation, info))[4]
            info = env.step(harbor_oracle("", info))[4]
            assert info["reward"] == 1.0, (spec["kind"], info)
            assert _play(env, index, spec["wrong"])["reward"] == 0.0, spec["kind"]
            assert _play(env, index, None)["reward"] == 0.0, spec["kind"]
        env.close()


def test_terminal_v0_tasks_round_trip(tmp_path):
    require_binary("bwrap")
    export_harbor("Terminal-v0", "test", tmp_path, limit=5)
    env = HarborEnv(path=tmp_path)
    kinds = set()
    for index in range(5):
        harbor = read_task(env.source.tasks[index].path)
        kinds.add(json.loads(harbor.tests["checks.json"])[0]["type"])
        assert _play(env, index, harbor.solution)["reward"] == 1.0
        assert _play(env, index, "echo 41 > answer.txt; rm -rf archive docs")["reward"] == 0.0
    env.close()


TASK_TOML = 'version = "1.0"\n\n[metadata]\ndifficulty = "easy"\n\n[verifier]\ntimeout_sec = 60.0\n'
TEST_SH = """#!/bin/bash
mkdir -p /logs/verifier
if [ "$(cat /app/out/total.txt 2>/dev/null)" = "$(awk '{s+=$1} END {print s}' /tests/numbers.txt)" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""


def _hand_written(folder, dockerfile: str = "FROM ubuntu:24.04\nWORKDIR /app\nCOPY numbers.txt /app/numbers.txt\n"):
    (folder / "environment").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "solution").mkdir()
    (folder / "task.toml").write_text(TASK_TOML)
    (folder / "instruction.md").write_text("Sum the numbers in /app/numbers.txt into /app/out/total.txt.\n")
    (folder / "environment" / "Dockerfile").write_text(dockerfile)
    (folder / "environment" / "numbers.txt").write_text("3\n4\n5\n")
    (folder / "tests" / "numbers.txt").write_text("3\n4\n5\n")
    (folder / "tests" / "test.sh").write_text(TEST_SH)
    (folder / "solution" / "solve.sh").write_text("#!/bin/bash\nmkdir -p /app/out\n"
                                                  "awk '{s+=$1} END {print s}' /app/numbers.txt > /app/out/total.txt\n")
    return folder


def test_a_hand_written_harbor_task_plays_with_its_paths_mapped(tmp_path):
    """A task in Harbor's usual style (WORKDIR /app, /tests, /logs/verifier): its oracle passes, a wrong total
    and doing nothing fail, and the agent's instruction names the sandbox's folder."""
    require_binary("bwrap")
    env = HarborEnv(path=_hand_written(tmp_path / "sum-numbers"))
    observation, _ = env.reset(options={"task_index": 0})
    assert "/sandbox/work/numbers.txt" in observation and "/app" not in observation
    harbor = read_task(tmp_path / "sum-numbers")
    assert harbor.metadata["verifier"]["timeout_sec"] == 60.0 and harbor.files == {"numbers.txt": b"3\n4\n5\n"}
    assert _play(env, 0, harbor.solution)["reward"] == 1.0
    assert _play(env, 0, "mkdir -p out && echo 13 > out/total.txt")["reward"] == 0.0
    info = _play(env, 0, None)
    assert info["reward"] == 0.0 and info["error"] == "tests_failed"
    env.close()


def _replace_with_link(path, target: str) -> None:
    """``path`` (a file or folder of the task) replaced by a symbolic link to a host file."""
    if path.is_dir():
        import shutil

        shutil.rmtree(path)
    else:
        path.unlink()
    path.symlink_to(target)


@pytest.mark.parametrize("breakage, message", [
    (lambda d: (d / "instruction.md").unlink(), "instruction.md is missing"),
    (lambda d: (d / "tests" / "test.sh").unlink(), "tests/test.sh is missing"),
    (lambda d: (d / "task.toml").write_text("version = [1"), "task.toml is not valid TOML"),
    (lambda d: (d / "environment" / "Dockerfile").write_text("FROM ubuntu\nWORKDIR /app\nRUN apt-get install -y jq\n"),
     "needs a container image \\(Dockerfile line 3"),
    (lambda d: (d / "environment" / "Dockerfile").write_text("FROM ubuntu\nWORKDIR /app\nCOPY numbers.txt /etc/x\n"),
     "outside the working folder"),
    (lambda d: (d / "environment" / "Dockerfile").write_text("FROM ubuntu\nWORKDIR /app\nCOPY nothing.txt .\n"),
     "copies nothing.txt, which is not in environment/"),
    (lambda d: (d / "tests" / "leak").symlink_to("/etc/passwd"), "is a symbolic link"),
    (lambda d: _replace_with_link(d / "instruction.md", "/proc/self/environ"), "instruction.md is a symbolic link"),
    (lambda d: _replace_with_link(d / "solution" / "solve.sh", "/etc/passwd"), "solve.sh is a symbolic link"),
    (lambda d: _replace_with_link(d / "task.toml", "/etc/hostname"), "task.toml is a symbolic link"),
    (lambda d: _replace_with_link(d / "environment" / "Dockerfile", "/etc/hosts"), "Dockerfile is a symbolic link"),
    (lambda d: _replace_with_link(d / "tests", "/etc"), "tests is a symbolic link"),
    (lambda d: os.mkfifo(d / "solution" / "pipe"), "pipe is not a regular file or folder"),
])
def test_a_malformed_task_dir_is_one_sentence(tmp_path, breakage, message):
    folder = _hand_written(tmp_path / "task")
    breakage(folder)
    with pytest.raises(ConfigError, match=message) as caught:
        HarborEnv(path=folder)
    assert "\n" not in str(caught.value) and str(caught.value).endswith(".")


def test_the_cli_exports_imports_and_refuses_in_one_sentence(tmp_path, capsys):
    require_binary("bwrap")
    from rollgym.cli import main

    assert main(["export", "harbor", "TerminalGen-v0", "--split", "validation", "--out", str(tmp_path / "t"),
                 "--limit", "2"]) == 0
    assert main(["import", "harbor", str(tmp_path / "t")]) == 0
    assert "2 of 2 tasks passed" in capsys.readouterr().out
    assert main(["import", "harbor", str(tmp_path / "t"), "--agent", "empty"]) == 0
    assert "0 of 2 tasks passed" in capsys.readouterr().out
    assert main(["export", "harbor", "TerminalGen-v0", "--out", str(tmp_path / "t")]) == 2
    assert main(["export", "harbor", "CodeGen-v0", "--out", str(tmp_path / "u")]) == 2
    assert main(["import", "harbor", str(tmp_path / "missing")]) == 2
    errors = capsys.readouterr().err
    assert "is not empty" in errors and "Harbor export knows" in errors and "is not a folder" in errors


def _write(path: str, content: str) -> str:
    """A bash command that writes ``content`` to ``path`` (hex, so no quoting or path rewriting touches it)."""
    return (f"python3 -c \"import sys; open(sys.argv[1], 'w').write(bytes.fromhex(sys.argv[2]).decode())\" "
            f"{path} {content.encode().hex()}")


def _agent_sees_no_grading_file(folder) -> None:
    environment = {p.relative_to(folder / "environment" / "files").as_posix()
                   for p in (folder / "environment" / "files").rglob("*") if p.is_file()}
    for name in ("cases.json", "grading.json", "project.tar.gz", "check.py", "guard.py", "harness.py"):
        assert name not in {p.rsplit("/", 1)[-1] for p in environment}


def test_repo_repair_tasks_round_trip_through_harbor_directories(tmp_path):
    """RepoRepair-v0: the oracle's fix passes, the unchanged buggy repo fails, and so does a test file made to pass."""
    require_binary("bwrap")
    written = export_harbor("RepoRepair-v0", "test", tmp_path, limit=3)
    env = HarborEnv(path=tmp_path)
    for index, folder in enumerate(written):
        _agent_sees_no_grading_file(folder)
        cases = json.loads((folder / "tests" / "cases.json").read_text())
        observation, _ = env.reset(options={"task_index": index})
        assert ".harbor" not in observation and "cases.json" not in observation
        assert _play(env, index, read_task(folder).solution)["reward"] == 1.0
        assert _play(env, index, None)["reward"] == 0.0
        test_file = sorted(cases["tests"])[0]
        assert _play(env, index, _write(test_file, "def test_ok():\n    pass\n"))["reward"] == 0.0
    env.close()


def test_repo_repair_real_tasks_round_trip_and_the_guard_travels_with_them(tmp_path):
    """RepoRepairReal-v1, a seen and a held-out project: hidden test files stay out of the environment; the oracle
    passes, the unchanged mutant fails, and so does package code that patches pytest's reports (the guard plugin
    runs in the exported grading too)."""
    require_binary("bwrap")
    from tests.conftest import require_repo_real
    from tests.envs.code.test_repo_real import ATTACKS

    require_repo_real()
    written = export_harbor("RepoRepairReal-v1", "train", tmp_path / "seen", limit=1)
    written += export_harbor("RepoRepairReal-v1", "test_unseen", tmp_path / "unseen", limit=1)
    for folder in written:
        _agent_sees_no_grading_file(folder)
        grading = json.loads((folder / "tests" / "grading.json").read_text())
        hidden = {t.split("::")[0] for t in grading["failing"]}
        assert hidden and not any((folder / "environment" / "files" / h).exists() for h in hidden)
        harbor = read_task(folder)
        assert all(h not in harbor.instruction for h in hidden)
        env = HarborEnv(path=folder)
        assert _play(env, 0, harbor.solution)["reward"] == 1.0
        assert _play(env, 0, None)["reward"] == 0.0
        fix = next(p for p in harbor.files if p.endswith(".py") and p in harbor.solution)
        buggy = harbor.files[fix].decode()
        assert _play(env, 0, _write(fix, buggy + "\n" + ATTACKS["report_class_patched"]))["reward"] == 0.0
        env.close()


def test_copies_past_the_cap_are_refused_before_memory_grows(tmp_path):
    """A 1 MiB build context copied by 200 COPY lines (200 MiB of starting files, over 1 GiB in the importing
    process once encoded) is refused in one sentence, with a few MiB allocated at most."""
    import tracemalloc

    from rollgym.envs.code.harbor.env import HarborSource

    copies = "".join(f"COPY big.bin /app/copy{i}/\n" for i in range(200))
    folder = _hand_written(tmp_path / "copies", f"FROM ubuntu\nWORKDIR /app\n{copies}")
    (folder / "environment" / "big.bin").write_bytes(os.urandom(1 << 20))
    tracemalloc.start()
    try:
        with pytest.raises(ConfigError, match="copies more than 16 MiB or 2048 files") as caught:
            HarborSource(folder).task(0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "\n" not in str(caught.value) and peak < 8 << 20, peak
    few = _hand_written(tmp_path / "few", "FROM ubuntu\nWORKDIR /app\n" + "".join(copies.splitlines(True)[:10]))
    (few / "environment" / "big.bin").write_bytes(os.urandom(1 << 20))
    assert len(read_task(few).files) == 10
