"""Envs kept open between collection runs, so that a loop that collects every step builds them once.

A training loop calls the collector once per step, and a run with 32 episodes in
flight needs 32 envs: building them is the largest fixed cost of a short run
(a fifth of a millisecond each for Countdown, far more for a browser). Pass one
:class:`EnvPool` to every call and each run takes its idle envs from it and
gives them back when it ends::

    with EnvPool() as envs:
        for step in range(steps):
            groups = collect_async(agent, "Countdown-v0", 8, 8, seed=step, env_pool=envs)

Every episode resets its env with its own seed, so results do not depend on
which env played it or what it played before; an env that crashed is closed
and replaced, never given back.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from rollgym.core.closing import Closeable
from rollgym.rollout.types import to_jsonable


class EnvPool(Closeable):
    """Idle envs by (env id, split, ``make`` arguments); see the module docstring."""

    def __init__(self) -> None:
        self._idle: dict[str, list[Any]] = {}
        self._lock = threading.Lock()
        self._closed = False

    @staticmethod
    def key(env_id: str, split: str, env_kwargs: dict[str, Any]) -> str:
        """The pool key of envs made as ``make(env_id, split=split, **env_kwargs)``."""
        return json.dumps([env_id, split, to_jsonable(env_kwargs)], sort_keys=True)

    def has(self, key: str) -> bool:
        """Whether an idle env of ``key`` is waiting."""
        with self._lock:
            return bool(self._idle.get(key))

    def take(self, key: str, make: Callable[[], Any]) -> Any:
        """An idle env of ``key``, or a new one from ``make()``."""
        with self._lock:
            idle = self._idle.get(key)
            if idle:
                return idle.pop()
        return make()

    def give(self, key: str, env: Any) -> None:
        """Return an env that is in a sound state (after a closed pool: close it)."""
        with self._lock:
            if not self._closed:
                self._idle.setdefault(key, []).append(env)
                return
        env.close()

    def close(self) -> None:
        """Close every idle env; envs given back later are closed at once."""
        with self._lock:
            self._closed = True
            envs = [env for idle in self._idle.values() for env in idle]
            self._idle.clear()
        for env in envs:
            env.close()

    def __len__(self) -> int:
        with self._lock:
            return sum(len(idle) for idle in self._idle.values())
