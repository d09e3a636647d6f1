"""rollgym serve-env under N concurrent sessions, beside OpenEnv's own server on an equivalent trivial env.

Each run starts one server in a subprocess, opens N WebSocket sessions at once (all held open for
the whole run), and has every session play ``--steps`` steps: reset, then steps (Countdown episodes
are one step long, so a Countdown session resets before every step). Success is a session that
finished every step without an error or a dropped connection. Steps/s counts successful steps over
the wall time of the step phase; latencies are per step, send to reply, on the client.

Workloads (the same client and the same messages, OpenEnv's ``{"type": "step", "data": ...}``):

* ``echo/openenv``: OpenEnv's ``create_app`` (openenv-core) serving a trivial env (the reply
  echoes the action's length; reward 1.0), ``max_concurrent_envs=N``.
* ``echo/rollgym``: rollgym serve-env serving the same trivial env as a rollgym text env.
* ``Countdown-v0`` and ``ToolWorld-v0`` (a ``contacts_search`` call per step) on rollgym serve-env.

Replica rows (``--replicas 1 2``): the same load on Countdown-v0 through ``serve-env --replicas N``
(one router in front of N replica processes; ``1`` is the plain single-process server); with
``--ray``, also ``serve-env --replicas N --ray`` (each replica in a Ray actor of a local Ray), side by
side with OpenEnv's published scale figures and a paper estimate for 16,384 sessions on two
8-core nodes that states the numbers it rests on. Written to ``bench/results/server_replicas.json``.

Usage::

    python bench/bench_server.py                       # N = 256, 1024, 2048, 4096
    python bench/bench_server.py --sessions 2048 --steps 5
    python bench/bench_server.py --replicas 1 2 --sessions 512 --steps 5
    python bench/bench_server.py --replicas 1 2 --ray --sessions 256 --steps 3

OpenEnv's server needs ``openenv-core`` importable by this Python; without it its rows say so.
The machine is shared, so figures vary between runs; read them as ratios taken in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TOOL_CALL = '<tool_call>{"name": "contacts_search", "arguments": {"query": "a"}}</tool_call>'

ROLLGYM_SERVER = """
import sys
from rollgym.core.registration import register_env
register_env("BenchEcho-v0", "bench_server:EchoTextEnv", description="echo", family="puzzles",
             components=["rollgym.core.task"])
from rollgym.serve.server import EnvServer, serve
from rollgym.serve.sessions import ServeConfig
server = EnvServer(ServeConfig(env_ids=("BenchEcho-v0", "Countdown-v0", "ToolWorld-v0"),
                               max_sessions=int(sys.argv[1]) + 16, idle_timeout_s=600.0))
serve(server, "127.0.0.1", 0, on_ready=lambda url: print(url, flush=True))
"""

REPLICAS_SERVER = """
import asyncio, sys
from rollgym.serve.replicas import ReplicaSet
from rollgym.serve.router import Router
from rollgym.serve.sessions import ServeConfig
config = ServeConfig(env_ids=("Countdown-v0", "ToolWorld-v0"), max_sessions=int(sys.argv[1]) + 16, idle_timeout_s=600.0)
if sys.argv[3:] == ["ray"]:  # each replica in a Ray actor of a local Ray instance
    from rollgym.serve.ray_replicas import RayReplicaSet
    router = Router(RayReplicaSet(config, int(sys.argv[2])))
else:
    router = Router(ReplicaSet(config, int(sys.argv[2])))
try:
    import uvloop
    run = uvloop.run
except ImportError:
    run = asyncio.run
run(router.serve("127.0.0.1", 0, on_ready=lambda url: print(url, flush=True)))
"""

#: OpenEnv's published scale figures (its docs): concurrent sessions on one 8-core host, and on two nodes.
OPENENV_PUBLISHED = {"one_host": {"sessions": 2048, "cores": 8}, "two_nodes": {"sessions": 16384}}

OPENENV_SERVER = """
import sys, socket, uvicorn
from openenv.core.env_server.http_server import create_fastapi_app
from bench_server import openenv_echo_classes
Env, Action, Obs = openenv_echo_classes()
app = create_fastapi_app(Env, Action, Obs, max_concurrent_envs=int(sys.argv[1]) + 16)
sock = socket.socket(); sock.bind(("127.0.0.1", 0)); sock.listen(8192)
print(f"http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
uvicorn.Server(uvicorn.Config(app, log_level="warning", ws_max_size=2**24, backlog=8192)).run(sockets=[sock])
"""


# -- the trivial env, once for each server ---------------------------------------------------------------
def _echo_reply(text: str) -> str:
    return f"received {len(text)} characters"


try:
    from rollgym.core.env import SingleTurnEnv, TextEnv  # noqa: F401
    from rollgym.core.task import Task

    class _EchoSource:
        family = "bench"

        def task(self, index: int, split: str = "train") -> Task:
            return Task(id=f"echo-{index}", env_id="BenchEcho-v0", prompt="Say anything.", answer=None, meta={})

        def size(self, split: str) -> int | None:
            return None

    class EchoTextEnv(TextEnv):
        """A rollgym text env that answers every action with its length; reward 1.0; never ends."""

        default_env_id = "BenchEcho-v0"

        def __init__(self, split: str = "train") -> None:
            super().__init__(_EchoSource(), split=split)

        def _start(self, task: Task) -> str:
            return task.prompt

        def _advance(self, action: str):  # type: ignore[no-untyped-def]
            return _echo_reply(action), 1.0, False, False, {}
except ImportError:  # pragma: no cover - the OpenEnv server's process imports this module too
    pass


def openenv_echo_classes():  # type: ignore[no-untyped-def]
    """The same trivial env as an OpenEnv ``Environment`` (openenv-core 0.3.0's interfaces)."""
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, Observation, State

    class EchoAction(Action):
        text: str

    class EchoObservation(Observation):
        text: str = ""

    class EchoEnvironment(Environment):
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            super().__init__()
            self._state = State(episode_id=None, step_count=0)

        def reset(self, seed=None, episode_id=None, **kwargs):  # type: ignore[no-untyped-def]
            self._state = State(episode_id=episode_id, step_count=0)
            return EchoObservation(text="Say anything.", done=False, reward=None)

        def step(self, action, timeout_s=None, **kwargs):  # type: ignore[no-untyped-def]
            self._state.step_count += 1
            return EchoObservation(text=_echo_reply(action.text), done=False, reward=1.0)

        @property
        def state(self):  # type: ignore[no-untyped-def]
            return self._state

    return EchoEnvironment, EchoAction, EchoObservation


# -- the load -----------------------------------------------------------------------------------------
@dataclass
class Result:
    name: str
    server: str
    sessions: int
    ok: int
    steps: int
    seconds: float
    latencies: list[float]
    note: str = ""

    def row(self) -> list[str]:
        if not self.latencies:
            return [self.name, self.server, str(self.sessions), "-", "-", "-", "-", self.note]
        lat = sorted(self.latencies)
        p50 = statistics.median(lat) * 1000
        p99 = lat[min(len(lat) - 1, int(0.99 * len(lat)))] * 1000
        return [self.name, self.server, str(self.sessions), f"{100 * self.ok / self.sessions:.1f}%",
                f"{self.steps / self.seconds:,.0f}", f"{p50:.1f}", f"{p99:.1f}", self.note]


async def _session(url: str, workload: str, steps: int, start: asyncio.Event, latencies: list[float],
                   ready: list[int]) -> int:
    from websockets.asyncio.client import connect

    path = {"echo": "/ws"}.get(workload, f"/envs/{workload}/ws")
    if workload == "echo" and "rollgym" in url:
        path = "/envs/BenchEcho-v0/ws"
    base = url.split("#")[0].replace("http://", "ws://")
    done = 0
    async with connect(base + path, max_size=None, open_timeout=120, ping_interval=None) as ws:
        async def ask(message: dict) -> dict:
            t0 = time.perf_counter()
            await ws.send(json.dumps(message))
            reply = json.loads(await asyncio.wait_for(ws.recv(), 60))  # a stuck session fails, not the run
            if reply.get("type") == "error":
                raise RuntimeError(reply["data"])
            if message["type"] == "step":
                latencies.append(time.perf_counter() - t0)
            return reply

        compact = {"compact": True} if "rollgym" in url else {}
        await ask({"type": "reset", "data": {"seed": 1, **compact}})
        ready.append(1)
        await start.wait()
        action = {"ToolWorld-v0": TOOL_CALL, "Countdown-v0": "<answer>1+2</answer>"}.get(workload, "hello")
        for i in range(steps):
            if workload == "Countdown-v0" and i:
                await ask({"type": "reset", "data": {"seed": i, **compact}})
            await ask({"type": "step", "data": {"text": action}})
            done += 1
        await ws.send(json.dumps({"type": "close"}))
    return done


async def _load(url: str, workload: str, sessions: int, steps: int) -> tuple[int, int, float, list[float]]:
    start = asyncio.Event()
    step_latencies: list[float] = []
    ready: list[int] = []

    async def one(i: int) -> int:
        await asyncio.sleep(i * 0.001)  # a connect ramp, as clients arrive
        return await _session(url, workload, steps, start, step_latencies, ready)

    tasks = [asyncio.ensure_future(one(i)) for i in range(sessions)]
    deadline = time.monotonic() + 600
    while len(ready) + sum(1 for t in tasks if t.done()) < sessions and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    began = time.perf_counter()
    start.set()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    seconds = time.perf_counter() - began
    ok = sum(1 for r in results if r == steps)
    done = sum(r for r in results if isinstance(r, int))
    return ok, done, seconds, step_latencies


def run_one(kind: str, workload: str, sessions: int, steps: int, python: str) -> Result:
    """One server (``openenv``, ``rollgym``, or ``rollgym-rN`` for N replicas behind the router) under load."""
    script = OPENENV_SERVER if kind == "openenv" else ROLLGYM_SERVER
    extra: list[str] = []
    if kind.startswith("rollgym-ray-r"):
        script, extra = REPLICAS_SERVER, [kind.removeprefix("rollgym-ray-r"), "ray"]
    elif kind.startswith("rollgym-r"):
        script, extra = REPLICAS_SERVER, [kind.removeprefix("rollgym-r")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "bench"),
                                                         os.environ.get("PYTHONPATH", "")])}
    import tempfile

    log = tempfile.TemporaryFile(mode="w+")  # a pipe nobody reads would fill up and stall the server
    proc = subprocess.Popen([python, "-c", script, str(sessions), *extra], stdout=subprocess.PIPE, stderr=log,
                            text=True, env=env, cwd=REPO)
    try:
        line = proc.stdout.readline().strip() if proc.stdout else ""
        if not line.startswith("http"):
            proc.wait(timeout=30)
            log.seek(0)
            err = log.read()[-300:]
            return Result(workload, kind, sessions, 0, 0, 1.0, [], f"server did not start: {err.strip()}")
        url = line + ("#rollgym" if kind.startswith("rollgym") else "")
        try:
            import uvloop

            runner = uvloop.run
        except ImportError:
            runner = asyncio.run
        ok, done, seconds, latencies = runner(_load(url, workload, sessions, steps))
        return Result(workload, kind, sessions, ok, done, seconds, latencies)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _openenv_python() -> str | None:
    """A Python that can import openenv-core: this one, or $OPENENV_PYTHON."""
    for python in (sys.executable, os.environ.get("OPENENV_PYTHON")):
        if python and subprocess.run([python, "-c", "import openenv.core"], capture_output=True).returncode == 0:
            return python
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, nargs="+", default=[256, 1024, 2048, 4096])
    parser.add_argument("--steps", type=int, default=5, help="steps per session (default: 5)")
    parser.add_argument("--workloads", nargs="+", default=["echo", "Countdown-v0", "ToolWorld-v0"])
    parser.add_argument("--repeat", type=int, default=2,
                        help="runs per row, in alternating server order; the table keeps each row's best (default: 2)")
    parser.add_argument("--replicas", type=int, nargs="+", default=None,
                        help="instead: Countdown-v0 through serve-env with each replica count (1 is the plain server)")
    parser.add_argument("--ray", action="store_true",
                        help="with --replicas: also each count above 1 with the replicas in Ray actors (--ray)")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    if args.replicas:
        replica_rows(args.replicas, args.sessions, args.steps, args.repeat, ray=args.ray)
        return
    openenv_python = _openenv_python()
    results = []
    for sessions in args.sessions:
        for workload in args.workloads:
            kinds = ["openenv", "rollgym"] if workload == "echo" else ["rollgym"]
            best: dict[str, Result] = {}
            for attempt in range(args.repeat):
                for kind in kinds if attempt % 2 == 0 else kinds[::-1]:
                    if kind == "openenv" and openenv_python is None:
                        best[kind] = Result(workload, kind, sessions, 0, 0, 1.0, [],
                                            "skipped: openenv-core not importable (set OPENENV_PYTHON)")
                        continue
                    result = run_one(kind, workload, sessions, args.steps,
                                     openenv_python if kind == "openenv" else sys.executable)
                    print(" | ".join(result.row()), flush=True, file=sys.stderr)
                    old = best.get(kind)
                    if old is None or (result.ok, result.steps / result.seconds) > (old.ok, old.steps / old.seconds):
                        best[kind] = result
            results += [best[kind] for kind in kinds]
    header = ["workload", "server", "sessions", "success", "steps/s", "p50 ms", "p99 ms", "note"]
    rows = [header, *[r.row() for r in results]]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    print(f"\nserve-env bench: {args.steps} steps per session, all sessions open at once; best of {args.repeat} runs; "
          f"{os.cpu_count()} CPUs\n")
    for k, row in enumerate(rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
        if k == 0:
            print("  ".join("-" * w for w in widths))
    by = {(r.name, r.server, r.sessions): r for r in results}
    for sessions in args.sessions:
        ours, theirs = by.get(("echo", "rollgym", sessions)), by.get(("echo", "openenv", sessions))
        if ours and theirs and ours.latencies and theirs.latencies and theirs.steps:
            ratio = (ours.steps / ours.seconds) / (theirs.steps / theirs.seconds)
            print(f"echo, {sessions} sessions: rollgym serve-env steps/s = {ratio:.2f} x OpenEnv's server")
    shown = [s for s in (2048, 4096) if s in args.sessions]
    pairs = [(by.get(("echo", "rollgym", s)), by.get(("echo", "openenv", s))) for s in shown]
    if (args.steps, args.repeat) == (parser.get_default("steps"), parser.get_default("repeat")) and shown and all(
            ours and theirs and ours.steps and theirs.steps for ours, theirs in pairs):
        from publish import save_results

        def rate(r: Result) -> float:
            return r.steps / r.seconds

        ok = min(100 * ours.ok / ours.sessions for ours, _ in pairs if ours)
        save_results("server", {"steps": args.steps, "repeat": args.repeat, "rows": [
            {"workload": r.name, "server": r.server, "sessions": r.sessions, "ok": r.ok, "steps": r.steps,
             "seconds": r.seconds, "p50_ms": r.row()[5], "p99_ms": r.row()[6], "note": r.note} for r in results]}, [
            {"what": f"Env server, {' / '.join(f'{s:,}' for s in shown)} concurrent sessions, trivial env "
                     f"(steps/s, {'100%' if ok == 100 else f'at least {ok:.0f}%'} success)",
             "rollgym": " / ".join(f"{rate(o):,.0f}" for o, _ in pairs if o),
             "peer": "OpenEnv's server " + " / ".join(f"{rate(t):,.0f}" for _, t in pairs if t),
             "ratio": " / ".join(f"{rate(o) / rate(t):.1f}x" for o, t in pairs if o and t)},
        ], command=" ".join(["python bench/bench_server.py", *sys.argv[1:]]), load_before=load_before)


def replica_rows(counts: list[int], session_counts: list[int], steps: int, repeat: int, *, ray: bool = False) -> None:
    """Sessions and steps/s for each replica count, OpenEnv's published figures, and the 16,384-session estimate.

    With ``ray``, each count above 1 also runs with its replicas in Ray actors; the rows of one session count
    alternate their order between repeats, so neither kind always runs first."""
    cores = os.cpu_count() or 1
    arms = [(count, "process") for count in counts] + [(count, "ray") for count in counts if ray and count > 1]
    kinds = {(count, kind): "rollgym" if count == 1 else f"rollgym-r{count}" if kind == "process"
             else f"rollgym-ray-r{count}" for count, kind in arms}
    results: list[tuple[int, Result]] = []
    ray_results: list[tuple[int, Result]] = []
    for sessions in session_counts:
        best: dict[tuple[int, str], Result] = {}
        for attempt in range(repeat):
            for arm in arms if attempt % 2 == 0 else arms[::-1]:
                result = run_one(kinds[arm], "Countdown-v0", sessions, steps, sys.executable)
                print(f"replicas={arm[0]} ({arm[1]}) | " + " | ".join(result.row()), flush=True, file=sys.stderr)
                old = best.get(arm)
                if old is None or (result.ok, result.steps / result.seconds) > (old.ok, old.steps / old.seconds):
                    best[arm] = result
        results += [(count, best[(count, kind)]) for count, kind in arms if kind == "process"]
        ray_results += [(count, best[(count, kind)]) for count, kind in arms if kind == "ray"]
    header = ["replicas", "sessions", "success", "steps/s", "p50 ms", "p99 ms"]
    rows = [header] + [[str(count), *r.row()[2:7]] for count, r in results] + \
        [[f"{count} (Ray actors)", *r.row()[2:7]] for count, r in ray_results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    print(f"\nserve-env replicas, Countdown-v0: {steps} steps per session, best of {repeat}; {cores} CPUs shared by "
          "the servers and the client\n")
    for k, row in enumerate(rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
        if k == 0:
            print("  ".join("-" * w for w in widths))
    top_sessions = max(session_counts)
    top = {count: r for count, r in results if r.sessions == top_sessions and r.latencies}
    widest = max(top) if top else None
    estimate = None
    if widest is not None:
        rate = top[widest].steps / top[widest].seconds
        per_core = rate / cores  # the client shared these cores, so this understates a server core
        estimate = {"sessions": OPENENV_PUBLISHED["two_nodes"]["sessions"], "nodes": 2, "cores_per_node": 8,
                    "replicas_per_node": 8, "measured_steps_per_s": rate, "measured_replicas": widest,
                    "measured_sessions": top_sessions, "measured_cores": cores, "steps_per_s_per_core": per_core,
                    "estimated_steps_per_s": per_core * 16}
        print(f"\nOpenEnv publishes {OPENENV_PUBLISHED['one_host']['sessions']:,} concurrent sessions on "
              f"{OPENENV_PUBLISHED['one_host']['cores']} cores and {OPENENV_PUBLISHED['two_nodes']['sessions']:,} on "
              "two nodes.")
        print(f"Paper estimate, 16,384 sessions on 2 nodes x 8 cores (one `serve-env --replicas 8` per node, 1,024 "
              f"sessions per replica, clients elsewhere): {rate:,.0f} steps/s measured with {widest} replica(s) and "
              f"{top_sessions:,} sessions on {cores} shared cores = {per_core:,.0f} per core; x 16 cores = "
              f"{per_core * 16:,.0f} steps/s, assuming steps/s grows with cores (replicas share nothing) and "
              "memory holds 1,024 sessions per replica. Not measured.")
    from publish import save_results

    figures = {"steps": steps, "repeat": repeat, "cores": cores, "openenv_published": OPENENV_PUBLISHED,
               "estimate_16384": estimate, "rows": [
                   {"replicas": count, "sessions": r.sessions, "ok": r.ok, "steps": r.steps, "seconds": r.seconds,
                    "p50_ms": statistics.median(r.latencies) * 1000 if r.latencies else None, "note": r.note}
                   for count, r in results],
               "ray_rows": [
                   {"replicas": count, "sessions": r.sessions, "ok": r.ok, "steps": r.steps, "seconds": r.seconds,
                    "p50_ms": statistics.median(r.latencies) * 1000 if r.latencies else None, "note": r.note}
                   for count, r in ray_results]}
    readme: list[dict[str, str]] = []
    if top and estimate is not None:
        shown = sorted(top)
        on_ray = {count: r for count, r in ray_results if r.sessions == top_sessions and r.latencies}
        readme.append({
            "what": f"Env server replicas, {top_sessions:,} sessions, Countdown-v0 (steps/s with "
                    f"{' / '.join(str(c) for c in shown)} replica processes"
                    + "".join(f" / {c} Ray-actor replicas" for c in sorted(on_ray)) + f", {cores} shared cores)",
            "rollgym": " / ".join([f"{top[c].steps / top[c].seconds:,.0f}" for c in shown]
                                  + [f"{on_ray[c].steps / on_ray[c].seconds:,.0f}" for c in sorted(on_ray)]),
            "peer": "OpenEnv's docs: 2,048 sessions on 8 cores; 16,384 on 2 nodes",
            "ratio": f"16,384 sessions on 2x8 cores, paper estimate: {estimate['estimated_steps_per_s']:,.0f} steps/s",
        })
    save_results("server_replicas", figures, readme,
                 command=f"python bench/bench_server.py --replicas {' '.join(map(str, counts))}"
                         f"{' --ray' if ray else ''} --sessions "
                         f"{' '.join(map(str, session_counts))} --steps {steps} --repeat {repeat}")


if __name__ == "__main__":
    main()
