"""collect(): seeding, groups, determinism, failures, multi-turn episodes, token assembly."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import rollgym_toyenv  # noqa: F401  (registers ToyAdd-v0 and ToyGuess-v0)

from rollgym.agents import OracleAgent, RandomAgent
from rollgym.core.errors import ConfigError, UnknownEnvError
from rollgym.core.registration import register_env
from rollgym.rollout import RolloutGroup, Turn, agent_seed, collect, episode_seed, run_episode

TIMING = ("agent_s", "env_s", "episode_s")
PLACEMENT = ("node", "node_ip", "worker")  # where collect_ray played an episode, which legitimately differs


def comparable(groups: list[RolloutGroup]) -> list[dict[str, Any]]:
    """Group dicts without wall-clock measurements, which legitimately differ between runs."""
    out = []
    for group in groups:
        data = group.to_dict()
        for traj in data["trajectories"]:
            for key in (*TIMING, *PLACEMENT):
                traj["metrics"].pop(key, None)
        out.append(data)
    return out


class CrashingAgent:
    """Answers like the oracle but raises on every third call."""

    name = "crashing"

    def __init__(self) -> None:
        self.calls = 0
        self.oracle = OracleAgent()

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: str, info: dict[str, Any]) -> str:
        self.calls += 1
        if self.calls % 3 == 0:
            raise ValueError(f"agent bug on call {self.calls}")
        return self.oracle.act(observation, info)


class SeedRecordingAgent:
    name = "recorder"

    def __init__(self) -> None:
        self.seeds: list[int | None] = []

    def reset(self, seed: int | None = None) -> None:
        self.seeds.append(seed)

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return "0"


@dataclass
class CharTokens:
    prompt_ids: list[int]
    completion_ids: list[int]
    loss_mask: list[int]
    logprobs: list[float]
    turns: list[Turn]
    per_turn_rows: bool = False
    token_exact: bool = True


class CharTokenAgent:
    """A token-producing agent over a character vocabulary (token id = code point), shaped like ChatAgent:
    each observation after the first is appended to the context as env tokens, and ``token_record()``
    returns the episode's tokens."""

    name = "chars"

    def __init__(self, broken: bool = False) -> None:
        self.broken = broken
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        self.context: list[int] = []
        self.turns: list[Turn] = []
        self.rewards: list[float] = []

    def act(self, observation: str, info: dict[str, Any]) -> str:
        obs = [ord(c) for c in observation]
        if self.turns:
            self.turns[-1].obs_ids = obs
        self.context += obs
        low, high = info.get("low", 1), info.get("high", 8)
        action = str((low + high) // 2)
        output = [ord(c) for c in action]
        self.turns.append(Turn(list(self.context), output, [-0.5] * len(output), [], None, 3, "stop"))
        self.context += output
        return action

    def record_reward(self, reward: float) -> None:
        self.rewards.append(reward)

    def token_record(self) -> CharTokens:
        completion, mask, logprobs = [], [], []
        for turn in self.turns:
            completion += turn.output_ids + turn.obs_ids
            mask += [1] * len(turn.output_ids) + [0] * len(turn.obs_ids)
            logprobs += turn.output_logprobs + [0.0] * len(turn.obs_ids)
        if self.broken:
            mask = mask[:-1]
        return CharTokens(self.turns[0].prompt_ids, completion, mask, logprobs, self.turns)


def test_same_arguments_give_identical_results() -> None:
    a = collect(RandomAgent(), "ToyAdd-v0", n_tasks=6, group_size=3, seed=11)
    b = collect(RandomAgent(), "ToyAdd-v0", n_tasks=6, group_size=3, seed=11)
    assert comparable(a) == comparable(b)
    c = collect(RandomAgent(), "ToyAdd-v0", n_tasks=6, group_size=3, seed=12)
    assert [g.task.id for g in a] != [g.task.id for g in c]  # type: ignore[union-attr]


def test_groups_have_the_requested_size_and_share_task_and_seed() -> None:
    groups = collect(RandomAgent(), "ToyAdd-v0", n_tasks=5, group_size=4, seed=3)
    assert len(groups) == 5
    for index, group in enumerate(groups):
        assert group.target_size == 4 and len(group.trajectories) == 4 and group.complete
        assert [t.sample_idx for t in group.trajectories] == [0, 1, 2, 3]
        assert {t.task_id for t in group.trajectories} == {group.task.id}  # type: ignore[union-attr]
        assert {t.seed for t in group.trajectories} == {episode_seed(3, index)}
        assert {t.group_id for t in group.trajectories} == {group.group_id}
        assert all(t.info["split"] == "test" and "-test-" in str(t.task_id) for t in group.trajectories)
    assert len({t.traj_id for g in groups for t in g.trajectories}) == 20
    assert len({g.group_id for g in groups}) == 5
    # Random rollouts of one task are seeded differently, so their answers differ.
    answers = [{t.messages[-1]["content"] for t in g.trajectories} for g in groups]
    assert any(len(a) > 1 for a in answers)


def test_seeds_come_from_seed_sequences_not_seed_plus_index() -> None:
    assert episode_seed(0, 1) != episode_seed(1, 0)
    expected = np.random.SeedSequence(entropy=5, spawn_key=(0, 2)).generate_state(1, dtype=np.uint32)[0]
    assert episode_seed(5, 2) == int(expected)
    assert len({episode_seed(s, i) for s in range(20) for i in range(20)}) == 400
    recorder = SeedRecordingAgent()
    collect(recorder, "ToyAdd-v0", n_tasks=2, group_size=2, seed=9)
    assert recorder.seeds == [agent_seed(9, i, j) for i in range(2) for j in range(2)]
    assert len(set(recorder.seeds)) == 4


def test_an_agent_exception_fails_one_rollout_and_the_run_continues() -> None:
    groups = collect(CrashingAgent(), "ToyAdd-v0", n_tasks=3, group_size=3, seed=0)
    trajectories = [t for g in groups for t in g.trajectories]
    failed = [t for t in trajectories if t.status == "failed"]
    assert len(trajectories) == 9 and len(failed) == 3
    for traj in failed:
        assert traj.reward is None and not traj.correct
        assert traj.info["failure"]["stage"] == "act"
        assert traj.info["failure"]["type"] == "ValueError"
        assert "agent bug" in traj.info["failure"]["message"]
    assert all(t.reward == 1.0 for t in trajectories if t.status == "completed")
    assert all(len(g.usable()) == 2 for g in groups)


def test_an_env_exception_fails_the_rollout_and_later_rollouts_still_run() -> None:
    groups = collect(OracleAgent(), "ToyAdd-v0", n_tasks=12, group_size=2, seed=0, env_kwargs={"crash": True})
    statuses = {t.status for g in groups for t in g.trajectories}
    assert statuses == {"failed", "completed"}
    for group in groups:
        crashes = group.task.answer % 3 == 0  # type: ignore[union-attr]
        for traj in group.trajectories:
            if crashes:
                assert traj.status == "failed" and traj.info["failure"]["stage"] == "step"
                assert "toy env crash" in traj.info["failure"]["message"]
            else:
                assert traj.status == "completed" and traj.reward == 1.0


def test_an_agent_returning_a_non_string_fails_the_rollout() -> None:
    class NumberAgent(SeedRecordingAgent):
        def act(self, observation: str, info: dict[str, Any]) -> str:
            return 42  # type: ignore[return-value]

    [group] = collect(NumberAgent(), "ToyAdd-v0", n_tasks=1, group_size=1)
    assert group.trajectories[0].status == "failed"
    assert "not str" in group.trajectories[0].info["failure"]["message"]


def test_multi_turn_episodes_loop_until_the_env_ends_them() -> None:
    groups = collect(OracleAgent(), "ToyGuess-v0", n_tasks=8, group_size=1, seed=1)
    for group in groups:
        traj = group.trajectories[0]
        assert traj.status == "completed" and traj.reward == 1.0
        assert 1 <= len(traj.turns) <= 4 and traj.step_rewards[-1] == 1.0
        assert len(traj.step_rewards) == len(traj.turns) == traj.metrics["num_turns"]
        roles = [m["role"] for m in traj.messages]
        assert roles[0] == "user" and roles.count("assistant") == len(traj.turns)
    assert any(len(g.trajectories[0].turns) > 1 for g in groups)


def test_env_truncation_and_the_collector_step_cap_both_truncate() -> None:
    env_capped = collect(RandomAgent(), "ToyGuess-v0", n_tasks=10, group_size=1, env_kwargs={"max_guesses": 1})
    statuses = {g.trajectories[0].status for g in env_capped}
    assert statuses <= {"completed", "truncated"} and "truncated" in statuses
    collector_capped = collect(
        RandomAgent(), "ToyGuess-v0", n_tasks=10, group_size=1, env_kwargs={"max_guesses": 50}, max_steps=1
    )
    truncated = [g.trajectories[0] for g in collector_capped if g.trajectories[0].status == "truncated"]
    assert truncated and all(t.info["truncated_by"] == "max_steps" and len(t.turns) == 1 for t in truncated)


def test_token_records_become_the_trajectory_token_fields() -> None:
    agent = CharTokenAgent()
    [group] = collect(agent, "ToyGuess-v0", n_tasks=1, group_size=1, seed=4)
    traj = group.trajectories[0]
    assert len(traj.turns) >= 2, "pick a seed whose task needs several guesses"
    text = "".join(chr(i) for i in traj.prompt_ids + traj.completion_ids)
    assert text == "".join(m["content"] for m in traj.messages)  # prompt, outputs and env hints, in order
    sampled = "".join(chr(i) for i, m in zip(traj.completion_ids, traj.loss_mask) if m == 1)
    assert sampled == "".join(m["content"] for m in traj.messages if m["role"] == "assistant")
    assert all((lp == -0.5) == (m == 1) for lp, m in zip(traj.logprobs, traj.loss_mask))
    assert [t.reward for t in traj.turns] == traj.step_rewards == agent.rewards
    assert all(t.policy_version == 3 and t.finish_reason == "stop" for t in traj.turns)
    assert traj.info["token_exact"] is True and traj.info["per_turn_rows"] is False


def test_a_broken_token_record_keeps_the_episode_and_says_why() -> None:
    [group] = collect(CharTokenAgent(broken=True), "ToyGuess-v0", n_tasks=1, group_size=1, seed=4)
    traj = group.trajectories[0]
    assert traj.status == "completed" and traj.reward == 1.0 and traj.completion_ids == []
    assert "differ in length" in traj.info["token_record_error"]


def test_bad_arguments_fail_before_any_work() -> None:
    with pytest.raises(UnknownEnvError, match="ToyAdd-v0"):
        collect(OracleAgent(), "ToyAd-v0", n_tasks=1, group_size=1)
    with pytest.raises(ConfigError, match="n_tasks"):
        collect(OracleAgent(), "ToyAdd-v0", n_tasks=0, group_size=1)
    with pytest.raises(ConfigError, match="group_size"):
        collect(OracleAgent(), "ToyAdd-v0", n_tasks=1, group_size=-1)
    with pytest.raises(ConfigError, match="split"):
        collect(OracleAgent(), "ToyAdd-v0", n_tasks=1, group_size=1, env_kwargs={"split": "train"})
    with pytest.raises(ConfigError, match="has no option 'colour'"):
        collect(OracleAgent(), "ToyAdd-v0", n_tasks=1, group_size=1, env_kwargs={"colour": "red"})
    register_env(
        "ToyAddNoOracle-v0",
        "rollgym_toyenv:ToyAddEnv",
        description="ToyAdd without an oracle.",
        family="toy",
        components=["rollgym_toyenv"],
    )
    with pytest.raises(ConfigError, match="no oracle"):
        collect(OracleAgent(), "ToyAddNoOracle-v0", n_tasks=1, group_size=1)


def test_module_prefixed_ids_import_the_module() -> None:
    [group] = collect(OracleAgent(), "rollgym_toyenv:ToyAdd-v0", n_tasks=1, group_size=1)
    assert group.trajectories[0].env_id == "ToyAdd-v0" and group.trajectories[0].reward == 1.0
    with pytest.raises(ConfigError, match="Cannot import"):
        collect(OracleAgent(), "no_such_module_xyz:ToyAdd-v0", n_tasks=1, group_size=1)


class BadRewardEnv:
    """A (non-rollgym) env whose step returns a reward of the wrong type on its second step."""

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        self.steps = 0
        return "say anything", {"env_id": "BadReward"}

    def step(self, action: str) -> tuple[str, Any, bool, bool, dict[str, Any]]:
        self.steps += 1
        return "again", (0.5 if self.steps == 1 else "high"), False, False, {}


def test_an_env_returning_a_bad_reward_fails_the_rollout_with_its_partial_transcript() -> None:
    traj, task = run_episode(BadRewardEnv(), SeedRecordingAgent(), seed=0, max_steps=5)
    assert task is None and traj.status == "failed" and traj.reward is None
    assert traj.info["failure"]["stage"] == "step" and traj.info["failure"]["type"] == "ValueError"
    assert traj.step_rewards == [0.5] and len(traj.turns) == 2
    assert [m["role"] for m in traj.messages] == ["user", "assistant", "user", "assistant"]


class FailureReportingEnv:
    """An env that cannot go on after its first step and says so (as a game whose engine died does)."""

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        return "move", {"env_id": "FailureReporting"}

    def step(self, action: str) -> tuple[str, Any, bool, bool, dict[str, Any]]:
        failure = {"type": "OpponentError", "message": "the engine died"}
        return "cannot go on", 0.0, False, True, {"error": "opponent_failed", "failure": failure}


def test_an_env_reporting_a_failure_fails_the_rollout_never_scored() -> None:
    import asyncio

    from rollgym.rollout import arun_episode

    for traj, _ in (run_episode(FailureReportingEnv(), SeedRecordingAgent(), seed=0),
                    asyncio.run(arun_episode(FailureReportingEnv(), SeedRecordingAgent(), seed=0))):
        assert traj.status == "failed" and traj.reward is None and not traj.usable
        assert traj.info["failure"] == {"stage": "step", "type": "OpponentError", "message": "the engine died",
                                        "reported_by": "env"}
        assert traj.info["error"] == "opponent_failed" and traj.step_rewards == [0.0]


def test_an_agent_failing_to_record_a_reward_fails_the_rollout() -> None:
    class Grudging(SeedRecordingAgent):
        def record_reward(self, reward: float) -> None:
            raise RuntimeError("no thanks")

    traj, _ = run_episode(BadRewardEnv(), Grudging(), seed=0)
    assert traj.status == "failed" and traj.info["failure"]["stage"] == "record_reward"


def test_several_workers_give_the_same_results_as_one() -> None:
    args: dict[str, Any] = {"n_tasks": 6, "group_size": 3, "seed": 8, "env_kwargs": {"crash": True, "delay": 0.002}}
    one = collect(RandomAgent(), "ToyAdd-v0", **args)
    seen: list[int] = []
    three = collect(RandomAgent(), "ToyAdd-v0", workers=3, progress=lambda done, total: seen.append(done), **args)
    assert comparable(three) == comparable(one)
    assert {t.status for g in one for t in g.trajectories} == {"completed", "failed"}
    assert seen == list(range(19))
    with pytest.raises(ConfigError, match="workers"):
        collect(RandomAgent(), "ToyAdd-v0", workers=0, **args)


def test_workers_play_on_their_own_agent_copies() -> None:
    class Spawning(CrashingAgent):
        spawned = 0

        def spawn(self) -> Spawning:
            Spawning.spawned += 1
            return Spawning()

    groups = collect(Spawning(), "ToyAdd-v0", n_tasks=4, group_size=2, workers=3)
    assert Spawning.spawned == 2
    assert sum(t.status == "failed" for g in groups for t in g.trajectories) >= 1
