"""``Limits``: what one run in the sandbox may use."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from rollgym.core.errors import ConfigError


@dataclass(frozen=True)
class Limits:
    """Resource limits of one run (or, for ``disk_mb`` and ``max_files``, of one session).

    Attributes:
        wall_s: Wall-clock seconds; then every process of the run is killed (``timed_out``).
        cpu_s: CPU seconds per process (``RLIMIT_CPU``; SIGXCPU, then SIGKILL a second later).
        mem_mb: Address space per process in MiB (``RLIMIT_AS``; allocations fail, Python
            raises ``MemoryError``). A run of ``nproc`` processes may use up to ``nproc``
            times this, plus its files (the tmpfs is memory).
        nproc: Processes and threads the code may have at once, itself included. ``1``
            (the default) means no ``fork``, no threads and, for Python code, no ``exec``:
            seccomp refuses them. Shells, ``pytest`` and compilers need more (e.g. 32).
        max_output_bytes: Bytes of stdout and of stderr kept each; the rest is dropped and
            ``truncated`` set. Far past it (16x, at least 1 MiB more) the run is killed.
        disk_mb: Size of the sandbox's private tmpfs (its only writable place), in MiB;
            also the largest file (``RLIMIT_FSIZE``).
        max_files: Inodes of that tmpfs: files, folders and links together.
        nofile: Open file descriptors per process (``RLIMIT_NOFILE``).

    Example:
        >>> Limits(wall_s=5, nproc=32).nproc
        32
    """

    wall_s: float = 10.0
    cpu_s: float = 10.0
    mem_mb: int = 1024
    nproc: int = 1
    max_output_bytes: int = 64 * 1024
    disk_mb: int = 64
    max_files: int = 4096
    nofile: int = 256

    def __post_init__(self) -> None:
        for name, low, high in (("wall_s", 0.0, 3600.0), ("cpu_s", 0.0, 3600.0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not low < value <= high:
                raise ConfigError(f"Limits.{name} must be a number of seconds in (0, {high:g}], got {value!r}.")
        bounds = {"mem_mb": (64, 1 << 20), "nproc": (1, 4096), "max_output_bytes": (1, 1 << 30),
                  "disk_mb": (1, 1 << 20), "max_files": (16, 1 << 24), "nofile": (16, 1 << 20)}
        for name, (low, high) in bounds.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ConfigError(f"Limits.{name} must be an integer from {low} to {high}, got {value!r}.")

    def replace(self, **changes: Any) -> Limits:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)

    def to_wire(self) -> dict[str, Any]:
        """The per-run limits as the supervisor reads them."""
        return {
            "wall_s": float(self.wall_s),
            "cpu_s": max(1, int(-(-self.cpu_s // 1))),
            "mem_bytes": self.mem_mb << 20,
            "nproc": self.nproc,
            "nofile": self.nofile,
            "fsize_bytes": self.disk_mb << 20,
        }

    def as_dict(self) -> dict[str, Any]:
        """The fields as a plain dict."""
        return asdict(self)
