"""rollgym envs as a verifiers taskset: ``--env.taskset.id rollgym-verifiers``.

Written against ``verifiers`` 0.4.0 (the ``verifiers.v1`` stack: ``Taskset``, ``Env``,
``AgentConfig``, harnesses). A taskset plugin is a module exporting one ``Taskset`` and one
``Env`` subclass in ``__all__``; this module is that plugin, so::

    import verifiers.v1 as vf
    env = vf.load_environment(vf.resolve_env_config({
        "taskset": {"id": "rollgym-verifiers", "env_id": "Countdown-v0",
                    "n": 8, "split": "test"},
        "player": {"harness": {"id": "null"}, "runtime": {"type": "subprocess"}},
    }))

or :func:`load_environment` (``load_environment(env_id="Countdown-v0", n=8)``), the older
``load_environment(...)`` style. Each task is one rollgym episode (``seed``/``task_index``);
the env plays the user's side as verifiers' own OpenEnv taskset does: the env's first
observation opens the player's interaction, every reply is one ``env.step``, the next
observation is the next user turn, and the episode's summed reward is recorded on the
player's trace as ``rollgym_reward`` (with ``correct`` as a metric). Single-turn envs
(Countdown, MATH) end after one reply; multi-turn envs (ToolWorld, games) go on until they
terminate or ``max_turns``. ``url`` plays the env on a ``rollgym serve-env`` server instead
of in-process.

(verifiers 0.4.0's own ``openenv`` taskset cannot drive any OpenEnv server with openenv-core
0.3.0: it reads ``GenericEnvClient._base_url``, which that client does not have.)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import verifiers.v1 as vf

__all__ = ["RollgymEnv", "RollgymEnvConfig", "RollgymTask", "RollgymTaskData", "RollgymTaskset",
           "RollgymTasksetConfig"]

TASKSET_ID = "rollgym-verifiers"  # the top-level shim package rollgym_verifiers


class RollgymTaskData(vf.TaskData):  # type: ignore[misc]
    """One rollgym episode: which env, which task, where it runs."""

    env_id: str
    seed: int | None
    task_index: int | None
    split: str
    url: str | None
    env_kwargs: dict[str, Any]
    max_turns: int


class RollgymTasksetConfig(vf.TasksetConfig):  # type: ignore[misc]
    """``env_id`` (required), ``n`` tasks (task indexes ``start .. start+n-1`` of ``split``), or
    ``seeds`` instead; ``url`` for a served env; ``env_kwargs``; ``max_turns`` per episode."""

    env_id: str = ""
    n: int = 8
    start: int = 0
    seeds: list[int] | None = None
    split: str = "test"
    url: str | None = None
    env_kwargs: dict[str, Any] = {}  # noqa: RUF012 - pydantic copies defaults
    max_turns: int = 30


class RollgymTask(vf.Task[RollgymTaskData]):  # type: ignore[misc]
    """A verifiers task wrapping one rollgym episode."""


class RollgymEnvConfig(vf.EnvConfig):  # type: ignore[misc]
    """One role: the ``player`` that answers the env."""

    player: vf.AgentConfig = vf.AgentConfig()


def _make_env(data: RollgymTaskData) -> Any:
    if data.url:
        from rollgym.serve.client import RemoteEnv

        return RemoteEnv(data.url, data.env_id, split=data.split, **data.env_kwargs)
    import rollgym

    return rollgym.make(data.env_id, split=data.split, **data.env_kwargs)


class RollgymEnv(vf.Env[RollgymEnvConfig]):  # type: ignore[misc]
    """Steps a rollgym env with the player's replies; records the env's reward on the trace."""

    async def run(self, task: Any, agents: Any) -> None:
        import asyncio

        data: RollgymTaskData = task.data
        env = await asyncio.to_thread(_make_env, data)
        total, correct = 0.0, None
        try:
            options = {"task_index": data.task_index} if data.task_index is not None else None
            observation, info = await asyncio.to_thread(env.reset, seed=data.seed, options=options)
            first = str(observation)
            if info.get("system_prompt"):
                first = f"{info['system_prompt']}\n\n{first}"
            async with agents.player.interaction(task) as interaction:
                segment = await interaction.turn(first)
                for _ in range(data.max_turns):
                    if segment.terminated:
                        break
                    action = segment.last_reply or ""
                    observation, reward, terminated, truncated, info = await asyncio.to_thread(env.step, action)
                    total += float(reward)
                    if terminated or truncated:
                        correct = info.get("correct", (info.get("verdict") or {}).get("success"))
                        break
                    segment = await interaction.turn(str(observation))
            trace = interaction.trace
            trace.record_reward("rollgym_reward", total)
            if correct is not None:
                trace.record_metric("correct", float(bool(correct)))
        finally:
            await asyncio.to_thread(env.close)


class RollgymTaskset(vf.Taskset[RollgymTask, RollgymTasksetConfig]):  # type: ignore[misc]
    """``n`` episodes of a rollgym env id (or one per seed in ``seeds``)."""

    def load(self) -> Iterator[RollgymTask]:
        import rollgym

        config = self.config
        if not config.env_id:
            raise rollgym.ConfigError("The rollgym taskset needs env_id, e.g. --env.taskset.env-id Countdown-v0.")
        if config.url is None:
            rollgym.env_info(config.env_id)  # an unknown id fails here, with the closest ids
        picks: list[tuple[int | None, int | None]] = (
            [(seed, None) for seed in config.seeds] if config.seeds is not None
            else [(None, config.start + i) for i in range(config.n)]
        )
        for seed, index in picks:
            name = f"{config.env_id}#{'seed' if seed is not None else 'task'}{seed if seed is not None else index}"
            yield RollgymTask(RollgymTaskData(
                name=name, prompt=None, env_id=config.env_id, seed=seed, task_index=index, split=config.split,
                url=config.url, env_kwargs=dict(config.env_kwargs), max_turns=config.max_turns,
            ), config.task)


def load_environment(env_id: str, *, harness: str = "null", runtime: str = "subprocess", **taskset: Any) -> Any:
    """A verifiers ``Env`` over ``env_id``: ``load_environment(env_id="ToolWorld-v0", n=4, url=...)``.

    ``harness`` is the verifiers harness that plays the model (``null``: a plain chat loop) and
    ``runtime`` where it runs (``subprocess`` here; ``docker`` or ``prime`` for isolation).
    """
    config = vf.resolve_env_config({
        "taskset": {"id": TASKSET_ID, "env_id": env_id, **taskset},
        "player": {"harness": {"id": harness}, "runtime": {"type": runtime}},
    })
    return vf.load_environment(config)
