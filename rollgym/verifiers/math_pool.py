"""One shared pool of symbolic workers per process, with a hard timeout per job.

Symbolic equivalence (sympy through math-verify) can take unbounded time on
adversarial input, and a signal-based timeout cannot interrupt C code such as
big-integer powers. So every job runs in a worker process; when a job passes
its deadline the worker is killed (SIGKILL) and replaced, and the job's result
is ``timeout``. The deadline counts from the moment a ready worker receives the
job, so queueing behind other jobs never turns into a timeout.

Each worker is ``python -I rollgym/verifiers/math_worker.py``, talking over a
socket pair; it imports sympy and math-verify once, the parent never does, and
the caller's ``__main__`` is never re-imported (no ``if __name__ ==
"__main__"`` guard needed). Workers start in background threads: all of them
on first use, and a replacement as soon as a worker is killed, so a caller
rarely waits for those imports (about a second); the deadline of a job starts
only once its worker is ready. :func:`get_pool` returns the process-wide
instance (env instances share it), sized by ``ROLLGYM_MATH_WORKERS`` (default:
one more than ``min(4, CPUs)``). Each worker's address space is capped
(``RLIMIT_AS``, ``ROLLGYM_MATH_WORKER_MB``, default 4096 MiB) so a huge
expression ends in a ``MemoryError`` rather than in the machine swapping.

Sharing. One :meth:`SymbolicPool.run` call (one response, or one batch) holds
at most ``per_call`` workers at a time (default: all but one), so however slow
its jobs are, another caller always finds a worker. A call may also carry a
``budget_s``: the worker-seconds all its jobs together may use. Each job's
limit is the smaller of ``timeout_s`` and what is left of the budget; a job
cut short by the budget, and every job that never got a share of it, ends
with ``error="budget"``. Time spent waiting for a worker is not counted.
"""

from __future__ import annotations

import atexit
import importlib.util
import itertools
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from rollgym.core.errors import MissingDependencyError

# The worker runs as a script in isolated mode (-I), so it imports neither rollgym
# nor anything from the caller's __main__; its folder is not put on sys.path.
_WORKER_PATH = str(Path(__file__).with_name("math_worker.py"))
STARTUP_TIMEOUT_S = 120.0


MIN_JOB_S = 0.05  # a job is not started with less budget than this


@dataclass(frozen=True)
class JobResult:
    """What a worker answered: ``ok`` with a ``value``, or an ``error``.

    Errors: ``"timeout"`` (the job passed ``timeout_s``), ``"budget"`` (the call's
    ``budget_s`` ran out before or while it ran), ``"crash"``, or the worker's message.
    """

    ok: bool
    value: Any = None
    error: str | None = None


def require_symbolic_dependencies() -> None:
    """Raise :class:`MissingDependencyError` unless math-verify and sympy are installed (no import)."""
    if importlib.util.find_spec("math_verify") is None or importlib.util.find_spec("sympy") is None:
        raise MissingDependencyError(
            "The MATH verifier needs math-verify and sympy; install them with pip install 'rollgym[math]'."
        )


class _Worker:
    """One worker process (``python -I math_worker.py``) and the parent's end of its socket."""

    def __init__(self, memory_mb: int) -> None:
        parent_sock, child_sock = socket.socketpair()
        fd = child_sock.fileno()
        self.process = subprocess.Popen(
            [sys.executable, "-I", _WORKER_PATH, str(fd), str(memory_mb)],
            pass_fds=[fd],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        child_sock.close()
        self.conn = Connection(parent_sock.detach())
        if not self.conn.poll(STARTUP_TIMEOUT_S):
            self.kill()
            raise RuntimeError("a math verifier worker did not start within two minutes")
        try:
            self.conn.recv()  # the "ready" message
        except (EOFError, OSError) as exc:
            self.kill()
            raise MissingDependencyError(
                "The MATH verifier worker could not start; check that math-verify and sympy import "
                "(pip install 'rollgym[math]')."
            ) from exc

    def kill(self) -> None:
        try:
            self.process.kill()
            self.process.wait(5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        try:
            self.conn.close()
        except OSError:
            pass


@dataclass
class _Running:
    """One job on one worker: where its result goes, when it started and how long it may run."""

    worker: _Worker
    index: int
    job_id: int
    started: float
    limit: float
    cut_by_budget: bool


class SymbolicPool:
    """A fixed number of worker processes running jobs with a hard per-job timeout.

    Thread-safe: concurrent callers share the workers, and one call holds at
    most ``per_call`` of them (default ``workers - 1``, at least 1), so one slow
    response never holds them all. Most callers use the process-wide instance
    from :func:`get_pool`.

    Example:
        >>> pool = SymbolicPool(workers=1)
        >>> pool.run([("equal", (r"\\frac{1}{2}", "0.5"))], timeout_s=10)[0].value
        (True, None)
        >>> pool.close()
    """

    def __init__(self, workers: int = 2, memory_mb: int = 4096, per_call: int | None = None) -> None:
        require_symbolic_dependencies()
        self.size = max(1, int(workers))
        self.per_call = max(1, min(self.size, per_call if per_call is not None else self.size - 1))
        self.memory_mb = memory_mb
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._started = 0  # workers alive or starting
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._closed = False
        self._start_error: BaseException | None = None
        self.restarts = 0
        self.pid = os.getpid()

    # -- workers ------------------------------------------------------------------
    def _start_one(self) -> None:
        try:
            worker = _Worker(self.memory_mb)
        except BaseException as exc:  # reported to the next caller that waits for a worker
            with self._lock:
                self._started -= 1
                self._start_error = exc
            return
        if self._closed:
            worker.kill()
            return
        self._idle.put(worker)

    def _fill(self) -> None:
        """Start, in background threads, every worker the pool is short of."""
        with self._lock:
            missing = 0 if self._closed else self.size - self._started
            self._started += missing
        for _ in range(missing):
            threading.Thread(target=self._start_one, name="rollgym-math-worker-start", daemon=True).start()

    def _take(self, block: bool) -> _Worker | None:
        while True:
            try:
                return self._idle.get_nowait()
            except queue.Empty:
                pass
            self._fill()
            with self._lock:
                error, dead = self._start_error, self._started == 0
                if dead:
                    self._start_error = None
            if error is not None and dead:
                raise error
            if not block:
                return None
            try:  # short waits: a worker may be starting in the background
                return self._idle.get(timeout=0.05)
            except queue.Empty:
                continue

    def _replace(self, worker: _Worker) -> None:
        worker.kill()
        self.restarts += 1
        with self._lock:
            self._started -= 1
        self._fill()  # the replacement starts now, in the background, not when someone next needs it

    # -- jobs ---------------------------------------------------------------------
    def run(
        self,
        jobs: Sequence[tuple[str, tuple[Any, ...]]],
        timeout_s: float,
        *,
        budget_s: float | None = None,
    ) -> list[JobResult]:
        """Run ``(kind, args)`` jobs on the workers; results come back in order.

        A job that passes ``timeout_s`` gives ``JobResult(False, error="timeout")``
        and its worker is replaced; a worker that dies gives ``error="crash"``.
        With ``budget_s``, all jobs together get that many worker-seconds (see
        the module docstring); what runs out of it gives ``error="budget"``.
        """
        if self._closed:
            raise RuntimeError("this SymbolicPool is closed")
        results: list[JobResult | None] = [None] * len(jobs)
        pending = list(enumerate(jobs))[::-1]
        busy: dict[Connection, _Running] = {}
        spent = 0.0  # worker-seconds used by finished jobs

        def left() -> float:
            if budget_s is None:
                return float("inf")
            return budget_s - spent - sum(job.limit for job in busy.values())

        while pending or busy:
            while pending and len(busy) < self.per_call:
                limit = min(timeout_s, left())
                if limit < MIN_JOB_S:
                    if not busy:  # the budget is spent: nothing left will run
                        for index, _ in pending:
                            results[index] = JobResult(False, error="budget")
                        pending.clear()
                    break
                worker = self._take(block=not busy)
                if worker is None:
                    break
                index, (kind, args) = pending.pop()
                job_id = next(self._ids)
                try:
                    worker.conn.send((job_id, kind, args))
                except (OSError, ValueError):
                    self._replace(worker)
                    results[index] = JobResult(False, error="crash")
                    continue
                busy[worker.conn] = _Running(worker, index, job_id, time.monotonic(), limit, limit < timeout_s)
            if not busy:
                continue
            now = time.monotonic()
            next_deadline = min(job.started + job.limit for job in busy.values())
            ready = wait(list(busy), timeout=max(0.0, next_deadline - now))
            for conn in ready:
                job = busy.pop(conn)  # type: ignore[call-overload]
                spent += min(job.limit, time.monotonic() - job.started)
                try:
                    reply_id, ok, value = job.worker.conn.recv()
                except (EOFError, OSError):
                    self._replace(job.worker)
                    results[job.index] = JobResult(False, error="crash")
                    continue
                if reply_id != job.job_id:
                    self._replace(job.worker)
                    results[job.index] = JobResult(False, error="crash")
                    continue
                results[job.index] = JobResult(True, value) if ok else JobResult(False, error=str(value))
                self._idle.put(job.worker)
            now = time.monotonic()
            for conn, job in list(busy.items()):
                if now >= job.started + job.limit:
                    del busy[conn]
                    spent += job.limit
                    self._replace(job.worker)
                    results[job.index] = JobResult(False, error="budget" if job.cut_by_budget else "timeout")
        return [r if r is not None else JobResult(False, error="crash") for r in results]

    def close(self) -> None:
        """Stop every idle worker (and any that finishes starting); the pool cannot be used afterwards."""
        self._closed = True
        while True:
            try:
                self._idle.get_nowait().kill()
            except queue.Empty:
                break


_POOL: SymbolicPool | None = None
_POOL_LOCK = threading.Lock()


def default_workers() -> int:
    """``ROLLGYM_MATH_WORKERS`` if set, else ``min(4, cpu count) + 1``: one spare for other callers."""
    env = os.environ.get("ROLLGYM_MATH_WORKERS", "")
    if env.strip().isdigit() and int(env) > 0:
        return int(env)
    return max(1, min(4, os.cpu_count() or 1)) + 1


def get_pool() -> SymbolicPool:
    """The process-wide pool, started on first use (never one per env instance)."""
    global _POOL
    with _POOL_LOCK:
        # a forked child must not share its parent's workers (their sockets are the parent's)
        if _POOL is None or _POOL._closed or _POOL.pid != os.getpid():
            memory = os.environ.get("ROLLGYM_MATH_WORKER_MB", "")
            _POOL = SymbolicPool(default_workers(), int(memory) if memory.isdigit() else 4096)
        return _POOL


def shutdown_pool() -> None:
    """Stop the process-wide pool (it restarts lazily if used again)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is not None and _POOL.pid == os.getpid():
            _POOL.close()
        _POOL = None


atexit.register(shutdown_pool)
