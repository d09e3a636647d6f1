"""What every sandbox backend shares: limits, the result of a run, and the backend protocol."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from rollgym.core.errors import ConfigError


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits of one code run.

    Attributes:
        timeout_s: Wall-clock limit; the process group is killed after it.
        cpu_s: CPU-time limit (``RLIMIT_CPU``).
        memory_mb: Address-space limit (``RLIMIT_AS``) or container memory limit.
        max_output_chars: Characters of stdout (and of stderr) returned; the rest is cut.
        max_file_mb: Largest file the code may write, stdout included (``RLIMIT_FSIZE``).
        max_processes: ``RLIMIT_NPROC`` (or the container's pids limit).
    """

    timeout_s: float = 10.0
    cpu_s: int = 10
    memory_mb: int = 1024
    max_output_chars: int = 8000
    max_file_mb: int = 16
    max_processes: int = 1

    def __post_init__(self) -> None:
        if not 0 < self.timeout_s <= 600:
            raise ConfigError(f"timeout_s must be in (0, 600] seconds, got {self.timeout_s!r}.")
        for name in ("cpu_s", "memory_mb", "max_output_chars", "max_file_mb", "max_processes"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}.")
        if self.memory_mb < 64:
            raise ConfigError(f"memory_mb must be at least 64 (Python needs it to start), got {self.memory_mb}.")


@dataclass(frozen=True)
class SandboxResult:
    """The outcome of one run.

    Attributes:
        stdout: What the code printed (cut to ``max_output_chars``).
        stderr: Errors and tracebacks (cut likewise).
        exit_code: The process exit status; negative for a signal, ``None`` if it never ran.
        timed_out: Whether the wall-clock limit killed it.
        truncated: Whether stdout or stderr was cut.
        duration_s: Wall-clock seconds, start to finish.
        backend: ``"local"`` or ``"docker"``.
    """

    stdout: str
    stderr: str
    exit_code: int | None
    timed_out: bool
    truncated: bool
    duration_s: float
    backend: str

    @property
    def ok(self) -> bool:
        """Whether the code ran to completion with exit status 0."""
        return self.exit_code == 0 and not self.timed_out

    def as_text(self) -> str:
        """The result as the agent sees it: stdout, then stderr and the status if anything went wrong."""
        parts = [self.stdout.rstrip("\n")] if self.stdout else []
        if self.stderr.strip():
            parts.append("[stderr]\n" + self.stderr.rstrip("\n"))
        if self.timed_out:
            parts.append("[killed: wall-clock limit reached]")
        elif self.exit_code is not None and self.exit_code < 0:
            parts.append(f"[killed by signal {-self.exit_code}: a resource limit was reached]")
        elif self.exit_code not in (0, None):
            parts.append(f"[exit status {self.exit_code}]")
        if self.truncated:
            parts.append("[output truncated]")
        return "\n".join(parts) if parts else "[no output; use print() to see values]"


@runtime_checkable
class Sandbox(Protocol):
    """Runs Python source in isolation and returns what it printed."""

    backend: str
    limits: SandboxLimits

    def run(self, code: str) -> SandboxResult: ...

    def close(self) -> None: ...
