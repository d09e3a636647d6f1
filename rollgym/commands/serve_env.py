"""``rollgym serve-env``: serve registered envs over OpenEnv's WebSocket/HTTP protocol, or one as MCP over stdio."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any


def register(subparsers: Any) -> None:
    """Add the ``serve-env`` sub-command."""
    parser = subparsers.add_parser(
        "serve-env", help="serve envs to remote clients (OpenEnv protocol, MCP, NeMo Gym)",
        description="Host many concurrent sessions of the given env ids (default: every registered id) at "
                    "http://HOST:PORT. OpenEnv's clients, rollgym.remote, NeMo Gym agents and MCP clients connect "
                    "to it; see docs/serve.md.",
    )
    parser.add_argument("env", nargs="*", metavar="ENV", help="env ids to serve (default: all)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (0 picks a free one; default: 8000)")
    parser.add_argument("--default-env", default=None, help="env served at the bare /ws (default: the only one)")
    parser.add_argument("--max-sessions", type=int, default=4096, help="most sessions at once (default: 4096)")
    parser.add_argument("--idle-timeout", type=float, default=300.0,
                        help="close a session after this many idle seconds (default: 300)")
    parser.add_argument("--reconnect-grace", type=float, default=30.0,
                        help="keep a vanished client's episode this many seconds for a reconnect (default: 30)")
    parser.add_argument("--max-action-chars", type=int, default=1_000_000,
                        help="longest action accepted, in characters (default: 1,000,000)")
    parser.add_argument("--replicas", type=int, default=1,
                        help="server processes behind the one address; sessions stay on theirs, a replica that "
                             "dies is started again, --max-sessions is per replica (default: 1)")
    parser.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                        help="run each replica in a Ray actor, on the cluster at ADDRESS (host:6379, auto, ray://...; "
                             "without one: a local Ray, or $RAY_ADDRESS); see docs/distributed.md")
    parser.add_argument("--ray-resource", action="append", default=[], metavar="NAME=AMOUNT",
                        help="with --ray: a custom Ray resource each replica reserves, which places it (repeatable)")
    parser.add_argument("--ray-cpus", type=float, default=1.0,
                        help="with --ray: CPUs each replica reserves (default 1)")
    parser.add_argument("--workers", type=int, default=32, help="threads for blocking env work (default: 32)")
    parser.add_argument("--execution", choices=["auto", "inline", "threads"], default="auto",
                        help="where steps run: auto (fast families on the event loop), inline, threads")
    parser.add_argument("--ws-compression", action="store_true",
                        help="offer WebSocket per-message deflate (worth it over slow links; costs CPU)")
    parser.add_argument("--token", default=None,
                        help=f"require this token (default: ${'ROLLGYM_SERVE_TOKEN'} if set)")
    parser.add_argument("--env-arg", action="append", default=[], metavar="KEY=VALUE",
                        help="constructor argument for every env (repeatable; VALUE is JSON or text)")
    parser.add_argument("--mcp-stdio", action="store_true",
                        help="serve ONE episode of ENV as an MCP server on stdin/stdout instead")
    parser.add_argument("--seed", type=int, default=None, help="with --mcp-stdio: the episode's reset seed")
    parser.add_argument("--task-index", type=int, default=None, help="with --mcp-stdio: the task index")
    parser.add_argument("--split", default=None, help="with --mcp-stdio: the task split")
    parser.add_argument("--result", default=None, help="with --mcp-stdio: write the episode's result JSON here")
    parser.add_argument("--nemo-gym", action="store_true",
                        help="also serve NeMo Gym's resources-server routes under /nemo-gym/<env id>/")
    parser.add_argument("--docker-image", default=None, metavar="IMAGE",
                        help="run the server in a container of IMAGE (built from the repository's Dockerfile) "
                             "and publish it on HOST:PORT")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Start the server (or the MCP stdio session) and serve until interrupted."""
    from rollgym.commands.options import parse_env_args
    from rollgym.core.errors import ConfigError

    env_kwargs = parse_env_args(args.env_arg)
    if args.mcp_stdio:
        if len(args.env) != 1:
            raise ConfigError("--mcp-stdio serves one env: name exactly one ENV.")
        from rollgym.serve.mcp import StdioEpisode, run_stdio

        options = {k: v for k, v in (("task_index", args.task_index), ("split", args.split)) if v is not None}
        episode = StdioEpisode(args.env[0], seed=args.seed, options=options or None, result_path=args.result,
                               **env_kwargs)
        run_stdio(episode)
        return 0

    if args.docker_image:
        import subprocess

        if args.replicas != 1 or args.ray is not None:
            raise ConfigError("--docker-image runs one server; pass --replicas inside the image instead, or not both.")

        command = docker_command(args)
        token = args.token or os.environ.get("ROLLGYM_SERVE_TOKEN")
        env = {**os.environ, **({"ROLLGYM_SERVE_TOKEN": token} if token else {})}
        try:
            return subprocess.call(command, env=env)
        except FileNotFoundError:
            raise ConfigError("--docker-image needs the docker command line tool; install Docker, or run "
                              "`rollgym serve-env` without it.") from None

    from rollgym.serve.server import EnvServer, serve
    from rollgym.serve.sessions import ServeConfig

    config = ServeConfig(
        env_ids=tuple(args.env) or ("*",), env_kwargs=env_kwargs, max_sessions=args.max_sessions,
        idle_timeout_s=args.idle_timeout, reconnect_grace_s=args.reconnect_grace,
        max_action_chars=args.max_action_chars, workers=args.workers, execution=args.execution,
        compression=args.ws_compression,
        token=args.token or os.environ.get("ROLLGYM_SERVE_TOKEN") or None,
    )
    server = EnvServer(config, default_env=args.default_env, nemo_gym=args.nemo_gym)

    def ready(url: str) -> None:
        hosted = [i.id for i in server.hub.served()]
        shown = ", ".join(hosted[:6]) + (f" and {len(hosted) - 6} more" if len(hosted) > 6 else "")
        print(json.dumps({"event": "ready", "url": url, "envs": len(hosted)}), flush=True)
        print(f"Serving {shown} at {url} (WebSocket {url.replace('http', 'ws', 1)}/envs/<id>/ws)",
              file=sys.stderr, flush=True)

    if args.replicas == 1 and args.ray is None:
        serve(server, args.host, args.port, on_ready=ready)
        return 0
    if args.ray is None and args.ray_resource:
        raise ConfigError("--ray-resource places replicas on a Ray cluster: add --ray [ADDRESS].")
    fleet: Any = None
    if args.ray is not None:
        from rollgym.serve.ray_replicas import RayReplicaSet

        fleet = RayReplicaSet(server.config, args.replicas, address=args.ray or None, cpus=args.ray_cpus,
                              resources=ray_resources(args.ray_resource), default_env=server.default_env,
                              nemo_gym=server.nemo_gym)
    return serve_replicas(server, args.replicas, args.host, args.port, fleet)


def ray_resources(pairs: list[str]) -> dict[str, float]:
    """``{"envs": 1.0}`` from ``["envs=1"]``; ``ConfigError`` with one sentence for a malformed pair.

    Example:
        >>> ray_resources(["envs=1", "browser=0.5"])
        {'envs': 1.0, 'browser': 0.5}
    """
    from rollgym.core.errors import ConfigError

    resources: dict[str, float] = {}
    for pair in pairs:
        name, _, amount = pair.partition("=")
        try:
            value = float(amount)
        except ValueError:
            value = -1.0
        if not name.strip() or value < 0:
            raise ConfigError(f"--ray-resource takes NAME=AMOUNT with a non-negative amount, got {pair!r}.")
        resources[name.strip()] = value
    return resources


def serve_replicas(server: Any, count: int, host: str, port: int, fleet: Any = None) -> int:
    """Serve ``count`` replicas of ``server``'s configuration behind one router until SIGINT/SIGTERM.

    ``fleet`` is the replica set (default: replica processes on this machine).
    """
    import asyncio

    from rollgym.serve.replicas import ReplicaSet
    from rollgym.serve.router import Router

    if fleet is None:
        fleet = ReplicaSet(server.config, count, default_env=server.default_env, nemo_gym=server.nemo_gym)
    router = Router(fleet)
    hosted = [i.id for i in server.hub.served()]
    kind = "Ray actors" if type(fleet) is not ReplicaSet else "replica processes"

    def ready(url: str) -> None:
        print(json.dumps({"event": "ready", "url": url, "envs": len(hosted), "replicas": count}), flush=True)
        print(f"Serving {len(hosted)} env ids at {url} from {count} {kind}", file=sys.stderr, flush=True)

    runner: Any = asyncio.run
    try:
        import uvloop

        runner = uvloop.run
    except ImportError:
        pass
    runner(router.serve(host, port, on_ready=ready))
    return 0


def docker_command(args: argparse.Namespace) -> list[str]:
    """The ``docker run`` command line for ``--docker-image``: the same server, inside the image.

    The container listens on 8000; ``--host``/``--port`` choose where it is published. The token
    travels as an environment variable, never on the command line.

    Example:
        >>> ns = argparse.Namespace(docker_image="rollgym-env:tools", host="127.0.0.1", port=8000, env=["ToolWorld-v0"],
        ...     token=None, max_sessions=4096, idle_timeout=300.0, reconnect_grace=30.0, max_action_chars=1_000_000,
        ...     workers=32, execution="auto", env_arg=[], default_env=None, nemo_gym=False)
        >>> docker_command(ns)[:8]
        ['docker', 'run', '--rm', '--init', '-p', '127.0.0.1:8000:8000', 'rollgym-env:tools', 'ToolWorld-v0']
    """
    command = ["docker", "run", "--rm", "--init", "-p", f"{args.host}:{args.port}:8000"]
    if args.token or os.environ.get("ROLLGYM_SERVE_TOKEN"):
        command += ["-e", "ROLLGYM_SERVE_TOKEN"]  # docker copies the value from its own environment
    command += [args.docker_image, *args.env]
    command += ["--max-sessions", str(args.max_sessions), "--idle-timeout", str(args.idle_timeout),
                "--reconnect-grace", str(args.reconnect_grace), "--max-action-chars", str(args.max_action_chars),
                "--workers", str(args.workers), "--execution", args.execution]
    for pair in args.env_arg:
        command += ["--env-arg", pair]
    if args.default_env:
        command += ["--default-env", args.default_env]
    if args.nemo_gym:
        command.append("--nemo-gym")
    return command
