"""The CLI on a newcomer's first path: "did you mean", one-sentence errors, play hints, eval progress."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

ROLLGYM = [sys.executable, "-m", "rollgym"]


def run(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run([*ROLLGYM, *args], input=stdin, capture_output=True, text=True, timeout=120,
                          env=environment)


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.strip().splitlines() if not line.startswith("rollgym: warning: ")]
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize("args, expected", [
    (["eval", "Countdown-v0", "--agnt", "oracle"], "rollgym eval: error: unrecognized argument --agnt; "
                                                   "did you mean '--agent'? Run `rollgym eval --help` for usage."),
    (["eval", "Countdown-v0", "--group-sise=2"], "did you mean '--group-size'?"),
    (["evl", "Countdown-v0"], "invalid choice: 'evl'"),
    (["eval", "Countdown-v0", "--agent", "oracel"], "did you mean 'oracle'?"),
    (["bench", "run", "quick", "--agnet", "oracle", "--out", "x"], "rollgym bench run: error: unrecognized argument "
                                                                    "--agnet; did you mean '--agent'?"),
    (["eval", "Countdown-v0", "--frobnicate"], "the options are --agent, --concurrency"),
    (["eval", "Countdown-v0", "--env-arg", "num_numbrs=3"], "did you mean 'num_numbers'? Its options are"),
])
def test_mistyped_flags_choices_and_options_get_did_you_mean(args: list[str], expected: str) -> None:
    line = one_line_error(run(*args))
    assert expected in line
    if "evl" in args:
        assert "did you mean 'eval'?" in line


def test_an_old_env_version_fails_with_its_one_sentence_and_no_gymnasium_warning(tmp_path: Path) -> None:
    result = run("eval", "MATH500-v0", "--agent", "random", "--n", "2",
                 env={"ROLLGYM_DATA_DIR": str(tmp_path / "nonexistent")})
    line = one_line_error(result)
    assert "out of date" not in result.stderr and "ROLLGYM_DATA_DIR" in line and "does not exist" in line
    assert "rollgym: warning: MATH500-v0 is superseded by MATH500-v1" in result.stderr  # rollgym's own, one line


def test_play_hints_at_the_answer_tags_when_a_reply_has_none() -> None:
    result = run("play", "Countdown-v0", "--seed", "1", stdin="the answer is 3\n")
    assert result.returncode == 0, result.stderr
    assert "no_answer" in result.stdout
    assert "Hint: no answer was found: put your final answer inside <answer>...</answer> tags, as in <answer>" \
        in result.stdout
    result = run("play", "Sudoku4x4-v0", "--seed", "1", stdin="<answer>1 2</answer>\n")
    assert "Hint: expected 16 cells (4 rows of 4), found 2" in result.stdout
    result = run("play", "Countdown-v0", "--seed", "1", stdin="<answer>1 + 2</answer>\n")
    assert "Hint" not in result.stdout  # readable but wrong: nothing to fix in the format


def test_play_shows_the_rules_once() -> None:
    result = run("play", "ConnectFour-v0", "--seed", "1", stdin="4\n")
    assert result.stdout.count("players take turns dropping a stone") == 1, result.stdout
    # input ran out: the last board is not printed a second time
    assert result.stdout.count("Moves so far: 4 4 ") == 1, result.stdout


def _eval_with_a_terminal(*args: str) -> tuple[str, str]:
    """Run eval with stderr on a pseudo-terminal (as a person sees it); return (stdout, terminal text)."""
    master, slave = pty.openpty()
    process = subprocess.Popen([*ROLLGYM, "eval", *args], stdout=subprocess.PIPE, stderr=slave,
                               env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"})
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    out = process.communicate(timeout=120)[0].decode()
    os.close(master)
    return out, b"".join(chunks).decode(errors="replace")


def test_eval_shows_episodes_per_second_and_running_accuracy_on_a_terminal_only() -> None:
    out, terminal = _eval_with_a_terminal("ConnectFour-v0", "--agent", "random", "--n", "10", "--json")
    assert "episodes/s" in terminal and "accuracy " in terminal and "40/40" in terminal
    assert out.strip().startswith("{")  # stdout stays parseable
    piped = run("eval", "Countdown-v0", "--agent", "oracle", "--n", "5", "--json")
    assert piped.returncode == 0 and piped.stderr == ""  # no bar when stderr is not a terminal


def test_episode_stats_count_speed_only_for_episodes_played_now() -> None:
    from types import SimpleNamespace

    from rollgym.commands.console import EpisodeStats

    stats = EpisodeStats()
    stats.add(SimpleNamespace(usable=True, correct=True))  # found in --out
    stats.resumed_done()
    stats.add(SimpleNamespace(usable=True, correct=False))
    stats.add(SimpleNamespace(usable=False, correct=False))  # failed: counts for speed, not accuracy
    assert stats.played == 2 and stats.scored == 2 and stats.correct == 1
    assert stats.fields()["accuracy"] == "accuracy 50.0%"
