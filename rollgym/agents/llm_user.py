"""Any rollgym backend in a simulated user's seat: :func:`backend_user` makes the ``model(messages) -> str``
callable that ``UserSim-v0``'s ``user_model`` argument takes (see :mod:`rollgym.envs.usersim.llm_user`).

Example:
    >>> import rollgym
    >>> from rollgym.agents.llm_user import backend_user
    >>> env = rollgym.make("UserSim-v0", user_model=backend_user(my_backend))  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
from collections.abc import Callable
from typing import Any

from rollgym.agents.backends.base import Backend, SamplingParams


def backend_user(backend: Backend, sampling: SamplingParams | None = None) -> Callable[[list[dict[str, str]]], str]:
    """A user model that samples one reply from ``backend`` for a list of chat messages.

    Generation runs on an event loop of its own in a worker thread, so the env may step inside another loop (the
    collector's). ``sampling`` defaults to 128 new tokens at temperature 0.7; ``n`` is always 1. A generation
    that fails gives an empty reply (the env counts it as a reply that moves nothing forward).
    """
    params = dataclasses.replace(sampling or SamplingParams(max_tokens=128, temperature=0.7), n=1)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="rollgym-user")

    def reply(messages: list[dict[str, str]]) -> str:
        prompt: Any = [dict(m) for m in messages]
        generations = pool.submit(asyncio.run, backend.generate([prompt], params)).result()
        first = generations[0] if generations else None
        return first.text if first is not None and first.finish_reason != "error" else ""

    return reply
