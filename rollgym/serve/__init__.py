"""rollgym envs as services: ``rollgym serve-env``, the remote client, MCP, and framework adapters.

* :mod:`rollgym.serve.protocol`: the wire format (OpenEnv's messages around rollgym's text envs).
* :mod:`rollgym.serve.sessions` and :mod:`rollgym.serve.server`: the server (Starlette on uvicorn).
* :mod:`rollgym.serve.client`: :class:`~rollgym.serve.client.RemoteEnv`, re-exported as ``rollgym.remote``.
* :mod:`rollgym.serve.mcp`: tool envs as MCP servers.
* :mod:`rollgym.serve.adapters`: verifiers, NeMo Gym and SkyRL-Gym.

This layer imports ``core`` and serves envs through the registry; envs never import it.
Its heavy dependencies (starlette, uvicorn, websockets, mcp) are imported lazily and live in
the ``serve`` and ``mcp`` extras.
"""
