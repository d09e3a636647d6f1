"""``RunResult``: what one run in the sandbox did."""

from __future__ import annotations

import signal as _signal
from collections.abc import Mapping
from dataclasses import dataclass, field

LIMIT_LABELS = ("wall", "cpu", "memory", "output", "disk", "files", "file_size", "nproc")


@dataclass(frozen=True)
class RunResult:
    """The outcome of one run.

    Attributes:
        stdout: What the code printed (UTF-8, invalid bytes replaced), cut to ``max_output_bytes``.
        stderr: Errors and tracebacks, cut likewise.
        exit_code: Exit status; ``None`` when a signal ended the process or it never started.
        signal: The signal that ended the process (9 = SIGKILL, 24 = SIGXCPU...), else ``None``.
        timed_out: The wall-clock limit ended it.
        oom: It ran out of memory (an uncaught ``MemoryError`` in Python code).
        truncated: stdout or stderr was cut.
        limits_hit: Which limits it reached, from ``wall``, ``cpu``, ``memory``, ``output``,
            ``disk``, ``files`` (inodes), ``file_size`` and ``nproc`` (it had all the processes it
            may have when it ended).
        elapsed_s: Wall-clock seconds of the run itself.
        cpu_s: CPU seconds it used (user + system).
        files: The output files asked for (``return_files``), path relative to the working folder -> bytes.
        modes: With ``Job.return_modes``, every entry below the working folder -> its ``lstat`` mode,
            read by the supervisor; ``modes_truncated`` when the listing was cut (4 MiB of paths).
        exception: For Python code, the class name of an uncaught exception (``"PermissionError"``...).
        leftovers: Processes still running when the main one ended (all killed then).
        error: Set when the *sandbox* failed (it could not start, its supervisor died, the input
            files did not fit...): a label, a colon and a sentence. The code's own failures are
            not errors here; they are in ``exit_code``, ``exception`` and ``stderr``.
        backend: ``"bwrap"``, ``"process"`` or ``"docker"``.
        total_s: Host-side seconds for the whole call, start-up and clean-up included.
    """

    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = None
    signal: int | None = None
    timed_out: bool = False
    oom: bool = False
    truncated: bool = False
    limits_hit: tuple[str, ...] = ()
    elapsed_s: float = 0.0
    cpu_s: float = 0.0
    files: Mapping[str, bytes] = field(default_factory=dict)
    modes: Mapping[str, int] = field(default_factory=dict)
    modes_truncated: bool = False
    exception: str | None = None
    leftovers: int = 0
    error: str | None = None
    backend: str = ""
    total_s: float = 0.0

    @property
    def ok(self) -> bool:
        """The code ran to completion with exit status 0 and the sandbox did not fail."""
        return self.exit_code == 0 and not self.timed_out and self.error is None

    @property
    def label(self) -> str | None:
        """One word for what went wrong, for logs and ``info``: ``None`` when ``ok``.

        ``"sandbox_error"``, ``"timeout"``, a limit (``"memory"``, ``"cpu"``...), ``"signal"``,
        or ``"exit"`` (a non-zero status).
        """
        if self.error is not None:
            return "sandbox_error"
        if self.timed_out:
            return "timeout"
        if self.limits_hit:
            return self.limits_hit[0]
        if self.signal is not None:
            return "signal"
        if self.exit_code != 0:
            return "exit"
        return None

    def as_text(self, max_chars: int | None = None) -> str:
        """The result as an agent sees it: stdout, then stderr and the status when something went wrong.

        ``max_chars`` cuts stdout and stderr to that many characters each.
        """
        out, err = self.stdout, self.stderr
        cut = self.truncated
        if max_chars is not None:
            cut = cut or len(out) > max_chars or len(err) > max_chars
            out, err = out[:max_chars], err[:max_chars]
        parts = [out.rstrip("\n")] if out else []
        if err.strip():
            parts.append("[stderr]\n" + err.rstrip("\n"))
        if self.error is not None:
            parts.append(f"[sandbox error: {self.error}]")
        elif self.timed_out:
            parts.append("[killed: wall-clock limit reached]")
        elif "output" in self.limits_hit and self.signal is not None:
            parts.append("[killed: far too much output]")
        elif self.signal is not None:
            name = _signal_name(self.signal)
            parts.append(f"[killed by signal {self.signal} ({name}): a resource limit was reached]")
        elif self.exit_code not in (0, None):
            parts.append(f"[exit status {self.exit_code}]")
        if cut:
            parts.append("[output truncated]")
        return "\n".join(parts) if parts else "[no output; use print() to see values]"


def _signal_name(number: int) -> str:
    try:
        return _signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
