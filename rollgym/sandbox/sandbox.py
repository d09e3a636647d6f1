"""``Sandbox``: run untrusted Python code or commands in kernel isolation; sessions, a warm pool, batches.

See :mod:`rollgym.sandbox` for the walls and ``SECURITY.md`` for the threat model.
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import os
import threading
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rollgym.core.closing import Closeable
from rollgym.core.errors import ConfigError, MissingDependencyError
from rollgym.sandbox import isolation as _isolation
from rollgym.sandbox.box import NOT_RUN, Box, BoxError
from rollgym.sandbox.isolation import Isolation
from rollgym.sandbox.job import Job, encode
from rollgym.sandbox.limits import Limits
from rollgym.sandbox.result import RunResult
from rollgym.sandbox.spawn import PACKAGES_MOUNT, BwrapLauncher, DirectLauncher, InterpreterError, bwrap_binary

log = logging.getLogger(__name__)
BACKENDS = ("auto", "bwrap", "process")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


class SandboxUnavailableError(MissingDependencyError):
    """The sandbox cannot give the isolation asked for; the message lists the missing walls and the fix."""


def strict_default() -> bool:
    """Whether a sandbox refuses to run without every required wall: ``ROLLGYM_SANDBOX_STRICT`` if set,
    else true under CI (``CI=true``), else false (it runs and warns, naming what is missing)."""
    value = os.environ.get("ROLLGYM_SANDBOX_STRICT", "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    return os.environ.get("CI", "").strip().lower() in _TRUE


_probe_cache: dict[tuple[Any, ...], Isolation] = {}
_probe_lock = threading.Lock()


class Sandbox(Closeable):
    """Runs Python code or commands in an isolated sandbox on this machine.

    Each :meth:`run` gets a fresh sandbox (new namespaces, an empty tmpfs, a new
    host uid) that is gone when the call returns; a :meth:`session` keeps one
    sandbox (its files) across several runs. A warm pool (``pool_size``) starts
    sandboxes ahead of time, so a short run costs a fork, not a start-up.

    Args:
        limits: Default limits of every run (a job may bring its own).
        backend: ``"bwrap"`` (bubblewrap: namespaces, private tmpfs; needs
            ``apt-get install bubblewrap``), ``"process"`` (a plain limited process:
            rlimits, seccomp, Landlock, audit hook, no namespaces), or ``"auto"``:
            bubblewrap when it works here, else ``process``.
        python: The interpreter that runs Python code (default: this one); its
            installation and virtual environment are visible read-only.
        pool_size: Sandboxes kept started and waiting (0: start one per run).
        preload: Modules the waiting sandboxes import before any job (e.g.
            ``("sympy", "numpy")``), so that code importing them starts at once.
        audit_hook: Whether Python code runs behind the audit hook by default.
        strict: Refuse to start when a required wall (:data:`~rollgym.sandbox.isolation.REQUIRED`)
            is missing here; ``None`` reads :func:`strict_default` (on in CI). Not strict,
            a missing wall is a warning naming it.
        packages: A folder of Python packages that jobs import instead of the installed ones (a
            grader's own: pytest and its dependencies, not the project under test). Under
            bubblewrap every ``site-packages``/``dist-packages`` folder of the installation is
            hidden (an empty read-only folder) and this one is mounted read-only at
            :data:`~rollgym.sandbox.spawn.PACKAGES_MOUNT` and put on ``PYTHONPATH``
            (:attr:`packages_path`); the ``process`` backend only puts it on ``PYTHONPATH``.

    Example:
        >>> with Sandbox() as box:
        ...     box.run_python("print(6 * 7)").stdout
        '42\\n'
    """

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        backend: str = "auto",
        python: str | None = None,
        pool_size: int = 0,
        preload: Sequence[str] = (),
        audit_hook: bool = True,
        strict: bool | None = None,
        packages: str | None = None,
    ) -> None:
        if backend not in BACKENDS:
            raise ConfigError(f"Unknown sandbox backend {backend!r}; use one of {', '.join(BACKENDS)} (or 'docker').")
        if not isinstance(pool_size, int) or not 0 <= pool_size <= 256:
            raise ConfigError(f"pool_size must be an integer from 0 to 256, got {pool_size!r}.")
        self.limits = limits or Limits()
        self.audit_hook = audit_hook
        self.preload = tuple(preload)
        self.pool_size = pool_size
        self.strict = strict_default() if strict is None else strict
        if packages is not None and not os.path.isdir(packages):
            raise ConfigError(f"packages must name a folder of Python packages; {packages!r} is not a folder.")
        self.packages = os.path.realpath(packages) if packages is not None else None
        self.launcher = self._launcher(backend, python)
        self.backend = self.launcher.backend
        self._idle: deque[Box] = deque()
        self._lock = threading.Lock()
        self._refill_wanted = threading.Event()
        self._refiller: threading.Thread | None = None
        self._closed = False
        self._owner = os.getpid()
        self.stats = {"runs": 0, "started": 0, "warm_hits": 0, "start_failures": 0, "cleanup_failures": 0}
        isolation = self.isolation
        if not isolation.complete:
            message = (
                f"The {self.backend} sandbox here lacks: {', '.join(isolation.missing)}. "
                + ("Install bubblewrap (apt-get install bubblewrap) and allow user namespaces, "
                   if self.backend != "bwrap" else "Check that this kernel allows namespaces, ")
                + "or pass strict=False (ROLLGYM_SANDBOX_STRICT=0) to run with weaker walls."
            )
            if self.strict:
                raise SandboxUnavailableError(message)
            warnings.warn(message, RuntimeWarning, stacklevel=2)
        if pool_size:
            self._ensure_refiller()

    # -- construction ----------------------------------------------------------------------------
    def _launcher(self, backend: str, python: str | None) -> BwrapLauncher | DirectLauncher:
        if backend in ("auto", "bwrap"):
            if bwrap_binary() is None:
                if backend == "bwrap" or self.strict:
                    raise SandboxUnavailableError(
                        "bubblewrap is not installed, so the sandbox has no namespaces; install it with "
                        "apt-get install bubblewrap, or pass strict=False (ROLLGYM_SANDBOX_STRICT=0) to run "
                        "code in a plain limited process."
                    )
            else:
                try:
                    launcher = BwrapLauncher(python, packages=self.packages)
                except InterpreterError as exc:
                    raise SandboxUnavailableError(str(exc)) from None
                failure = _start_failure(launcher)
                if failure is None:
                    return launcher
                if backend == "bwrap" or self.strict:
                    raise SandboxUnavailableError(
                        f"bubblewrap cannot start a sandbox here ({failure}); allow unprivileged user "
                        "namespaces (sysctl kernel.unprivileged_userns_clone=1) or run as root, or pass "
                        "strict=False to run code in a plain limited process."
                    )
                warnings.warn(f"bubblewrap cannot start a sandbox here ({failure}); using a plain process.",
                              RuntimeWarning, stacklevel=3)
        return DirectLauncher(python, packages=self.packages)

    @property
    def packages_path(self) -> str | None:
        """Where jobs find the ``packages`` folder (``None`` without one)."""
        if self.packages is None:
            return None
        return PACKAGES_MOUNT if self.backend == "bwrap" else self.packages

    @property
    def isolation(self) -> Isolation:
        """The walls this sandbox has here, measured once per process by a probe run."""
        key = (self.backend, self.launcher.python, self.audit_hook, self.packages)
        with _probe_lock:
            if key not in _probe_cache:
                _probe_cache[key] = self._probe()
            return _probe_cache[key]

    def _probe(self) -> Isolation:
        import json

        limits = Limits(wall_s=60, cpu_s=30, disk_mb=8, max_files=256)
        box = Box(self.launcher)
        try:
            box.setup(limits)
            header, payload = encode(
                Job.python(_isolation.PROBE, stdin=json.dumps(_isolation.hidden_paths()), audit_hook=False),
                limits, box.env_defaults, 0,
            )
            result = box.run(header, payload, limits)
        except BoxError as exc:
            return _isolation.evaluate(self.backend, "", disk_bytes=0, max_files=0, mem_bytes=0,
                                       audit_hook=self.audit_hook, tree_kill=False, error=str(exc))
        finally:
            box.close()
        tree_kill = self.backend == "bwrap" or bool(box.plan.config.get("kill_all"))
        return _isolation.evaluate(
            self.backend,
            result.stdout,
            disk_bytes=limits.disk_mb << 20,
            max_files=limits.max_files,
            mem_bytes=limits.mem_mb << 20,
            audit_hook=self.audit_hook,
            tree_kill=tree_kill,
            error=result.error or (None if result.ok else f"probe failed: {result.stderr[-300:]}"),
        )

    # -- the pool ----------------------------------------------------------------------------------
    def _start_box(self) -> Box:
        box = Box(self.launcher, self.preload)
        with self._lock:
            self.stats["started"] += 1
        return box

    def _take_box(self) -> Box:
        if os.getpid() != self._owner:  # a forked copy of this object: the pool belongs to the parent
            self._idle = deque()
            self._owner = os.getpid()
            self._refiller = None
            if self.pool_size:
                self._ensure_refiller()
        box = None
        with self._lock:
            while self._idle:
                candidate = self._idle.popleft()
                if candidate.alive:
                    box = candidate
                    self.stats["warm_hits"] += 1
                    break
                self._discard(candidate)
        if self.pool_size:
            self._refill_wanted.set()
        return box if box is not None else self._start_box()

    def _discard(self, box: Box) -> None:
        if not box.close():
            self.stats["cleanup_failures"] += 1
            log.error("sandbox clean-up failed (%s): %s", box.backend, box.plan.host_dir)

    def _ensure_refiller(self) -> None:
        if self._refiller is None or not self._refiller.is_alive():
            self._refiller = threading.Thread(target=self._refill_loop, name="rollgym-sandbox-pool", daemon=True)
            self._refiller.start()
            self._refill_wanted.set()

    def _refill_loop(self) -> None:
        while not self._closed:
            self._refill_wanted.wait(timeout=5.0)
            self._refill_wanted.clear()
            while not self._closed:
                with self._lock:
                    if len(self._idle) >= self.pool_size:
                        break
                box = self._start_box()
                with self._lock:
                    if self._closed:
                        break
                    self._idle.append(box)
                if not box.alive:
                    break
            else:
                break
        # closed while a box was being started: it is not in the pool, so end it here
        if self._closed:
            self._drain_pool()

    def _drain_pool(self) -> None:
        with self._lock:
            boxes = list(self._idle)
            self._idle.clear()
        for box in boxes:
            self._discard(box)

    # -- running -----------------------------------------------------------------------------------
    def session(self, limits: Limits | None = None, *, cpus: Sequence[int] | None = None) -> Session:
        """A sandbox that keeps its files across runs until closed (use it as a context manager).

        ``limits.disk_mb`` and ``limits.max_files`` fix the session's tmpfs; the other
        limits are the default of each run in it. ``cpus``: the CPUs its supervisor and every
        job may run on (``sched_setaffinity``; e.g. one CPU per sandbox when there are as many
        sandboxes as CPUs, see :class:`~rollgym.envs.code.runner.CodeRunner`).
        """
        if self._closed:
            raise RuntimeError("this Sandbox is closed")
        return Session(self, limits or self.limits, tuple(cpus) if cpus else None)

    def run(self, job: Job) -> RunResult:
        """Run one job in a fresh sandbox that is gone when this returns; never raises on what the code does."""
        with self.session(job.limits or self.limits) as session:
            return session.run(job)

    def run_python(self, code: str, **options: Any) -> RunResult:
        """Run Python source; ``options`` are :class:`~rollgym.sandbox.job.Job` fields (files, stdin, limits...)."""
        return self.run(Job(code=code, **options))

    def run_command(self, argv: Sequence[str], **options: Any) -> RunResult:
        """Run a command, e.g. ``["bash", "-c", "ls"]``; ``options`` are :class:`~rollgym.sandbox.job.Job` fields."""
        return self.run(Job(argv=tuple(argv), **options))

    def run_many(
        self, jobs: Iterable[Job], *, concurrency: int | None = None, reuse: bool = False, batch: int = 16
    ) -> list[RunResult]:
        """Run many jobs, ``concurrency`` at a time (default: the pool size, at least 1), in order of ``jobs``.

        With ``reuse=True`` each worker keeps one sandbox and runs its jobs there one after
        another, ``batch`` jobs per round trip (:meth:`Session.run_batch`), each with
        ``fresh=True``: the writable folders are emptied before and after each job, no process
        outlives a job, each job has an IPC namespace of its own, and each job's process is
        forked from the sandbox's clean zygote, so it holds no byte of another job; a job costs
        a fork instead of a sandbox start, and one job leaves nothing for the next (see
        ``SECURITY.md``). A job that breaks its sandbox gets a ``sandbox_broken`` error; the
        sandbox is replaced and the jobs after it run in the new one. The pid and network
        namespaces, the tmpfs mount and the host uid are shared by the jobs of one worker. The
        tmpfs quota of those sandboxes is this sandbox's ``limits``.
        """
        jobs = list(jobs)
        workers = max(1, min(concurrency or self.pool_size or 1, len(jobs) or 1))
        if not reuse:
            if workers == 1:
                return [self.run(job) for job in jobs]
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rollgym-sandbox") as pool:
                return list(pool.map(self.run, jobs))
        return run_in_chunks(jobs, batch, workers, self.session, Session.close, "rollgym-sandbox")

    def close(self) -> None:
        """End the waiting sandboxes (running ones finish their call)."""
        self._closed = True
        self._refill_wanted.set()
        self._drain_pool()

    def __del__(self) -> None:
        try:
            if not self._closed:
                self.close()
        except Exception:
            pass


class Session(Closeable):
    """One sandbox kept across runs: files written by one run are there for the next.

    Every run gets fresh processes (all of the previous run's processes are killed
    when it ends); only the tmpfs persists. Runs are serialized.

    Example:
        >>> with Sandbox().session() as s:
        ...     _ = s.run_command(["bash", "-c", "echo hi > note.txt"], limits=Limits(nproc=8))
        ...     s.read_files(["note.txt"])
        {'note.txt': b'hi\\n'}
    """

    def __init__(self, sandbox: Sandbox, limits: Limits, cpus: tuple[int, ...] | None = None) -> None:
        self.sandbox = sandbox
        self.limits = limits
        self._lock = threading.Lock()
        self.box = sandbox._take_box()
        self.error: str | None = None
        try:
            self.box.setup(limits, cpus)
        except BoxError as exc:
            self.error = f"start_failed: {exc}"
            with sandbox._lock:
                sandbox.stats["start_failures"] += 1

    @property
    def workdir(self) -> str:
        """The working folder as the sandboxed code sees it (``/sandbox/work`` under bubblewrap)."""
        return self.box.workdir

    def _encode(self, job: Job) -> tuple[dict[str, Any], bytes, Limits] | RunResult:
        """The job as the supervisor reads it, with its limits; a :class:`RunResult` if it cannot run."""
        limits = job.limits or self.limits
        if limits.disk_mb != self.limits.disk_mb or limits.max_files != self.limits.max_files:
            limits = limits.replace(disk_mb=self.limits.disk_mb, max_files=self.limits.max_files)
        if self.error is not None:
            return RunResult(error=self.error, backend=self.box.backend)
        try:
            header, payload = encode(job, limits, {**self.box.env_defaults, **job.env}, self.limits.disk_mb << 20)
        except ConfigError as exc:
            return RunResult(error=f"bad_job: {exc}", backend=self.box.backend)
        if job.kind == "python" and not self.sandbox.audit_hook:
            header["audit_hook"] = False
        return header, payload, limits

    def run(self, job: Job) -> RunResult:
        """Run one job in this session's sandbox; never raises on what the code does."""
        with self._lock:
            with self.sandbox._lock:
                self.sandbox.stats["runs"] += 1
            encoded = self._encode(job)
            if isinstance(encoded, RunResult):
                return encoded
            return self.box.run(*encoded)

    def run_batch(self, jobs: Sequence[Job]) -> list[RunResult]:
        """Run ``jobs`` one after another in this sandbox, in one round trip to it, in order.

        Each job is a process of its own, as with :meth:`run`; the sandbox's supervisor reads
        each job's stdout and stderr (same limits). Give the jobs ``fresh=True`` to start each
        one with empty folders. Never raises on what the code does.
        """
        with self._lock:
            with self.sandbox._lock:
                self.sandbox.stats["runs"] += len(jobs)
            results: list[RunResult | None] = [None] * len(jobs)
            runnable: list[tuple[int, tuple[dict[str, Any], bytes, Limits]]] = []
            for index, job in enumerate(jobs):
                encoded = self._encode(job)
                if isinstance(encoded, RunResult):
                    results[index] = encoded
                else:
                    runnable.append((index, encoded))
            for (index, _), result in zip(runnable, self.box.run_batch([e for _, e in runnable])):
                results[index] = result
        return [r if r is not None else RunResult(error="lost: the job was not run") for r in results]

    def run_python(self, code: str, **options: Any) -> RunResult:
        """Run Python source in this session."""
        return self.run(Job(code=code, **options))

    def run_command(self, argv: Sequence[str], **options: Any) -> RunResult:
        """Run a command in this session."""
        return self.run(Job(argv=tuple(argv), **options))

    def write_files(self, files: dict[str, Any]) -> RunResult:
        """Write input files (path -> bytes, str or :class:`~rollgym.sandbox.job.File`) without running anything."""
        return self.run(Job(files=files))

    def read_files(self, patterns: Sequence[str]) -> dict[str, bytes]:
        """The files matching ``patterns`` (relative paths or globs such as ``"**"``), without running anything."""
        return dict(self.run(Job(return_files=tuple(patterns))).files)

    def close(self) -> None:
        """End the sandbox: every process is killed and its tmpfs is gone."""
        if not self.box.close():
            with self.sandbox._lock:
                self.sandbox.stats["cleanup_failures"] += 1
            log.error("sandbox clean-up failed (%s): %s", self.box.backend, self.box.plan.host_dir)
            warnings.warn(f"sandbox clean-up failed: {self.box.plan.host_dir} is still there", RuntimeWarning,
                          stacklevel=2)


def run_batch_replacing(
    session: Session | None, jobs: Sequence[Job], start: Callable[[], Session]
) -> tuple[list[RunResult], Session]:
    """Run ``jobs`` as one batch in ``session``, replacing a sandbox that died or was retired (a new one
    from ``start``) and running there the jobs it did not run; the results, and the session now in use.

    The job that broke a sandbox keeps its own result (a labelled error); the jobs after it run again
    in the new sandbox, so none of them pays for it."""
    results: list[RunResult] = [RunResult(error="lost: the job was not run")] * len(jobs)
    pending = list(range(len(jobs)))
    while pending:
        if session is None or not session.box.alive:
            if session is not None:
                session.close()
            session = start()
        done = session.run_batch([jobs[i] for i in pending])
        for i, result in zip(pending, done):
            results[i] = result
        unrun = [i for i, r in zip(pending, done) if (r.error or "").startswith(NOT_RUN)]
        if len(unrun) == len(pending):  # not one ran: a new sandbox would do no better
            break
        pending = unrun
    assert session is not None
    return results, session


def run_in_chunks(
    jobs: Sequence[Job],
    size: int,
    workers: int,
    start: Callable[[], Session],
    release: Callable[[Session], None],
    thread_name: str,
) -> list[RunResult]:
    """Run ``jobs`` on ``workers`` threads, ``size`` jobs per round trip, each job with ``fresh=True``;
    the results in the order of ``jobs``.

    Each thread takes its sandbox from ``start`` when it takes its first chunk, keeps it for the
    next chunk (a thread that finishes takes the next chunk, so chunks of very different lengths
    even out), replaces it as :func:`run_batch_replacing` does, and hands it to ``release`` at the end."""
    size = max(1, size)
    results: list[RunResult] = [RunResult(error="lost: the job was not run")] * len(jobs)
    chunks = deque(range(0, len(jobs), size))
    lock = threading.Lock()

    def work() -> None:
        session: Session | None = None
        try:
            while True:
                with lock:
                    if not chunks:
                        return
                    first = chunks.popleft()
                chunk = [dataclasses.replace(job, fresh=True) for job in jobs[first : first + size]]
                results[first : first + size], session = run_batch_replacing(session, chunk, start)
        finally:
            if session is not None:
                release(session)

    workers = max(1, min(workers, len(chunks)))
    if workers == 1:
        work()
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=thread_name) as pool:
            for future in [pool.submit(work) for _ in range(workers)]:
                future.result()
    return results


_shared: dict[tuple[Any, ...], Sandbox] = {}
_shared_lock = threading.Lock()


def shared_sandbox(
    limits: Limits | None = None,
    *,
    backend: str = "auto",
    pool_size: int = 1,
    preload: Sequence[str] = (),
    packages: str | None = None,
) -> Sandbox:
    """One :class:`Sandbox` per configuration for the whole process, with a warm pool.

    Envs use it so that a thousand env instances share one or two waiting sandboxes
    instead of starting their own. Do not ``close()`` it; it is closed at exit.
    """
    key = (backend, limits or Limits(), pool_size, tuple(preload), packages)
    with _shared_lock:
        box = _shared.get(key)
        if box is None or box._closed:
            box = Sandbox(limits, backend=backend, pool_size=pool_size, preload=preload, packages=packages)
            if not _shared:
                atexit.register(_close_shared)
            _shared[key] = box
        return box


def _close_shared() -> None:
    with _shared_lock:
        boxes = list(_shared.values())
        _shared.clear()
    for box in boxes:
        box.close()


_start_cache: dict[tuple[str, str, str], str | None] = {}


def _start_failure(launcher: BwrapLauncher) -> str | None:
    """Why bubblewrap cannot start a sandbox here (cached per process), or ``None`` if it can."""
    key = (launcher.binary, launcher.python, launcher.packages or "")
    with _probe_lock:
        if key not in _start_cache:
            box = Box(launcher)
            try:
                box.setup(Limits(disk_mb=1, max_files=64))
                _start_cache[key] = None
            except BoxError as exc:
                _start_cache[key] = str(exc)
            finally:
                box.close()
        return _start_cache[key]
