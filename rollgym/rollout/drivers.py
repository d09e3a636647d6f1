"""Choosing a driver of the episode engine by name: :func:`run_spec`.

The engine (:mod:`rollgym.rollout.engine`) does everything per episode; a driver only decides where
and when episodes run. ``rollgym eval`` and ``rollgym bench run`` choose theirs with ``--driver``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from rollgym.core.agent import Agent
from rollgym.core.config import did_you_mean
from rollgym.core.errors import ConfigError
from rollgym.rollout.spec import RunSpec
from rollgym.rollout.types import RolloutGroup

#: The drivers :func:`run_spec` knows.
DRIVERS = ("threads", "async", "ray")


def run_spec(spec: RunSpec, agent: Agent | Callable[[], Agent], *, driver: str = "threads",
             parallel: int | None = None, **options: Any) -> list[RolloutGroup]:
    """Play ``spec`` with one of the drivers and return its groups in task order.

    Args:
        spec: The run.
        agent: The agent; for ``driver="ray"`` a picklable callable that builds one (each worker builds its own).
        driver: ``"threads"`` (:func:`~rollgym.rollout.collect`), ``"async"``
            (:func:`~rollgym.rollout.collect_async`) or ``"ray"``
            (:func:`~rollgym.rollout.distributed.collect_ray`). Results do not depend on it.
        parallel: Episodes at once: threads for ``"threads"`` (default 1), episodes in flight for
            ``"async"`` (default 32), workers for ``"ray"`` (default 2).
        options: The driver's other options (``progress``, ``on_episode``, ``env_pool``, ``retries``, ...).

    Example:
        >>> from rollgym.agents import OracleAgent
        >>> spec = RunSpec("Countdown-v0", n_tasks=1, group_size=2)
        >>> [t.reward for t in run_spec(spec, OracleAgent(), driver="async")[0].trajectories]
        [1.0, 1.0]
    """
    if driver == "threads":
        from rollgym.rollout.collector import drive_threads

        return drive_threads(spec, cast(Agent, agent), workers=1 if parallel is None else parallel, **options)
    if driver == "async":
        from rollgym.rollout.stream import drive_async

        return drive_async(spec, cast(Agent, agent), concurrency=32 if parallel is None else parallel, **options)
    if driver == "ray":
        from rollgym.rollout.distributed import drive_ray

        factory = cast(Callable[[], Agent], agent)
        return drive_ray(spec, factory, num_workers=2 if parallel is None else parallel, **options)
    raise ConfigError(f"driver must be one of {', '.join(map(repr, DRIVERS))}, got {driver!r}"
                      f"{did_you_mean(driver, DRIVERS) or '.'}")
