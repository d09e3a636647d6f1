"""``DockerSandbox``: run Python code in a throw-away container (Python code only).

Uses the Docker SDK (``pip install 'rollgym[docker]'``) and a reachable Docker
engine. Each run starts a fresh container from ``image`` (default
``python:3.11-slim``, which must already be pulled: nothing is downloaded at run
time). The engine gives the walls: no network, a read-only root file system, a
small ``tmpfs`` working directory, all capabilities dropped,
``no-new-privileges``, uid 65534, a memory limit, a pids limit, one CPU, and
``RLIMIT_CPU``/``RLIMIT_FSIZE``/``RLIMIT_NOFILE`` as container ulimits. Inside, the
code runs under the same runner as the local sandbox, :mod:`rollgym.sandbox.inside.pyrun`
(its audit hook, and the value of a final expression printed): its source is sent
in the container's command line, so nothing is mounted from the host. The
container is removed afterwards.

No engine runs on rollgym's development machine or CI: the container's command
is tested by running it with the host's Python (``tests/sandbox/test_docker_backend.py``),
and the end-to-end test skips, with the reason, where no engine is reachable.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from rollgym.core.errors import MissingDependencyError
from rollgym.sandbox.isolation import Isolation
from rollgym.sandbox.limits import Limits
from rollgym.sandbox.result import RunResult

DEFAULT_IMAGE = "python:3.11-slim"
WORKDIR = "/work"
PYRUN_SOURCE = (Path(__file__).parent / "inside" / "pyrun.py").read_text(encoding="utf-8")

# The container's first code: load pyrun from its source (it imports the standard library only),
# install its audit hook and run the job's code with it.
LOADER = """\
import json, sys, types
config = json.loads(sys.argv[1])
pyrun = types.ModuleType("rollgym_pyrun")
exec(compile(config["pyrun"], "pyrun.py", "exec"), pyrun.__dict__)
pyrun.add_hook(pyrun.make_hook(pyrun.real_roots(tuple(config["write_roots"])), pyrun.python_roots(), False))
status, _ = pyrun.run_code(config["code"])
sys.stdout.flush()
sys.stderr.flush()
raise SystemExit(status)
"""


def docker_client() -> Any:
    """A connected Docker client, or :class:`MissingDependencyError` saying why there is none."""
    try:
        import docker
    except ImportError as exc:
        raise MissingDependencyError(
            "The docker sandbox needs the Docker SDK; install it with pip install 'rollgym[docker]'."
        ) from exc
    try:
        client = docker.from_env(timeout=10)
        client.ping()
    except Exception as exc:
        raise MissingDependencyError(
            f"No Docker engine is reachable ({type(exc).__name__}); start Docker or use sandbox='local'."
        ) from exc
    return client


def container_command(code: str, python: str = "python") -> list[str]:
    """The argv a container runs for ``code``: ``python -I -c LOADER CONFIG`` (pyrun's source in CONFIG)."""
    config = {"pyrun": PYRUN_SOURCE, "write_roots": [WORKDIR], "code": code}
    return [python, "-I", "-c", LOADER, json.dumps(config)]


def container_options(limits: Limits, image: str = DEFAULT_IMAGE) -> dict[str, Any]:
    """The keyword arguments of ``client.containers.run`` (besides the command) for one run under ``limits``."""
    from docker.types import Ulimit

    cpu_s = max(1, int(-(-limits.cpu_s // 1)))
    fsize = limits.disk_mb << 20
    return {
        "image": image,
        "detach": True,
        "network_disabled": True,
        "network_mode": "none",
        "mem_limit": f"{limits.mem_mb}m",
        "memswap_limit": f"{limits.mem_mb}m",
        "pids_limit": max(limits.nproc, 1) + 8,  # the container's processes share one pids cgroup
        "nano_cpus": 1_000_000_000,
        "read_only": True,
        "tmpfs": {WORKDIR: f"size={limits.disk_mb}m,nr_inodes={limits.max_files},mode=1777"},
        "working_dir": WORKDIR,
        "user": "65534:65534",
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "ulimits": [Ulimit(name="cpu", soft=cpu_s, hard=cpu_s + 1), Ulimit(name="fsize", soft=fsize, hard=fsize),
                    Ulimit(name="nofile", soft=limits.nofile, hard=limits.nofile)],
        "environment": {"HOME": WORKDIR, "TMPDIR": WORKDIR, "OPENBLAS_NUM_THREADS": "1"},
    }


class DockerSandbox:
    """Runs Python code in a fresh, network-less, resource-limited container per call.

    Args:
        limits: The limits of every run (default :class:`~rollgym.sandbox.Limits`); ``wall_s`` is
            capped at 600 s.
        image: A locally available image with ``python`` on its path.
    """

    backend = "docker"

    def __init__(self, limits: Limits | None = None, *, image: str = DEFAULT_IMAGE) -> None:
        self.limits = limits or Limits()
        self.image = image
        self.client = docker_client()
        try:
            self.client.images.get(image)
        except Exception as exc:
            raise MissingDependencyError(
                f"Docker image {image!r} is not available locally; run `docker pull {image}` first."
            ) from exc

    def run_python(self, code: str) -> RunResult:
        """Run Python source in a new container (the :class:`~rollgym.sandbox.Sandbox` interface, Python only);
        never raises on the code's behaviour."""
        limits = self.limits
        start = time.monotonic()
        try:
            container = self.client.containers.run(command=container_command(code),
                                                   **container_options(limits, self.image))
        except Exception as exc:  # the engine refused: a sandbox failure, not the code's
            return RunResult(error=f"sandbox_error: the container did not start ({type(exc).__name__}: {exc})"[:300],
                             backend="docker", total_s=time.monotonic() - start)
        timed_out = False
        try:
            try:
                status = container.wait(timeout=min(float(limits.wall_s), 600.0))
                exit_code: int | None = int(status.get("StatusCode", -1))
            except Exception:
                timed_out = True
                container.kill()
                exit_code = None
            stdout = container.logs(stdout=True, stderr=False).decode("utf-8", errors="replace")
            stderr = container.logs(stdout=False, stderr=True).decode("utf-8", errors="replace")
        finally:
            try:
                container.remove(force=True)
            except Exception:
                pass
        elapsed = time.monotonic() - start
        limit = limits.max_output_bytes
        # the engine reports a process killed by a signal as 128 + the signal
        signal = exit_code - 128 if exit_code is not None and 128 < exit_code <= 128 + 64 else None
        return RunResult(
            stdout=stdout[:limit],
            stderr=stderr[:limit],
            exit_code=None if timed_out or signal else exit_code,
            signal=9 if timed_out else signal,
            timed_out=timed_out,
            truncated=len(stdout) > limit or len(stderr) > limit,
            limits_hit=("wall",) if timed_out else (),
            elapsed_s=elapsed,
            backend="docker",
            total_s=elapsed,
        )

    @property
    def isolation(self) -> Isolation:
        """What the container promises (not probed: no engine is reachable in this project's CI)."""
        walls = {"pid_namespace": True, "mount_namespace": True, "network_namespace": True, "ipc_namespace": True,
                 "uts_namespace": True, "unprivileged_uid": True, "no_capabilities": True, "rlimits": True,
                 "private_tmpfs": True, "inode_quota": True, "read_only_system": True, "host_files_hidden": True,
                 "process_tree_kill": True,
                 "audit_hook": True}
        return Isolation("docker", walls, {"seccomp": "Docker's default profile"})

    def close(self) -> None:
        """Close the connection to the Docker engine."""
        try:
            self.client.close()
        except Exception:
            pass
