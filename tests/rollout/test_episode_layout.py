"""The engine's seeding and naming policy (EpisodeLayout): the default keeps every seed and id, other layouts
(fixed task lists, seated games) run on the same engine under every driver, and a bad layout or task list is
one sentence."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import rollgym_toyenv  # noqa: F401  (registers ToyAdd-v0 and ToyGuess-v0)
from test_collector import comparable

import rollgym
from rollgym.agents import OracleAgent, RandomAgent
from rollgym.core.errors import ConfigError
from rollgym.core.task import Task
from rollgym.rollout import EpisodeLimits, load_results
from rollgym.rollout.drivers import run_spec
from rollgym.rollout.engine import Engine
from rollgym.rollout.layout import (
    EpisodeNames,
    GroupLayout,
    SeatLayout,
    TaskListLayout,
    agent_seed,
    episode_seed,
    seat_seed,
)
from rollgym.rollout.spec import RunSpec
from rollgym.rollout.types import RolloutGroup


def _tasks(n: int, env_id: str = "ToyAdd-v0") -> list[Task]:
    env = rollgym.make(env_id)
    out = []
    for index in range(n):
        env.reset(options={"task_index": index})
        out.append(env.unwrapped.task)
    env.close()
    return out


def test_the_default_layout_is_the_engines_seed_rule_and_run_prefix_ids():
    layout = GroupLayout()
    assert layout.env_seed(7, 3) == episode_seed(7, 3) == int(
        np.random.SeedSequence(7, spawn_key=(0, 3)).generate_state(1, dtype=np.uint32)[0])
    assert layout.agent_seed(7, 3, 2) == agent_seed(7, 3, 2) == int(
        np.random.SeedSequence(7, spawn_key=(1, 3, 2)).generate_state(1, dtype=np.uint32)[0])
    assert layout.names("abc-Env-v0", 12, 3) == EpisodeNames("abc-Env-v0-00012", "abc-Env-v0-00012-3", 3)
    assert layout.describe() is None  # a default run's header, hence its run id, is what it was


def test_a_run_plays_the_layouts_seeds_and_ids_under_every_local_driver(tmp_path):
    tasks = _tasks(3)
    layout = TaskListLayout.of(["b", "a", "b"], [5, 0, 6], "external:random")
    spec = RunSpec("ToyAdd-v0", n_tasks=3, group_size=1, seed=40, tasks=tuple(tasks), layout=layout)
    threads = run_spec(spec, RandomAgent(seed=1), driver="threads", parallel=2)
    asynced = run_spec(spec, RandomAgent(seed=1), driver="async", parallel=3)
    for groups in (threads, asynced):
        trajs = [g.trajectories[0] for g in groups]  # task order, although the group ids do not sort so
        assert [t.group_id for t in trajs] == ["b", "a", "b"]
        assert [t.traj_id for t in trajs] == ["b-0", "a-1", "b-2"]
        assert [t.sample_idx for t in trajs] == [5, 0, 6]
        assert [t.seed for t in trajs] == [40, 41, 42]
        assert [t.task_id for t in trajs] == [task.id for task in tasks]
        assert {t.source for t in trajs} == {"external:random"}
    assert [t.messages for g in threads for t in g.trajectories] == \
        [t.messages for g in asynced for t in g.trajectories]
    out = tmp_path / "run.jsonl"
    run_spec(RunSpec("ToyAdd-v0", n_tasks=3, group_size=1, tasks=tuple(tasks), layout=layout, out=str(out)),
             OracleAgent())
    header = load_results(out).header
    assert header["tasks"] == [task.id for task in tasks] and header["layout"]["kind"] == "task-list"


def test_a_fixed_task_list_plays_those_tasks_whatever_the_seed():
    tasks = _tasks(2)
    spec = RunSpec("ToyAdd-v0", n_tasks=2, group_size=2, seed=9, tasks=(tasks[1], tasks[0]))
    groups = run_spec(spec, OracleAgent())
    assert [g.task.id for g in groups] == [tasks[1].id, tasks[0].id]
    assert [t.reward for g in groups for t in g.trajectories] == [1.0] * 4


def test_a_resumed_task_list_run_plays_only_what_is_missing(tmp_path):
    tasks = _tasks(2)
    layout = TaskListLayout.of(["g0", "g1"], [3, 4], "policy")
    spec = RunSpec("ToyAdd-v0", n_tasks=2, group_size=1, tasks=tuple(tasks), layout=layout,
                   out=str(tmp_path / "r.jsonl"))
    first = run_spec(spec, OracleAgent())
    engine = Engine(spec, OracleAgent())
    try:
        assert engine.jobs == []  # the records are keyed by the layout's sample indices
        assert [g.trajectories[0].traj_id for g in engine.groups()] == [g.trajectories[0].traj_id for g in first]
    finally:
        engine.close()


@pytest.mark.parametrize(("fields", "message"), [
    ({"tasks": ("x",)}, "tasks must hold "),
    ({"tasks": "abc"}, "tasks must be a list of "),
    ({"n_tasks": 2}, "tasks holds 1 tasks but n_tasks is 2"),
    ({"task_indices": (0,)}, "Pass task_indices or tasks, not both"),
    ({"layout": "seeds"}, "layout must be an EpisodeLayout (such as GroupLayout()), got str."),
])
def test_a_bad_task_list_or_layout_is_one_sentence(fields: dict[str, Any], message: str) -> None:
    args: dict[str, Any] = {"env_id": "ToyAdd-v0", "n_tasks": 1, "group_size": 1, "tasks": tuple(_tasks(1)),
                            **fields}
    with pytest.raises(ConfigError) as caught:
        RunSpec(**args)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_task_list_layout_needs_one_sample_index_per_group_id():
    with pytest.raises(ConfigError, match="group_ids names 2 episodes but sample_idx 1"):
        TaskListLayout(("a", "b"), (0,))


def test_seated_games_take_their_seeds_and_ids_from_the_seat_layout():
    from rollgym.envs.games.kuhn import KuhnPoker, NashKuhnBot
    from rollgym.rollout.selfplay import collect_seated

    groups = collect_seated(KuhnPoker, lambda: [NashKuhnBot(seed=0), NashKuhnBot(seed=1)], seeds=[3, 8], group_size=2)
    layout = SeatLayout((3, 8), 2, "KuhnPoker-v1", "train")
    for i, group in enumerate(groups):
        assert group.group_id == layout.names("", i, 0).group_id == f"KuhnPoker-v1:train:{layout.seeds[i]}"
        assert [t.traj_id for t in group.trajectories] == [layout.names("", i, k).traj_id for k in range(4)]
        assert {t.seed for t in group.trajectories} == {layout.env_seed(0, i)}
    assert layout.agent_seed(0, 1, 3) == seat_seed(8, 1, 1)


def test_play_tasks_refuses_ids_that_do_not_match_its_tasks_in_one_sentence():
    from rollgym.train.adapters.episodes import play_tasks

    with pytest.raises(ConfigError, match=r"^group_ids has 1 entries for 2 tasks; pass one per task\.$"):
        play_tasks(OracleAgent(), "ToyAdd-v0", _tasks(2), group_ids=["a"])


def test_play_tasks_is_a_task_list_run_of_the_engine():
    from rollgym.train.adapters.episodes import play_tasks

    tasks = _tasks(3)
    ids, idx = ["x", "y", "x"], [0, 0, 1]
    trajs = play_tasks(RandomAgent(seed=2), "ToyAdd-v0", tasks, seed=11, group_ids=ids, sample_idx=idx)
    spec = RunSpec("ToyAdd-v0", n_tasks=3, group_size=1, seed=11, tasks=tuple(tasks),
                   limits=EpisodeLimits(max_steps=10), layout=TaskListLayout.of(ids, idx, "external:random"))
    again = run_spec(spec, RandomAgent(seed=2), driver="threads", keep_agent=False)
    assert comparable([RolloutGroup(t.group_id, None, 1, [t]) for t in trajs]) == \
        comparable([RolloutGroup(g.group_id, None, 1, g.trajectories) for g in again])
    assert [t.seed for t in trajs] == [11, 12, 13] and [t.traj_id for t in trajs] == ["x-0", "y-1", "x-2"]


def test_play_tasks_takes_a_split_among_its_env_kwargs_as_make_did(monkeypatch):
    """Callers (the realmodel experiments, trainers) pass ``env_kwargs={..., "split": "test"}``: the split goes to
    ``make`` as before, and to the spec's own field, never into the spec's env_kwargs (which refuse it)."""
    import rollgym.train.adapters.episodes as episodes

    made: list[dict] = []
    real_make = episodes.make

    def spy(env_id, **kwargs):
        made.append(kwargs)
        return real_make(env_id, **kwargs)

    monkeypatch.setattr(episodes, "make", spy)
    trajs = episodes.play_tasks(OracleAgent(), "ToyAdd-v0", _tasks(2), env_kwargs={"split": "train"})
    assert [t.reward for t in trajs] == [1.0, 1.0]
    assert made and all(kw.get("split") == "train" for kw in made)
    made.clear()
    episodes.play_tasks(OracleAgent(), "ToyAdd-v0", _tasks(2))
    assert made and all("split" not in kw for kw in made)  # the env's own default split, as before
