"""The ``rollgym`` command, run as a real subprocess (the installed console script)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import pytest

import rollgym
from rollgym import cli
from rollgym.commands.demo import DEMO_ENVS

TOY_DIR = Path(__file__).resolve().parent / "rollout"
if str(TOY_DIR) not in sys.path:
    sys.path.insert(0, str(TOY_DIR))
ROLLGYM = Path(sys.executable).parent / "rollgym"
ADD = "rollgym_toyenv:ToyAdd-v0"
GUESS = "rollgym_toyenv:ToyGuess-v0"


def run_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TOY_DIR), env.get("PYTHONPATH", "")])
    return env


def rollgym_cmd(*args: str, stdin: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ROLLGYM), *args], input=stdin, capture_output=True, text=True, timeout=timeout, env=run_env()
    )


def assert_one_line_error(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in lines[0]


def test_console_script_is_installed_and_reports_its_version() -> None:
    assert ROLLGYM.exists(), "pip install -e . creates the rollgym console script"
    result = rollgym_cmd("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"rollgym {rollgym.__version__}"


def test_list_shows_every_env_with_its_description_by_family() -> None:
    result = rollgym_cmd("list")
    assert result.returncode == 0, result.stderr
    # Registered envs as a fresh interpreter sees them (this test process also has the toy envs).
    code = "import json, rollgym; print(json.dumps([[e.id, e.family, e.description] for e in rollgym.list_envs()]))"
    fresh = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    envs = [rollgym.EnvInfo(i, "", d, f, ()) for i, f, d in json.loads(fresh.stdout)]
    assert envs, "import rollgym registers the envs"
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in result.stdout.splitlines() if "│" in line]
    by_id = {row[1].removesuffix(" (superseded)"): row for row in rows if len(row) == 3 and row[1]}
    for info in envs:
        assert info.id in by_id, info.id
        assert by_id[info.id][2].split()[:2] == info.description.split()[:2]
    first_cells = [row[0] for row in rows if len(row) == 3 and row[0]]
    assert first_cells == list(dict.fromkeys(info.family for info in envs))  # each family once, in order


def test_eval_prints_a_summary_table() -> None:
    result = rollgym_cmd("eval", ADD, "--agent", "oracle", "--n", "5", "--group-size", "3")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for needle in (
        "ToyAdd-v0",
        "agent oracle",
        "episodes",
        "15 (5 tasks)",
        "accuracy",
        "100.0%",
        "mean reward",
        "pass@1",
        "pass@2",
        "pass@3",
        "failures",
    ):
        assert needle in out


def test_eval_json_matches_the_library_summary(tmp_path: Path) -> None:
    from rollgym.agents import RandomAgent
    from rollgym.benchmarks.metrics import summarize
    from rollgym.rollout import collect

    result = rollgym_cmd(
        "eval",
        ADD,
        "--agent",
        "random",
        "--n",
        "8",
        "--group-size",
        "2",
        "--seed",
        "3",
        "--json",
        "--out",
        str(tmp_path / "r.jsonl"),
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    expected = summarize(collect(RandomAgent(), ADD, 8, 2, seed=3), seed=3).to_dict()
    assert {k: v for k, v in data.items() if k in expected} == expected
    assert data["episodes"] == 16 and data["env_id"] == "ToyAdd-v0"


def test_eval_on_countdown_with_the_oracle_solves_everything() -> None:
    result = rollgym_cmd("eval", "Countdown-v0", "--agent", "oracle", "--n", "4", "--group-size", "2", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["accuracy"]["value"] == 1.0 and data["failures"] == 0 and data["episodes"] == 8


def test_unknown_env_id_is_one_line_and_exit_2() -> None:
    assert_one_line_error(rollgym_cmd("eval", "Countdwn-v0"), "Unknown env id", "Countdown-v0")
    assert_one_line_error(rollgym_cmd("play", "Nope-v9"), "Unknown env id")


@pytest.mark.parametrize(
    "args, needle",
    [
        (["eval", ADD, "--n", "0"], "--n"),
        (["eval", ADD, "--agent", "genius"], "--agent"),
        (["eval", ADD, "--frobnicate"], "--frobnicate"),
        (["eval", ADD, "--seed", "-1"], "--seed"),
        (["launch"], "invalid choice"),
        (["eval", ADD, "--env-arg", "crash"], "KEY=VALUE"),
        (["eval", ADD, "--env-arg", "colour=red"], "has no option 'colour'"),
        (["eval", "Countdown-v0", "--env-arg", "num_number=3"], "did you mean 'num_numbers'? Its options are"),
        (["play", "Countdown-v0", "--env-arg", "usage=sometimes"], "usage must be one of"),
        (["eval", ADD, "--split", "holdout"], "split"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(args: list[str], needle: str) -> None:
    assert_one_line_error(rollgym_cmd(*args), needle)


def test_resuming_into_a_file_of_another_run_is_one_line_and_exit_2(tmp_path: Path) -> None:
    out = str(tmp_path / "r.jsonl")
    assert rollgym_cmd("eval", ADD, "--n", "2", "--group-size", "1", "--out", out).returncode == 0
    assert_one_line_error(rollgym_cmd("eval", ADD, "--n", "2", "--group-size", "2", "--out", out), "different run")


def test_env_args_reach_the_env() -> None:
    result = rollgym_cmd("eval", ADD, "--n", "12", "--group-size", "1", "--env-arg", "crash=true", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["failures"] > 0  # crash=true makes some steps raise


def expected_answer(env_id: str, seed: int) -> str:
    from rollgym.agents import OracleAgent

    env = gym.make(env_id, split="test")
    observation, info = env.reset(seed=seed)
    return OracleAgent().act(observation, info)


def test_play_a_single_turn_env_from_stdin() -> None:
    import rollgym_toyenv  # noqa: F401

    answer = expected_answer("ToyAdd-v0", 5)
    result = rollgym_cmd("play", ADD, "--seed", "5", stdin=answer + "\n")
    assert result.returncode == 0, result.stderr
    assert "What is" in result.stdout and "Reward: 1 (correct)" in result.stdout
    wrong = rollgym_cmd("play", ADD, "--seed", "5", stdin=str(int(answer) + 1) + "\n")
    assert wrong.returncode == 0 and "Reward: 0 (not correct)" in wrong.stdout


def test_play_a_multi_turn_env_reads_one_action_per_turn() -> None:
    import rollgym_toyenv  # noqa: F401

    env = gym.make("ToyGuess-v0", split="test")
    env.reset(seed=1)
    secret = env.unwrapped.task.answer  # type: ignore[attr-defined]
    guesses = "".join(f"{g}\n" for g in range(1, 9))
    result = rollgym_cmd("play", GUESS, "--seed", "1", "--env-arg", "max_guesses=8", stdin=guesses)
    assert result.returncode == 0, result.stderr
    assert f"Reward: 1 (correct)  (completed, {secret} turn(s))" in result.stdout
    assert result.stdout.count("higher") == secret - 1


def test_play_countdown_with_a_multi_line_answer() -> None:
    answer = expected_answer("Countdown-v0", 3)
    result = rollgym_cmd("play", "Countdown-v0", "--seed", "3", stdin=f"Let me think.\\\n{answer}\n")
    assert result.returncode == 0, result.stderr
    assert "Reward: 1 (correct)" in result.stdout, result.stdout


def test_play_ends_cleanly_when_input_runs_out() -> None:
    result = rollgym_cmd("play", ADD, "--seed", "5", stdin="")
    assert result.returncode == 1 and "no more input" in result.stderr and "Traceback" not in result.stderr


def test_a_killed_eval_resumes_to_the_same_summary(tmp_path: Path) -> None:
    args = [
        "eval",
        ADD,
        "--agent",
        "random",
        "--n",
        "30",
        "--group-size",
        "2",
        "--seed",
        "4",
        "--json",
        "--env-arg",
        "delay=0.03",
    ]
    reference = rollgym_cmd(*args, "--out", str(tmp_path / "reference.jsonl"))
    assert reference.returncode == 0, reference.stderr

    out = tmp_path / "killed.jsonl"
    process = subprocess.Popen(
        [str(ROLLGYM), *args, "--out", str(out)], env=run_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        if out.exists() and out.read_bytes().count(b"\n") >= 20:
            break
        time.sleep(0.01)  # polling for the file to grow, not waiting for a fixed time
    process.kill()
    process.wait(timeout=30)
    assert process.returncode == -9, "the run finished before it could be killed"
    finished = out.read_bytes().count(b"\n") - 1
    assert 19 <= finished < 60

    resumed = rollgym_cmd(*args, "--out", str(out), "--workers", "2")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout) == json.loads(reference.stdout)
    assert out.read_bytes().count(b"\n") == 61


def test_demo_runs_oracle_and_random_on_countdown_and_sudoku() -> None:
    result = rollgym_cmd("demo", "--n", "3", "--group-size", "2", "--no-leaderboard")
    assert result.returncode == 0, result.stderr
    for env_id in DEMO_ENVS:
        assert env_id in result.stdout
    assert result.stdout.count("oracle") == 3 and result.stdout.count("random") == 3
    assert "100.0%" in result.stdout  # the oracle rows


def test_demo_runs_the_whole_loop_into_a_verified_static_leaderboard(tmp_path: Path) -> None:
    result = rollgym_cmd("demo", "--n", "2", "--group-size", "1", "--out", str(tmp_path / "demo"))
    assert result.returncode == 0, result.stderr
    assert "Bundles verified" in result.stdout
    assert (tmp_path / "demo" / "site" / "index.html").exists()


def test_demo_skips_an_unregistered_env_and_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("rollgym.commands.demo.DEMO_ENVS", ("Countdown-v0", "Missing-v0"))
    assert cli.main(["demo", "--n", "2", "--group-size", "1", "--no-leaderboard"]) == 0
    captured = capsys.readouterr()
    assert "Skipping Missing-v0" in captured.err and "Countdown-v0" in captured.out


def test_plugin_commands_are_registered_and_a_broken_one_says_why(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import rollgym.commands

    parser = cli.build_parser()
    choices = next(a for a in parser._actions if a.dest == "command").choices  # type: ignore[union-attr]
    for module in rollgym.commands.COMMAND_MODULES:
        assert module.rsplit(".", 1)[-1].replace("_", "-") in choices
    monkeypatch.setattr(rollgym.commands, "COMMAND_MODULES", ["rollgym.commands.no_such_plugin"])
    assert cli.main(["no-such-plugin"]) == 2
    assert "unavailable" in capsys.readouterr().err


def test_import_rollgym_does_not_import_rich_or_the_cli() -> None:
    code = (
        "import sys, rollgym; print(sorted(m for m in ('rich', 'rollgym.cli', 'rollgym.rollout') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.strip() == "[]"


def test_cli_is_only_the_parser_and_old_names_still_import_with_a_warning() -> None:
    import ast

    tree = ast.parse(Path(cli.__file__).read_text(encoding="utf-8"))
    functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert functions <= {"_register_commands", "_raise", "build_parser", "main"}, functions
    with pytest.warns(DeprecationWarning, match="rollgym.commands.options.parse_env_args"):
        assert cli.parse_env_args(["a=1"]) == {"a": 1}
