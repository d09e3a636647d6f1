"""``rollgym.remote``: play envs served by ``rollgym serve-env`` as local ``gymnasium.Env`` objects.

See :mod:`rollgym.serve.client` for the details; this module re-exports its public API.

Example:
    >>> import rollgym.remote
    >>> ids = rollgym.remote.register("http://127.0.0.1:8000")  # doctest: +SKIP
    >>> env = rollgym.make(ids[0])  # doctest: +SKIP
"""

from rollgym.serve.client import (
    EnvServerGone,
    RemoteEnv,
    RemoteEnvError,
    list_remote,
    register,
    resolve_url,
)

__all__ = ["EnvServerGone", "RemoteEnv", "RemoteEnvError", "list_remote", "register", "resolve_url"]
