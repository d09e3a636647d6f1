"""No process outlives its owner: every command and agent exits by itself and leaves nothing behind.

Each case runs in ``tests/lifetime_harness.py``, which adopts every process the command
leaves behind (Linux child subreaper), so a forgotten Stockfish, Chromium, sandbox, model
server or worker shows up by name even when it detached itself. A case fails when the
command does not exit within its timeout (a hang at exit, like a cached engine whose thread
keeps the interpreter alive) or when anything it started is still running after it exited.

The timeouts catch hangs; they are not performance limits.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

import rollgym
from tests.conftest import CHANCE_IDS, REPO, SHARED_DATA, require_binary, require_module

HARNESS = Path(__file__).resolve().parent / "lifetime_harness.py"
ROLLGYM = [sys.executable, "-m", "rollgym"]
EVAL_TIMEOUT = 240  # a hang detector, generous for a loaded machine (the slowest id takes ~15 s alone)

if not sys.platform.startswith("linux"):
    pytest.skip("the harness uses Linux's child subreaper", allow_module_level=True)


def run_owned(command: list[str], *, timeout: float = 120, stdin: str = "", interrupt_on: str | None = None,
              cwd: Path | None = None, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``command`` under the harness and return its report (returncode, timed_out, leftovers, output)."""
    handle, name = tempfile.mkstemp(suffix=".json", prefix="rollgym-lifetime-")
    os.close(handle)
    report = Path(name)
    args = [sys.executable, str(HARNESS), str(report), str(timeout)]
    if interrupt_on:
        args += ["--interrupt-on", interrupt_on]
    base = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    if SHARED_DATA.is_dir():
        base.setdefault("ROLLGYM_DATA_DIR", str(SHARED_DATA))
    subprocess.run([*args, "--", *command], input=stdin, text=True, timeout=timeout + 60, cwd=cwd,
                   env={**base, **(env or {})}, check=True)
    try:
        return json.loads(report.read_text())  # type: ignore[no-any-return]
    finally:
        report.unlink(missing_ok=True)


def assert_exited_cleanly(report: dict[str, Any], *, returncode: int | None = 0) -> None:
    assert not report["timed_out"], f"did not exit by itself:\n{report['output']}"
    assert not report["leftovers"], f"left running after exit: {report['leftovers']}\n{report['output']}"
    if returncode is not None:
        assert report["returncode"] == returncode, report["output"]


def _needs(env_id: str) -> None:
    """Skip (fail in CI) when an id's family needs what this machine lacks."""
    family = rollgym.env_info(env_id).family
    if family == "web":
        require_module("playwright")
        require_binary("chromium", "/usr/lib/chromium/chromium", "/usr/bin/chromium")
    elif family == "math":
        require_module("math_verify")
        if not (SHARED_DATA / "math500.jsonl").exists():
            pytest.skip("evaluation data not found; set ROLLGYM_DATA_DIR")
    elif family == "code":
        require_binary("bwrap")
        if env_id.startswith("HumanEval") and not (SHARED_DATA / "humaneval.jsonl").exists():
            pytest.skip("HumanEval data not found; set ROLLGYM_DATA_DIR")
    elif family == "search":
        require_module("bm25s")
    elif env_id.startswith("Chess"):
        require_module("chess")
        require_binary("stockfish", "/usr/games/stockfish")
    elif family == "worldmodel":
        require_module("torch")


def _ids_to_check() -> list[str]:
    """Every id with ROLLGYM_LIFETIME_ALL_IDS=1; else one per env class (what it starts and closes), its newest.

    Ids of one class share the code that opens and closes engines, browsers, sandboxes and servers; the
    full sweep (68 ids, about three minutes on two cores) is for a release check, not every CI run.
    """
    # rollgym's own ids only: other test modules in this process register toy envs that a
    # `rollgym eval` subprocess cannot see
    infos = [info for info in rollgym.list_envs() if info.entry_point.startswith("rollgym.envs.")]
    if os.environ.get("ROLLGYM_LIFETIME_ALL_IDS", "") in {"1", "true", "yes"}:
        return [info.id for info in infos]
    newest: dict[str, str] = {}
    for info in sorted(infos, key=lambda i: (i.id.rsplit("-v", 1)[-1].zfill(4), i.id)):
        newest[info.entry_point] = info.id  # the last one sorted by version wins
    return sorted(newest.values())


IDS = _ids_to_check()


@pytest.mark.slow
@pytest.mark.parametrize("env_id", IDS)
def test_eval_with_the_reference_agent_exits_by_itself(env_id: str) -> None:
    _needs(env_id)
    agent = "oracle" if rollgym.env_info(env_id).oracle else "random"
    report = run_owned([*ROLLGYM, "eval", env_id, "--agent", agent, "--n", "1", "--group-size", "1", "--json"],
                       timeout=EVAL_TIMEOUT)
    assert_exited_cleanly(report)
    summary = json.loads(report["output"].strip().splitlines()[-1])
    assert summary["episodes"] == 1 and summary["failures"] == 0, summary
    if agent == "oracle" and env_id not in CHANCE_IDS:  # the best play can lose one hand of a chance game
        assert summary["correct"] == 1, f"the oracle failed {env_id}: {summary}"


def test_the_plain_command_lines_exit(tmp_path: Path) -> None:
    for command in (["list"], ["--version"], ["eval", "Countdown-v0", "--agent", "random", "--n", "3"],
                    ["demo", "--n", "1", "--group-size", "1", "--no-leaderboard"]):
        assert_exited_cleanly(run_owned([*ROLLGYM, *command], cwd=tmp_path))


def test_play_exits_after_the_episode_and_when_input_runs_out(tmp_path: Path) -> None:
    report = run_owned([*ROLLGYM, "play", "Countdown-v0", "--seed", "0"], stdin="<answer>1 + 2</answer>\n",
                       cwd=tmp_path)
    assert_exited_cleanly(report)
    assert "Hint" not in report["output"]  # a well-formed wrong answer needs no format hint
    report = run_owned([*ROLLGYM, "play", "ConnectFour-v0", "--seed", "0"], stdin="", cwd=tmp_path)
    assert_exited_cleanly(report, returncode=1)  # no input: the episode ends without a result


@pytest.mark.slow
def test_chess_with_stockfish_exits_from_the_cli_and_from_scripts(tmp_path: Path) -> None:
    require_module("chess")
    require_binary("stockfish", "/usr/games/stockfish")
    report = run_owned([*ROLLGYM, "play", "Chess-v1", "--seed", "0", "--env-arg", "opponent=stockfish-skill-0"],
                       stdin="Final Answer: e4\n", cwd=tmp_path)
    assert_exited_cleanly(report, returncode=1)
    # The cached oracle (a Stockfish process kept for the whole process) and a bot nobody closes.
    script = (
        "import gymnasium as gym, rollgym\n"
        "from rollgym.agents import OracleAgent\n"
        "from rollgym.agents.game_bots import BotAgent\n"
        "env = gym.make('Chess-v1')\n"
        "obs, info = env.reset(seed=0)\n"
        "print(OracleAgent().act(obs, info))\n"
        "print(BotAgent('stockfish-skill-1').act(obs, info))\n"
    )
    report = run_owned([sys.executable, "-c", script], cwd=tmp_path)
    assert_exited_cleanly(report)
    assert report["output"].count("Final Answer:") == 2
    report = run_owned([*ROLLGYM, "rate", "--game", "chess", "--bots", "random,stockfish-skill-0", "--games", "1",
                        "--game-arg", "max_plies=20"], cwd=tmp_path)
    assert_exited_cleanly(report)


@pytest.mark.slow
def test_a_web_env_left_open_closes_its_browser_at_exit(tmp_path: Path) -> None:
    require_module("playwright")
    require_binary("chromium", "/usr/lib/chromium/chromium", "/usr/bin/chromium")
    script = (
        "import gymnasium as gym, rollgym\n"
        "env = gym.make('WebShop-v2')\n"
        "obs, info = env.reset(seed=0)\n"
        "print(obs.splitlines()[0])\n"  # no env.close(): the runtime must still end Chromium
    )
    assert_exited_cleanly(run_owned([sys.executable, "-c", script], cwd=tmp_path))
    report = run_owned([*ROLLGYM, "web", "screenshot", "shop", "--out", str(tmp_path / "shots")], cwd=tmp_path,
                       timeout=180)
    assert_exited_cleanly(report)


@pytest.mark.slow
def test_sandbox_and_verifier_pools_left_open_end_at_exit(tmp_path: Path) -> None:
    require_binary("bwrap")
    script = (
        "from rollgym.sandbox import Job, Limits, Sandbox\n"
        "box = Sandbox(Limits(wall_s=5), pool_size=2)\n"  # never closed
        "print(box.run(Job.python('print(6 * 7)')).stdout.strip())\n"
    )
    report = run_owned([sys.executable, "-c", script], cwd=tmp_path)
    assert_exited_cleanly(report)
    assert "42" in report["output"]
    require_module("math_verify")
    script = (
        "from rollgym.verifiers.math import verify_math\n"
        "print(verify_math('\\\\boxed{1/2}', '0.5'))\n"
    )
    assert_exited_cleanly(run_owned([sys.executable, "-c", script], cwd=tmp_path))


@pytest.mark.slow
@pytest.mark.parametrize("command, ready", [
    (["serve-env", "Countdown-v0", "--port", "0"], r'"event": "ready"'),
    (["web", "serve", "shop", "--port", "0"], r"Serving the shop site"),
    (["leaderboard", "serve", "--port", "0", "--db", "sqlite:///lb.db", "--data-dir", "lb-data"], r"leaderboard on"),
])
def test_servers_stop_on_ctrl_c_and_leave_nothing_behind(command: list[str], ready: str, tmp_path: Path) -> None:
    require_module("uvicorn")
    report = run_owned([*ROLLGYM, *command], interrupt_on=ready, cwd=tmp_path, timeout=120)
    assert report["interrupted"], f"the server never said it was ready:\n{report['output']}"
    assert_exited_cleanly(report, returncode=None)


@pytest.mark.slow
def test_a_language_model_agent_and_its_server_exit(tmp_path: Path, tiny_model_dir: Path) -> None:
    report = run_owned([*ROLLGYM, "eval", "Countdown-v0", "--model", str(tiny_model_dir), "--n", "2",
                        "--group-size", "2", "--max-tokens", "8"], cwd=tmp_path, timeout=300)
    assert_exited_cleanly(report)
    report = run_owned([*ROLLGYM, "serve-model", str(tiny_model_dir), "--port", "0"], interrupt_on=r"Serving ",
                       cwd=tmp_path, timeout=300)
    assert report["interrupted"], report["output"]
    assert_exited_cleanly(report, returncode=None)


def test_the_harness_sees_a_detached_leftover_and_a_hang(tmp_path: Path) -> None:
    """The checks above can fail: a process that outlives its parent, and a thread that never ends."""
    leaver = ("import subprocess, sys\n"
              "subprocess.Popen(['sleep', '60'], start_new_session=True)\n")  # detached, like a daemon
    report = run_owned([sys.executable, "-c", leaver], cwd=tmp_path, timeout=30)
    assert not report["timed_out"] and report["leftovers"] == ["sleep 60"]
    hanger = "import threading, time\nthreading.Thread(target=time.sleep, args=(600,)).start()\n"
    report = run_owned([sys.executable, "-c", hanger], cwd=tmp_path, timeout=3)
    assert report["timed_out"]
