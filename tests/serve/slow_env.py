"""A test env whose step blocks until the test releases it: env work that holds a worker thread."""

from __future__ import annotations

import threading

from rollgym.envs.countdown.env import CountdownEnv

RELEASE = threading.Event()


class BlockingCountdownEnv(CountdownEnv):
    """Countdown whose step waits for :data:`RELEASE` (at most 60 s) before scoring."""

    def step(self, action: str):  # type: ignore[override]
        RELEASE.wait(timeout=60)
        return super().step(action)
