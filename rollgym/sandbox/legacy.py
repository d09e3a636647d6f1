"""The sandbox the MATH tool used before :class:`rollgym.sandbox.Sandbox`: one limited process per run.

Kept for the deprecated ``rollgym.envs.math.sandbox`` alias, as the baseline that
``bench/bench_sandbox.py`` compares against, and for the Docker backend's bootstrap.
New code uses :mod:`rollgym.sandbox`. What follows is how it works.
``LocalSandbox``: run Python code in a separate, limited process on this machine.

Each run is ``python -I -c <bootstrap>`` (same interpreter, isolated mode: no
user site-packages, no ``PYTHON*`` variables, no current directory on
``sys.path``) in a fresh temporary directory that is deleted afterwards, with a
minimal environment and stdin closed after the code is read.

What the kernel enforces:

* ``RLIMIT_CPU`` (CPU seconds; the process is killed by SIGXCPU), ``RLIMIT_AS``
  (address space; allocations fail with ``MemoryError``), ``RLIMIT_FSIZE``
  (bytes per file, stdout included), ``RLIMIT_NOFILE`` (64), ``RLIMIT_CORE`` (0),
  ``RLIMIT_NPROC`` (1 by default: no fork, no threads);
* no network: when ``unshare`` can create a network namespace (root, or
  unprivileged user namespaces), the process runs in a new, empty one, so even
  a socket that got past the audit hook reaches nothing, not even the host's
  127.0.0.1;
* when the parent runs as root and the Python installation is readable by
  others, the code runs as ``nobody`` (uid 65534): file permissions apply and
  ``RLIMIT_NPROC`` is enforced. The kernel never applies ``RLIMIT_NPROC`` to
  uid 0, so where the code must stay root (a Python under ``/root``), process
  creation is stopped by seccomp and the audit hook; :attr:`LocalSandbox.isolation`
  reports which layers are active;
* a seccomp filter (Linux x86_64 and aarch64, where the kernel allows it; it
  binds root too): ``fork``, ``vfork``, ``execve``, ``execveat``, ``socket``,
  ``socketpair`` and every ``clone`` that does not create a thread fail with
  ``EPERM``, and 32-bit/x32 system calls are refused;
* Landlock (Linux 5.13+, where the kernel has it enabled; it binds root too): the
  code can read only the Python installation, the system library folders and a
  few devices, and can read, write and create files only in its working
  directory; with Landlock ABI 6+ it cannot signal processes outside the sandbox.
  This is what keeps files private when the code must run as root;
* a wall-clock limit: the whole process group is killed (SIGKILL) at ``timeout_s``.

What the Python audit hook enforces (see :mod:`~rollgym.envs.math.sandbox.bootstrap`):
no sockets, no process creation, no ``ctypes``, no signals to other
processes, no ``gc`` object walks, no reading or listing outside the working
directory except the Python installation (so imports work), no writes outside
the working directory. An audit hook is a tripwire, not a security boundary:
C extensions can bypass it, which is why the kernel limits come first and the
``docker`` backend exists for untrusted code at scale.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
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
class CodeSandbox(Protocol):
    """Runs Python source in isolation and returns what it printed."""

    backend: str
    limits: SandboxLimits

    def run(self, code: str) -> SandboxResult: ...

    def close(self) -> None: ...


_BOOTSTRAP = (Path(__file__).with_name("legacy_bootstrap.py")).read_text(encoding="utf-8")
NOBODY = 65534


@functools.lru_cache(maxsize=1)
def network_namespace_prefix() -> tuple[str, ...]:
    """The command prefix that runs a program without network (``unshare -n``), or ``()`` if impossible."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return ()
    candidates: list[tuple[str, ...]] = [(unshare, "-n")] if os.geteuid() == 0 else []
    candidates.append((unshare, "-r", "-n"))
    for prefix in candidates:
        try:
            done = subprocess.run([*prefix, "true"], capture_output=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            return tuple(prefix)
    return ()


@functools.lru_cache(maxsize=1)
def python_is_world_readable() -> bool:
    """Whether an unprivileged user could run this Python: every directory on the way to the
    interpreter's library and site-packages is world-searchable and the folders world-readable."""
    import sysconfig

    paths = {sysconfig.get_path("stdlib"), sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    for path in filter(None, paths):
        p = Path(path).resolve()
        try:
            if not p.stat().st_mode & 0o004:
                return False
            for parent in [p, *p.parents]:
                if not parent.stat().st_mode & 0o001:
                    return False
        except OSError:
            return False
    return True


@functools.lru_cache(maxsize=1)
def seccomp_available() -> bool:
    """Whether the bootstrap can install its seccomp filter here (probed once per process)."""
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "aarch64"):
        return False
    with tempfile.TemporaryDirectory(prefix="rollgym-sandbox-probe-") as workdir:
        code = "import os\ntry:\n    os.fork()\nexcept PermissionError:\n    print('refused')"
        return _probe(workdir, code, seccomp=True) == b"refused"


def _probe(workdir: str | Path, code: str, **flags: bool) -> bytes | None:
    """Run ``code`` under the bootstrap with only ``flags`` switched on; its stdout, or ``None`` on failure."""
    config = {"workdir": str(workdir), "cpu_s": 10, "memory_bytes": 1 << 30, "fsize_bytes": 1 << 20,
              "nproc": 1 << 16, "uid": None, "audit": False, "seccomp": False, **flags, "code": code}
    try:
        done = subprocess.run([sys.executable, "-I", "-c", _BOOTSTRAP, json.dumps(config)],
                              capture_output=True, timeout=60, cwd=workdir, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


@functools.lru_cache(maxsize=1)
def landlock_available() -> bool:
    """Whether the bootstrap can confine file access with Landlock here (probed once per process)."""
    if sys.platform != "linux":
        return False
    with tempfile.TemporaryDirectory(prefix="rollgym-sandbox-probe-") as root:
        workdir = Path(root) / "work"
        workdir.mkdir()
        (Path(root) / "outside.txt").write_text("x", encoding="utf-8")
        code = ("import json\ntry:\n    open('../outside.txt').read()\nexcept PermissionError:\n"
                "    open('inside.txt', 'w').write(json.dumps('refused'))\n"
                "    print(open('inside.txt').read())")
        return _probe(workdir, code, landlock=True) == b'"refused"'


def _read_limited(path: Path, limit: int) -> tuple[str, bool]:
    with path.open("rb") as f:
        data = f.read(limit * 4 + 4)
    text = data.decode("utf-8", errors="replace")
    if len(text) > limit:
        return text[:limit], True
    return text, len(data) > limit * 4


class LocalSandbox:
    """Runs Python code in a separate, resource-limited process; see the module docstring.

    Example:
        >>> box = LocalSandbox()
        >>> box.run("print(6 * 7)").stdout
        '42\\n'
    """

    backend = "local"

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        *,
        network_namespace: bool = True,
        audit_hook: bool = True,
        drop_privileges: bool = True,
        seccomp: bool = True,
        landlock: bool = True,
    ) -> None:
        self.limits = limits or SandboxLimits()
        self.audit_hook = audit_hook
        self.seccomp = seccomp and seccomp_available()
        self.landlock = landlock and landlock_available()
        self.prefix = network_namespace_prefix() if network_namespace else ()
        # under ``unshare -r`` the process is root of its own user namespace, where nobody is unmapped
        can_drop = os.geteuid() == 0 and "-r" not in self.prefix and python_is_world_readable()
        self.drop_to = NOBODY if drop_privileges and can_drop else None

    @property
    def isolation(self) -> dict[str, bool]:
        """Which layers are active on this machine: network namespace, seccomp, Landlock, uid drop, audit hook."""
        return {
            "network_namespace": bool(self.prefix),
            "seccomp": self.seccomp,
            "landlock": self.landlock,
            "unprivileged_user": self.drop_to is not None,
            "audit_hook": self.audit_hook,
        }

    def run(self, code: str) -> SandboxResult:
        """Run ``code`` and return its output; never raises on the code's behaviour."""
        limits = self.limits
        root = Path(tempfile.mkdtemp(prefix="rollgym-sandbox-"))
        workdir = root / "work"
        workdir.mkdir()
        if self.drop_to is not None:
            root.chmod(0o711)  # nobody may pass through to work/, but not list or read stdout/stderr
            os.chown(workdir, self.drop_to, self.drop_to)
        config = {
            "workdir": str(workdir),
            "cpu_s": limits.cpu_s,
            "memory_bytes": limits.memory_mb * 1024 * 1024,
            "fsize_bytes": limits.max_file_mb * 1024 * 1024,
            "nproc": limits.max_processes,
            "uid": self.drop_to,
            "gid": self.drop_to,
            "audit": self.audit_hook,
            "seccomp": self.seccomp,
            "landlock": self.landlock,
        }
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(workdir),
            "TMPDIR": str(workdir),
            "LANG": "C.UTF-8",
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "NUMEXPR_NUM_THREADS": "1",
        }
        argv = [*self.prefix, sys.executable, "-I", "-c", _BOOTSTRAP, json.dumps(config)]
        out_path, err_path = root / "stdout", root / "stderr"
        start = time.monotonic()
        timed_out = False
        exit_code: int | None = None
        try:
            with out_path.open("wb") as out, err_path.open("wb") as err:
                try:
                    proc = subprocess.Popen(
                        argv,
                        stdin=subprocess.PIPE,
                        stdout=out,
                        stderr=err,
                        cwd=workdir,
                        env=env,
                        start_new_session=True,
                        close_fds=True,
                    )
                except OSError as exc:
                    return SandboxResult("", f"sandbox could not start: {exc}", None, False, False, 0.0, "local")
                try:
                    assert proc.stdin is not None
                    proc.stdin.write(code.encode("utf-8", errors="replace"))
                    proc.stdin.close()
                except (BrokenPipeError, OSError):
                    pass
                try:
                    exit_code = proc.wait(timeout=max(0.1, limits.timeout_s - (time.monotonic() - start)))
                except subprocess.TimeoutExpired:
                    timed_out = True
                    self._kill_group(proc)
                    exit_code = proc.wait()
            duration = time.monotonic() - start
            stdout, cut_out = _read_limited(out_path, limits.max_output_chars)
            stderr, cut_err = _read_limited(err_path, limits.max_output_chars)
            return SandboxResult(stdout, stderr, exit_code, timed_out, cut_out or cut_err, duration, "local")
        finally:
            shutil.rmtree(root, ignore_errors=True)

    @staticmethod
    def _kill_group(proc: subprocess.Popen[bytes]) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()

    def close(self) -> None:
        """Nothing to release: every run cleans up after itself."""
