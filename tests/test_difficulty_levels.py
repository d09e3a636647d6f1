"""Every family's difficulty levels: valid, reachable through ``reset``, and ordered by a measured proxy.

"Ordered" is measured, never taken from the level names: the exact Countdown solver's search states and
the random policy's solve rate, the cells a Sudoku naked-singles pass cannot fill, a search question's
evidence articles, the oracle's tool calls in ToolWorld and ToolGen, the size of CodeGen's reference
solution and of RepoRepair's repository, and how far a world-model episode drifts from the last frame
seen. Game levels are ordered by the opponent's search budget and the Hex board (structure, checked
here); ``bench/bench_difficulty.py`` measures a reference player's win rate against them. The web
levels' ordering is measured in ``tests/envs/web/test_web_difficulty.py`` (it needs Chromium).
"""

from __future__ import annotations

import ast
import itertools
import json
import re
import statistics
from typing import Any

import numpy as np
import pytest

import rollgym
from rollgym.core.difficulty import Difficulty
from rollgym.core.errors import ConfigError
from rollgym.rollout import run_episode
from tests.conftest import require_module

#: Ids with one fixed difficulty, and why: fixed evaluation sets without level labels, the one-group ToolGen
#: ids, and Terminal-v0 (its file count scales the folder, not the work; no knob was measured to make it harder).
FIXED = {"AIME24", "AMC23", "HumanEval", "Terminal-v0", "ToolGen-Action-v0", "ToolGen-Chain-v0",
         "ToolGen-CrossApp-v0", "ToolGen-Edit-v0", "ToolGen-Lookup-v0"}
DATA_IDS = ("MATH", "AIME", "AMC", "HumanEval")
SKIP_BUILD = ("WorldModel",)  # not a TextEnv: its own tests below


def _make(env_id: str, request: pytest.FixtureRequest) -> Any:
    if env_id.startswith(DATA_IDS):
        request.getfixturevalue("shared_data")
        require_module("sympy")
    if env_id.startswith("Chess"):
        require_module("chess")
    if env_id.startswith("Search"):
        require_module("bm25s")
    split = "test" if env_id.startswith(DATA_IDS) else "train"
    return rollgym.make(env_id, split=split).unwrapped, split


def _fixed(env_id: str) -> bool:
    return any(env_id.startswith(prefix) for prefix in FIXED)


# only rollgym's own ids: other tests register toy envs of their own, which have no ladders
TEXT_IDS = [info.id for info in rollgym.list_envs()
            if info.entry_point.startswith("rollgym.envs.") and not info.id.startswith(SKIP_BUILD)]


@pytest.mark.parametrize("env_id", TEXT_IDS)
def test_every_ladder_is_valid(env_id: str, request: pytest.FixtureRequest) -> None:
    env, split = _make(env_id, request)
    try:
        ladder = env.difficulty
        if _fixed(env_id):
            assert ladder is None, f"{env_id} is listed as fixed but has levels"
            with pytest.raises(ConfigError, match="fixed difficulty"):
                env.reset(seed=0, options={"difficulty": 0})
            return
        assert isinstance(ladder, Difficulty) and len(ladder) >= 2, env_id
        assert ladder.grows, env_id
        own_env_id = env.source.task(0, split).env_id  # older scorings' tasks keep the id they always carried
        ids: dict[str, str] = {}
        for k, level in enumerate(ladder.levels):
            assert json.loads(json.dumps(level.to_dict())) == level.to_dict()  # knobs are JSON-ready
            source = env.level_source(k)
            assert env.level_source(level.name) is source  # built once, by index or name
            for index in (0, 1):
                task = source.task(index, split)
                assert task.env_id == own_env_id
                digest = json.dumps([task.prompt, task.answer, task.meta], sort_keys=True, default=repr)
                assert ids.setdefault(task.id, digest) == digest, f"{env_id}: two levels share id {task.id}"
        if ladder.default is not None:  # the default level plays the id's own tasks
            for index in (0, 3):
                own, at_level = env.source.task(index, split), env.level_source(ladder.default).task(index, split)
                assert (own.prompt, own.answer) == (at_level.prompt, at_level.answer)
                assert own.meta.items() <= at_level.meta.items()
    finally:
        env.close()


@pytest.mark.parametrize("env_id", ["Countdown-v0", "Sudoku-v0", "Sudoku4x4-v0", "Search-v1", "SearchQA-v1",
                                    "ToolWorld-v1", "ToolGen-v0", "CodeGen-v0", "ConnectFour-v0", "MATH500-v1",
                                    "UserSim-v0"])
def test_reset_draws_each_level_and_says_so(env_id: str, request: pytest.FixtureRequest) -> None:
    env, _ = _make(env_id, request)
    try:
        ladder = env.difficulty
        for k in range(len(ladder)):
            by_index = env.reset(seed=5, options={"difficulty": k})[1]
            by_name = env.reset(seed=5, options={"difficulty": ladder.names[k]})[1]
            assert by_index["difficulty"] == by_name["difficulty"] == k
            assert by_index["task_id"] == by_name["task_id"]
            assert by_index["task_id"] == env.level_source(k).task(by_index["task_index"], by_index["split"]).id
        assert "difficulty" not in env.reset(seed=5)[1]  # a default draw is untouched
        with pytest.raises(ConfigError, match="difficulty must be a level index"):
            env.reset(options={"difficulty": len(ladder)})
        with pytest.raises(ConfigError, match="do not combine it with 'difficulty'"):
            env.reset(options={"difficulty": 0, "task": env.task})
    finally:
        env.close()


@pytest.mark.parametrize("env_id", ["Countdown-v0", "Sudoku6x6-v0", "Search-v1", "ToolWorld-v1", "ToolGen-v0",
                                    "UserSim-v0"])
def test_the_oracle_solves_every_level(env_id: str, request: pytest.FixtureRequest) -> None:
    from rollgym.agents import OracleAgent

    env, _ = _make(env_id, request)
    try:
        for k in range(len(env.difficulty)):
            for seed in range(3):
                traj, _ = run_episode(env, OracleAgent(), seed=seed, options={"difficulty": k})
                assert traj.correct, (env_id, k, seed, traj.info.get("details"))
                assert traj.info["difficulty"] == k
    finally:
        env.close()


def _increasing(values: list[float]) -> bool:
    return all(a < b for a, b in itertools.pairwise(values))


def _non_decreasing(values: list[float]) -> bool:
    return all(a <= b for a, b in itertools.pairwise(values))


def test_countdown_levels_cost_the_solver_more_and_the_random_policy_more_misses() -> None:
    from rollgym.envs.countdown import countdown_random_policy
    from rollgym.envs.countdown.solver import search_states
    from rollgym.verifiers.countdown import verify_countdown

    env = rollgym.make("Countdown-v0").unwrapped
    rng = np.random.default_rng(0)
    states, solved = [], []
    for k in range(len(env.difficulty)):
        tasks = [env.level_source(k).task(i, "train") for i in range(24)]
        states.append(statistics.mean(search_states(t.meta["numbers"], t.meta["target"], t.meta["operators"])
                                      for t in tasks))
        solved.append(statistics.mean(
            verify_countdown(t, countdown_random_policy("", {"task_meta": t.meta}, rng)).correct
            for t in tasks for _ in range(40)))
    assert _increasing(states), states
    # the random policy's hits fall level by level (by at most one hit in 960 of noise once they are near 0)
    assert all(b <= a + 1 / 960 for a, b in itertools.pairwise(solved)), solved
    assert solved[0] > 0.1 and solved[-1] < 0.01, solved


def _naked_single_residue(meta: dict[str, Any]) -> tuple[int, int]:
    """(blank cells a naked-singles pass cannot fill, candidates over the blanks at the start)."""
    n, (br, bc) = meta["size"], meta["box"]
    grid = [[0 if ch == "." else int(ch) for ch in row] for row in meta["puzzle"]]

    def candidates(r: int, c: int) -> list[int]:
        used = {grid[r][j] for j in range(n)} | {grid[i][c] for i in range(n)}
        r0, c0 = r // br * br, c // bc * bc
        used |= {grid[i][j] for i in range(r0, r0 + br) for j in range(c0, c0 + bc)}
        return [d for d in range(1, n + 1) if d not in used]

    start = sum(len(candidates(r, c)) for r in range(n) for c in range(n) if not grid[r][c])
    changed = True
    while changed:
        changed = False
        for r in range(n):
            for c in range(n):
                if not grid[r][c] and len(options := candidates(r, c)) == 1:
                    grid[r][c], changed = options[0], True
    return sum(v == 0 for row in grid for v in row), start


@pytest.mark.parametrize("env_id", ["Sudoku-v0", "Sudoku6x6-v0", "Sudoku4x4-v0"])
def test_sudoku_levels_leave_more_to_search(env_id: str) -> None:
    env = rollgym.make(env_id).unwrapped
    residue, candidates = [], []
    for k in range(len(env.difficulty)):
        pairs = [_naked_single_residue(env.level_source(k).task(i, "train").meta) for i in range(12)]
        residue.append(statistics.mean(p[0] for p in pairs))
        candidates.append(statistics.mean(p[1] for p in pairs))
    assert _increasing(candidates), candidates
    assert _non_decreasing(residue), residue
    if env_id != "Sudoku4x4-v0":  # every 4x4 puzzle falls to naked singles
        assert residue[-1] > residue[0], residue


def test_math_levels_are_the_data_sets_labels_and_their_solutions_grow(shared_data: Any) -> None:
    require_module("sympy")
    env = rollgym.make("MATH500-v1", split="test").unwrapped
    solutions = {json.loads(line)["unique_id"]: json.loads(line)["solution"]
                 for line in (shared_data / "math500.jsonl").read_text().splitlines()}
    lengths, sizes = [], []
    for k, level in enumerate(env.difficulty.levels):
        source = env.level_source(k)
        tasks = [source.task(i, "test") for i in range(source.size("test"))]
        assert {t.meta["level"] for t in tasks} == {level.knobs["level"]}
        lengths.append(statistics.mean(len(solutions[t.id.removeprefix("math500/")]) for t in tasks))
        sizes.append(len(tasks))
    assert sum(sizes) == 500
    assert _increasing(lengths), lengths
    assert rollgym.make("AIME24-v1", split="test").unwrapped.difficulty is None


def test_search_levels_need_more_evidence() -> None:
    require_module("bm25s")
    env = rollgym.make("Search-v1").unwrapped
    rounds = [statistics.mean(env.level_source(k).task(i, "train").meta["reference_rounds"] for i in range(16))
              for k in range(len(env.difficulty))]
    assert _non_decreasing(rounds) and rounds[-1] > rounds[0], rounds


def _budget(bot: str) -> int:
    if bot in ("random", "greedy"):
        return {"random": 0, "greedy": 1}[bot]
    match = re.fullmatch(r"(mcts|stockfish-nodes)-(\d+)", bot)
    assert match, bot
    return int(match.group(2))


@pytest.mark.parametrize("env_id", ["ConnectFour-v0", "Hex-v0", "Chess-v1", "Chess960-v1"])
def test_game_levels_face_stronger_opponents(env_id: str, request: pytest.FixtureRequest) -> None:
    env, _ = _make(env_id, request)
    levels = env.difficulty.levels
    assert _increasing([_budget(level.knobs["opponent"]) for level in levels])
    sizes = [level.knobs.get("size", 0) for level in levels]
    assert _non_decreasing(sizes)
    task = env.level_source(len(levels) - 1).task(0, "train")
    assert task.meta["opponent"] == levels[-1].knobs["opponent"]
    env.close()


def test_a_game_level_plays_its_own_board_and_bot() -> None:
    from rollgym.agents import RandomAgent

    env = rollgym.make("Hex-v0").unwrapped
    info = env.reset(seed=1, options={"difficulty": "7-greedy"})[1]
    assert info["game_config"]["size"] == 7 and "7x7" in info["system_prompt"]
    assert env.opponent.name == "greedy"
    traj, task = run_episode(env, RandomAgent(), seed=1, options={"difficulty": "7-greedy"})
    assert traj.info["game_config"]["size"] == 7 and traj.info["record"]["players"].count("greedy") == 1
    replay = env.reset(options={"task": task})[1]  # a level's task carries its board and bot
    assert replay["game_config"]["size"] == 7 and env.opponent.name == "greedy"
    env.reset(seed=1)
    assert env.opponent.name == "random" and "11x11" in env.system_prompt
    env.close()


TOOL_LADDERS = ["ToolGen-v0", *(i for i in TEXT_IDS if i.startswith("ToolWorld") and i.endswith("-v1"))]


@pytest.mark.parametrize("env_id", TOOL_LADDERS)
def test_tool_levels_take_the_oracle_more_calls(env_id: str) -> None:
    from rollgym.agents import OracleAgent

    env = rollgym.make(env_id).unwrapped
    calls = []
    for k in range(len(env.difficulty)):
        made = [run_episode(env, OracleAgent(), seed=100 + s, options={"difficulty": k})[0].metrics["tool_calls"]
                for s in range(16)]
        calls.append(statistics.mean(made))
    env.close()
    assert _increasing(calls), calls


def test_codegen_levels_need_bigger_reference_solutions() -> None:
    env = rollgym.make("CodeGen-v0").unwrapped
    def size(k: int, i: int) -> int:
        return sum(1 for _ in ast.walk(ast.parse(env.level_source(k).task(i, "train").answer["reference"])))

    nodes = [statistics.mean(size(k, i) for i in range(64)) for k in range(len(env.difficulty))]
    assert _increasing(nodes), nodes


def test_repo_repair_levels_have_bigger_repositories() -> None:
    env = rollgym.make("RepoRepair-v0").unwrapped
    lines = [statistics.mean(sum(len(text.splitlines()) for text in env.level_source(k).task(i, "train")
                                 .answer["files"].values()) for i in range(8)) for k in range(len(env.difficulty))]
    assert _increasing(lines), lines


def test_world_model_levels_drift_further_from_the_last_frame_seen() -> None:
    env = rollgym.make("WorldModel-v0", lpips=False).unwrapped
    psnr = []
    for k in (0, 2, 4):
        values: list[float] = []
        for seed in range(3):
            observation, info = env.reset(seed=seed, options={"difficulty": k})
            assert info["difficulty"] == k and info["num_chunks"] == env.difficulty.levels[k].knobs["num_chunks"]
            done = False
            while not done:  # copy-last: the baseline itself, whose PSNR falls as the truth drifts
                action = np.repeat(observation["frames"][:, -1][:, None], env.chunk, axis=1)
                observation, _, done, _, step = env.step(action)
                values += [p for curves in step["curves"].values() for p in curves["baseline_psnr"]]
        psnr.append(statistics.mean(values))
    assert _increasing([-p for p in psnr]), psnr
    with pytest.raises(ConfigError, match="not both"):
        env.reset(options={"difficulty": 1, "num_chunks": 2})
