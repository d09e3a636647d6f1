"""Checking an agent's declared capabilities where a public function accepts it: :func:`require_capabilities`.

The capabilities themselves are the protocols of :mod:`rollgym.core.agent`, read by
:func:`~rollgym.core.agent.capabilities`. This check lives here, not there, because ``core.agent`` is in
the spec-hash closure of the seated games (their bots subclass ``SeededAgent``): a line added to it moves
those ids' hashes.
"""

from __future__ import annotations

import dataclasses

from rollgym.core.agent import Agent, Capabilities, capabilities
from rollgym.core.errors import ConfigError

#: What each capability asks of an agent class, for the sentence :func:`require_capabilities` writes.
CAPABILITY_MEMBERS = {
    "asynchronous": "async aact(observation, info)",
    "spawns": "spawn()",
    "forks": "fork(seed) and turns",
    "records_tokens": "token_record(), tokens_used() and record_reward(reward)",
    "checks_env": "check_env(env_id)",
    "backed": "model backend",
}


def require_capabilities(agent: Agent, *needed: str, purpose: str) -> Capabilities:
    """The agent's capabilities, read once where a public function accepts it; one sentence when one of
    ``needed`` (names of :class:`~rollgym.core.agent.Capabilities` fields) is missing.

    Example:
        >>> class Echo:
        ...     name = "echo"
        ...     def reset(self, seed=None): ...
        ...     def act(self, observation, info): return observation
        >>> require_capabilities(Echo(), "asynchronous", purpose="the async collector")
        Traceback (most recent call last):
        ...
        rollgym.core.errors.ConfigError: The agent 'echo' cannot be used for the async collector: it has no async ...
    """
    unknown = [name for name in needed if name not in CAPABILITY_MEMBERS]
    if unknown:
        raise ConfigError(f"Unknown agent capability {unknown[0]!r}; use one of {', '.join(CAPABILITY_MEMBERS)}.")
    found = capabilities(agent)
    declared = dataclasses.asdict(found)
    missing = [CAPABILITY_MEMBERS[name] for name in needed if not declared[name]]
    if missing:
        raise ConfigError(f"The agent {agent.name!r} cannot be used for {purpose}: it has no "
                          f"{' and no '.join(missing)}.")
    return found
