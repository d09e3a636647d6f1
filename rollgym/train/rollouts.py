"""The rollout step of a GRPO loop: groups of episodes played in this process or on a Ray cluster.

:func:`collect_groups` is what :meth:`rollgym.train.grpo.GRPOTrainer.rollout_step` collects with;
``ray=`` moves the episodes onto Ray's env workers (:func:`rollgym.rollout.distributed.collect_ray`)
without changing them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rollgym.core.agent import Agent
from rollgym.core.errors import ConfigError
from rollgym.rollout.episode import DEFAULT_MAX_STEPS
from rollgym.rollout.types import RolloutGroup

if TYPE_CHECKING:
    from rollgym.rollout.distributed import RayWorkers


def collect_groups(agent_factory: Callable[[], Agent], env_id: str, n_tasks: int, group_size: int, *,
                   seed: int = 0, split: str = "train", env_kwargs: dict[str, Any] | None = None,
                   max_steps: int = DEFAULT_MAX_STEPS, ray: bool | str | RayWorkers = False, num_workers: int = 2,
                   concurrency: int = 32) -> list[RolloutGroup]:
    """The rollout step of a GRPO loop: ``n_tasks`` groups of ``group_size`` episodes, here or on a Ray cluster.

    Args:
        agent_factory: Builds the agent (a picklable callable with ``ray``: Ray workers build their own;
            e.g. :class:`~rollgym.agents.chat.RemoteChatAgent` for a model behind an inference server).
        ray: ``False`` plays the episodes in this process (:func:`~rollgym.rollout.collect_async`);
            ``True`` on Ray's workers (:func:`~rollgym.rollout.distributed.collect_ray`), on the Ray
            instance already initialised in this process, else a local one; a string is the cluster to
            join (``"10.0.0.1:6379"``, ``"auto"``, ``"ray://..."``) when Ray is not initialised yet; a
            :class:`~rollgym.rollout.distributed.RayWorkers` plays on its kept workers (started once for
            the whole loop, not every step; it fixes the env, split and agent factory).
        num_workers: Ray workers (``ray`` only); concurrency: episodes at once in this process.

    An episode is a pure function of the run's seed, its task and its sample index (a
    :class:`~rollgym.agents.chat.ChatAgent` seeds its sampling from them), so both ways give the same
    groups; with ``ray`` every trajectory also names its node and worker in ``metrics``.

    Example:
        >>> from rollgym.agents import OracleAgent
        >>> groups = collect_groups(OracleAgent, "Countdown-v0", 2, 2, seed=1)
        >>> [t.reward for t in groups[0].trajectories]
        [1.0, 1.0]
    """
    if not isinstance(ray, (bool, str)):
        return _on_kept_workers(ray, env_id, n_tasks, group_size, seed=seed, split=split, env_kwargs=env_kwargs,
                                max_steps=max_steps)
    if ray == "":
        raise ConfigError(f"ray must be False, True or a cluster address such as '10.0.0.1:6379', got {ray!r}.")
    from rollgym.rollout.drivers import run_spec
    from rollgym.rollout.spec import RunSpec

    spec = RunSpec.of(env_id, n_tasks, group_size, split=split, seed=seed, env_kwargs=env_kwargs, max_steps=max_steps)
    if ray is False:  # one engine, two drivers: the same episodes here or on Ray's workers
        return run_spec(spec, agent_factory(), driver="async", parallel=concurrency)
    return run_spec(spec, agent_factory, driver="ray", parallel=num_workers, address=None if ray is True else ray)


def _on_kept_workers(workers: Any, env_id: str, n_tasks: int, group_size: int, *, seed: int, split: str,
                     env_kwargs: dict[str, Any] | None, max_steps: int) -> list[RolloutGroup]:
    from rollgym.rollout.distributed import RayWorkers

    if not isinstance(workers, RayWorkers):
        raise ConfigError(f"ray must be False, True, a cluster address such as '10.0.0.1:6379' or a RayWorkers, "
                          f"got {workers!r}.")
    asked = {"env_id": env_id, "split": split, "env_kwargs": env_kwargs or {}}
    kept = {"env_id": workers.env_id, "split": workers.split, "env_kwargs": workers.env_kwargs or {}}
    if asked != kept or workers.options["limits"].max_steps != max_steps:
        differ = ", ".join(f"{k} {asked[k]!r} vs {kept[k]!r}" for k in asked if asked[k] != kept[k]) or "max_steps"
        raise ConfigError(f"These RayWorkers were made for another run ({differ}); make RayWorkers with the "
                          "rollout step's env, split and arguments.")
    return workers.collect(n_tasks, group_size, seed=seed)  # type: ignore[no-any-return]
