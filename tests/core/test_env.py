"""The TextEnv/SingleTurnEnv contract, on a small env defined here."""

from __future__ import annotations

import warnings

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

from rollgym.core import ConfigError, Score, SingleTurnEnv, Task, extract_tag, register_env
from rollgym.core.seeding import task_rng


class EchoSource:
    family = "echo"

    def task(self, index: int, split: str = "train") -> Task:
        value = int(task_rng(self.family, split, index).integers(0, 1000))
        return Task(f"Echo-v0:{split}:{index}", "Echo-v0", f"Repeat {value}.", str(value), {"value": value})

    def size(self, split: str) -> int | None:
        return None


class EchoEnv(SingleTurnEnv):
    default_env_id = "Echo-v0"
    system_prompt = "Answer inside <answer></answer>."

    def __init__(self, split: str = "train", render_mode: str | None = None, crash: bool = False) -> None:
        super().__init__(EchoSource(), split=split, render_mode=render_mode)
        self.crash = crash

    def verify(self, task: Task, response: str) -> Score:
        if self.crash:
            raise ZeroDivisionError("bug")
        got = extract_tag(response)
        if got is None:
            return Score.fail("no_answer")
        return Score.success(got) if got == task.answer else Score.fail("wrong", got)


register_env("Echo-v0", f"{__name__}:EchoEnv", description="Echo a number.", family="test",
             components=[__name__])


def test_check_env_passes_without_warnings():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(gym.make("Echo-v0").unwrapped, skip_render_check=False)
    assert not [w for w in caught if issubclass(w.category, UserWarning)], [str(w.message) for w in caught]


def test_seeded_reset_is_reproducible_and_continues_a_stream():
    env = gym.make("Echo-v0")
    first, info = env.reset(seed=3)
    again, _ = env.reset(seed=3)
    assert first == again
    follow = [env.reset()[0] for _ in range(3)]
    env.reset(seed=3)
    assert follow == [env.reset()[0] for _ in range(3)]
    assert info["env_id"] == "Echo-v0" and info["task_id"].startswith("Echo-v0:train:")
    assert info["system_prompt"] and info["task_meta"]["value"] >= 0
    assert info["spec_hash"] and len(info["spec_hash"]) == 16


def test_single_turn_episode():
    env = gym.make("Echo-v0")
    _, info = env.reset(options={"task_index": 4, "split": "test"})
    answer = str(info["task_meta"]["value"])
    obs2, reward, terminated, truncated, info2 = env.step(f"<answer>{answer}</answer>")
    assert (obs2, reward, terminated, truncated) == ("", 1.0, True, False)
    assert info2["correct"] is True and info2["error"] is None and info2["parsed"] == answer
    assert info["split"] == info2["split"] == "test"  # the split the episode's task came from
    assert info2["task_id"] == "Echo-v0:test:4"
    assert env.reset(seed=1)[1]["split"] == "train"  # without options: the env's own split again


def test_given_task_and_dict_task():
    env = gym.make("Echo-v0")
    task = Task("custom", "Echo-v0", "Repeat 7.", "7", {"value": 7})
    assert env.reset(options={"task": task})[0] == "Repeat 7."
    assert env.reset(options={"task": task.to_dict()})[1]["task_id"] == "custom"
    assert env.reset(options={"task": task})[1]["split"] is None  # a given task: no split is known


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"task_idx": 1}, "Unknown reset option"),
        ({"task_index": -1}, "task_index must be"),
        ({"split": "dev"}, "Unknown or empty split"),
        ({"task": "nope"}, "must be a rollgym Task"),
    ],
)
def test_bad_reset_options_are_one_clear_sentence(options, message):
    with pytest.raises(ConfigError, match=message):
        gym.make("Echo-v0").reset(options=options)


def test_bad_constructor_values():
    with pytest.raises(ConfigError, match="Unknown or empty split"):
        EchoEnv(split="dev")
    with pytest.raises(ConfigError, match="render_mode"):
        EchoEnv(render_mode="rgb_array")


def test_step_before_reset_and_after_end_is_a_clear_error():
    env = EchoEnv()
    with pytest.raises(RuntimeError, match="reset"):
        env.step("x")
    env.reset(seed=0)
    env.step("x")
    with pytest.raises(RuntimeError, match="reset"):
        env.step("x")


def test_model_output_never_crashes_the_env():
    env = EchoEnv(crash=True)
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step("<answer>1</answer>")
    assert reward == 0.0 and terminated and info["error"] == "verifier_error"
    env = EchoEnv()
    env.reset(seed=0)
    assert env.step(b"<answer>1</answer>")[4]["parsed"] == "1"
    env.reset(seed=0)
    with pytest.raises(TypeError, match="Actions are strings"):
        env.step(12)  # type: ignore[arg-type]


def test_render_ansi_shows_the_transcript():
    env = EchoEnv(render_mode="ansi")
    obs, _ = env.reset(seed=1)
    env.step("<answer>no</answer>")
    text = env.render()
    assert obs in text and "<answer>no</answer>" in text


def test_make_vec_gives_tuples_of_strings():
    envs = gym.make_vec("Echo-v0", num_envs=4, vectorization_mode="sync")
    obs, _ = envs.reset(seed=0)
    assert isinstance(obs, tuple) and len(obs) == 4 and all(isinstance(o, str) for o in obs)
    _, rewards, terminated, truncated, _ = envs.step(("a",) * 4)
    assert terminated.all() and not truncated.any() and rewards.dtype.kind == "f"


def test_tasks_carry_the_id_the_env_was_made_with_and_sources_are_never_patched():
    import ast
    from pathlib import Path

    import rollgym

    register_env("CountdownRenamed-v0", "rollgym.envs.countdown.env:CountdownEnv", description="renamed",
                 family="test")
    register_env("Sudoku4x4Renamed-v0", "rollgym.envs.sudoku.env:SudokuEnv", description="renamed",
                 family="test", kwargs={"box_rows": 2, "box_cols": 2})
    register_env("ConnectFourRenamed-v0", "rollgym.envs.games.connect_four:ConnectFourEnv",
                 description="renamed", family="test")
    for env_id in ("CountdownRenamed-v0", "Sudoku4x4Renamed-v0", "ConnectFourRenamed-v0"):
        env = gym.make(env_id)
        _, info = env.reset(seed=0)
        assert info["env_id"] == env_id and info["task_id"].startswith(env_id)
        assert env.unwrapped.task.env_id == env_id
    bare = rollgym.envs.countdown.env.CountdownEnv()  # outside gym.make: the class's default id
    assert bare.reset(seed=0)[1]["task_id"].startswith("Countdown-v0:")
    # no code sets env_id on anything but itself (the old per-reset patching of task sources)
    for path in Path(rollgym.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Attribute) and target.attr == "env_id":
                        assert isinstance(target.value, ast.Name) and target.value.id == "self", (
                            f"{path}:{node.lineno} sets env_id on another object")


def test_copy_plain_copies_json_like_data_deeply_and_defers_the_rest():
    from fractions import Fraction

    from rollgym.core.env import copy_plain

    meta = {"numbers": [3, 8, [1, 2]], "range": (1, (2, 3)), "name": "x", "none": None, "f": 1.5, "b": True}
    twin = copy_plain(meta)
    assert twin == meta
    assert twin["numbers"] is not meta["numbers"] and twin["numbers"][2] is not meta["numbers"][2]
    twin["numbers"][2].append(9)
    assert meta["numbers"][2] == [1, 2]
    odd = {"fraction": Fraction(1, 3), "set": {1, 2}}
    copied = copy_plain(odd)
    assert copied == odd and copied["set"] is not odd["set"]


def test_infos_of_one_episode_never_share_task_meta_lists():
    import rollgym

    env = rollgym.make("Countdown-v0")
    _, first = env.reset(seed=0)
    *_, last = env.step("<answer>1</answer>")
    assert first["task_meta"] == last["task_meta"]
    first["task_meta"]["numbers"].append(-1)
    assert -1 not in last["task_meta"]["numbers"] and -1 not in env.unwrapped.task.meta["numbers"]
