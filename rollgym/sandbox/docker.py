"""``DockerSandbox``: run Python code in a throw-away container (Python code only).

Uses the Docker SDK (``pip install 'rollgym[docker]'``) and a reachable Docker
engine. Each run starts a fresh container from ``image`` (default
``python:3.11-slim``, which must already be pulled: nothing is downloaded at run
time) with no network, a read-only root file system, a small ``tmpfs`` working
directory, all capabilities dropped, ``no-new-privileges``, uid 65534, a memory
limit, a pids limit and one CPU; the same bootstrap as the local backend adds
its rlimits and audit hook inside. The container is removed afterwards.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from rollgym.core.errors import MissingDependencyError
from rollgym.sandbox.isolation import Isolation
from rollgym.sandbox.legacy import SandboxLimits, SandboxResult
from rollgym.sandbox.limits import Limits
from rollgym.sandbox.result import RunResult

_BOOTSTRAP = (Path(__file__).with_name("legacy_bootstrap.py")).read_text(encoding="utf-8")
DEFAULT_IMAGE = "python:3.11-slim"


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


class DockerSandbox:
    """Runs Python code in a fresh, network-less, resource-limited container per call."""

    backend = "docker"

    def __init__(self, limits: SandboxLimits | Limits | None = None, *, image: str = DEFAULT_IMAGE) -> None:
        if isinstance(limits, Limits):
            limits = SandboxLimits(
                timeout_s=min(float(limits.wall_s), 600.0),
                cpu_s=max(1, int(limits.cpu_s)),
                memory_mb=limits.mem_mb,
                max_output_chars=limits.max_output_bytes,
                max_file_mb=limits.disk_mb,
                max_processes=limits.nproc,
            )
        self.limits = limits or SandboxLimits()
        self.image = image
        self.client = docker_client()
        try:
            self.client.images.get(image)
        except Exception as exc:
            raise MissingDependencyError(
                f"Docker image {image!r} is not available locally; run `docker pull {image}` first."
            ) from exc

    def run(self, code: str) -> SandboxResult:
        """Run ``code`` in a new container and return its output; never raises on the code's behaviour."""
        limits = self.limits
        config = {
            "workdir": "/work",
            "cpu_s": limits.cpu_s,
            "memory_bytes": limits.memory_mb * 1024 * 1024,
            "fsize_bytes": limits.max_file_mb * 1024 * 1024,
            "nproc": max(limits.max_processes, 64),  # container uids share one pids cgroup instead
            "uid": None,
            "audit": True,
            "code": code,
        }
        start = time.monotonic()
        container = self.client.containers.run(
            self.image,
            ["python", "-I", "-c", _BOOTSTRAP, json.dumps(config)],
            detach=True,
            network_disabled=True,
            network_mode="none",
            mem_limit=f"{limits.memory_mb}m",
            memswap_limit=f"{limits.memory_mb}m",
            pids_limit=max(limits.max_processes, 1) + 8,
            nano_cpus=1_000_000_000,
            read_only=True,
            tmpfs={"/work": f"size={limits.max_file_mb}m,mode=1777"},
            working_dir="/work",
            user="65534:65534",
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            environment={"HOME": "/work", "TMPDIR": "/work", "OPENBLAS_NUM_THREADS": "1"},
        )
        timed_out = False
        try:
            try:
                status = container.wait(timeout=limits.timeout_s)
                exit_code: int | None = int(status.get("StatusCode", -1))
            except Exception:
                timed_out = True
                container.kill()
                exit_code = -9
            limit = limits.max_output_chars
            stdout = container.logs(stdout=True, stderr=False).decode("utf-8", errors="replace")
            stderr = container.logs(stdout=False, stderr=True).decode("utf-8", errors="replace")
        finally:
            try:
                container.remove(force=True)
            except Exception:
                pass
        truncated = len(stdout) > limit or len(stderr) > limit
        duration = time.monotonic() - start
        return SandboxResult(stdout[:limit], stderr[:limit], exit_code, timed_out, truncated, duration, "docker")

    def run_python(self, code: str) -> RunResult:
        """Run Python source (the :class:`~rollgym.sandbox.Sandbox` interface, Python code only)."""
        old = self.run(code)
        signal = -old.exit_code if old.exit_code is not None and old.exit_code < 0 else None
        return RunResult(
            stdout=old.stdout,
            stderr=old.stderr,
            exit_code=None if signal else old.exit_code,
            signal=signal,
            timed_out=old.timed_out,
            truncated=old.truncated,
            limits_hit=("wall",) if old.timed_out else (),
            elapsed_s=old.duration_s,
            backend="docker",
            total_s=old.duration_s,
        )

    @property
    def isolation(self) -> Isolation:
        """What the container promises (not probed: the engine is not reachable in this project's CI)."""
        walls = {"pid_namespace": True, "mount_namespace": True, "network_namespace": True, "ipc_namespace": True,
                 "uts_namespace": True, "unprivileged_uid": True, "no_capabilities": True, "rlimits": True,
                 "private_tmpfs": True, "read_only_system": True, "process_tree_kill": True, "audit_hook": True}
        return Isolation("docker", walls, {"seccomp": "Docker's default profile", "inode_quota": "not set"})

    def close(self) -> None:
        """Close the connection to the Docker engine."""
        try:
            self.client.close()
        except Exception:
            pass
