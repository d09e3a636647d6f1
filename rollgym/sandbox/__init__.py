"""Isolated code execution: run untrusted Python code or commands under kernel-enforced walls.

The default backend runs each job in a fresh bubblewrap sandbox: new user, pid,
mount, network, IPC, UTS and cgroup namespaces; an unprivileged host uid of its
own with no capabilities; a private tmpfs with a byte and an inode quota as its
only writable place; a read-only view of ``/usr`` and the Python installation and
nothing else of the host; a seccomp filter against cross-process and
kernel-configuration system calls; rlimits; a wall-clock kill of every process; and,
for Python code, an in-process audit hook as a second wall. ``SECURITY.md`` has the
threat model and says which test checks each wall.

>>> from rollgym.sandbox import Sandbox, Limits
>>> box = Sandbox(Limits(wall_s=5))
>>> box.run_python("print(sum(range(10)))").stdout
'45\\n'
>>> box.run_command(["bash", "-c", "echo $((6 * 7))"], limits=Limits(nproc=8)).stdout
'42\\n'

Public API:

* :class:`Sandbox` (``run``, ``run_python``, ``run_command``, ``run_many``, ``session``,
  ``isolation``, ``close``) and :class:`Session` (files persist across runs);
* :class:`Job` (code or argv, ``files``, ``tree``, ``stdin``, ``env``, ``cwd``, ``limits``,
  ``return_files``) and :class:`File`; :class:`Limits`; :class:`RunResult`;
* :class:`Isolation` (which walls are present, measured); :func:`make_sandbox`;
  :func:`shared_sandbox` (one warm-pooled sandbox per configuration, for envs).
"""

from __future__ import annotations

from typing import Any

from rollgym.core.errors import ConfigError
from rollgym.sandbox.isolation import REQUIRED, WALLS, Isolation
from rollgym.sandbox.job import File, Job
from rollgym.sandbox.limits import Limits
from rollgym.sandbox.result import RunResult
from rollgym.sandbox.sandbox import Sandbox, SandboxUnavailableError, Session, shared_sandbox, strict_default

BACKENDS = ("auto", "bwrap", "process", "docker")


def make_sandbox(backend: str = "auto", limits: Limits | None = None, **options: Any) -> Any:
    """A sandbox by backend name: ``"auto"``, ``"bwrap"``, ``"process"`` (see :class:`Sandbox`) or
    ``"docker"`` (:class:`~rollgym.sandbox.docker.DockerSandbox`, Python code only; needs a Docker engine)."""
    if backend == "docker":
        from rollgym.sandbox.docker import DockerSandbox

        return DockerSandbox(limits, **options)
    if backend not in BACKENDS:
        raise ConfigError(f"Unknown sandbox backend {backend!r}; use one of {', '.join(BACKENDS)}.")
    return Sandbox(limits, backend=backend, **options)


__all__ = [
    "BACKENDS",
    "REQUIRED",
    "WALLS",
    "File",
    "Isolation",
    "Job",
    "Limits",
    "RunResult",
    "Sandbox",
    "SandboxUnavailableError",
    "Session",
    "make_sandbox",
    "shared_sandbox",
    "strict_default",
]
