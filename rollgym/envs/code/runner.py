"""``CodeRunner``: kept sandboxes that run untrusted jobs one after another, and the call harness on top.

Starting a sandbox costs an interpreter start (tens of milliseconds of CPU); a job
in a started sandbox costs a fork of its clean zygote (which holds nothing of any job).
A runner keeps ``workers`` sandbox sessions open for the life of the process and runs
each job with ``Job.fresh`` (the writable folders are emptied before and after; no
process survives a run; each job has an IPC namespace of its own), ``batch`` jobs per
round trip to a sandbox, so that grading many samples costs a fork each. Trusted jobs
(``trusted=True``: a reference, hidden tests) get up to ``workers`` sandboxes of their
own, which never run an untrusted job. A sandbox that a job broke is replaced, and the
jobs after it run in the new one (:func:`~rollgym.sandbox.sandbox.run_batch_replacing`). One runner per
configuration is shared by every env of the process (:func:`code_runner`).
:meth:`CodeRunner.run_stages` runs work that unlocks more work (HumanEval's
recording, then each recorded problem's candidates) as one queue.

:func:`run_calls` is the batch verification step every code env shares: it runs
each candidate program in its own job with :mod:`rollgym.envs.code.harness` (loaded
once per sandbox as the jobs' prelude), and returns the parsed claims
(:class:`CallOutcome`) for the grader to judge outside.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import json
import os
import secrets
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from rollgym.core.task import Score
from rollgym.envs.code.harness import conforms, kind, same
from rollgym.sandbox import Job, Limits, RunResult, Sandbox, Session, shared_sandbox
from rollgym.sandbox.sandbox import run_batch_replacing, run_in_chunks

SANDBOX_ERROR = "sandbox_error"  # the Score label of a sample the sandbox failed to run (retried, never a 0)
BROKE_SANDBOX = "broke_sandbox"  # the Score label of a sample whose run left its sandbox unusable
HARNESS_SOURCE = Path(__file__).with_name("harness.py").read_text(encoding="utf-8")
MAX_CALLS = 10_000


class Stage(NamedTuple):
    """Jobs sent to one sandbox in one round trip, what to do with their results (it may return more
    stages), and how much work they are thought to be (the heaviest waiting stage goes first)."""

    jobs: Sequence[Job]
    then: Callable[[list[RunResult]], Iterable[Stage]]
    weight: float = 0.0
    trusted: bool = False  # trusted code only (a reference, hidden tests): run in the trusted sandboxes


class CodeRunner:
    """``workers`` kept sandboxes; :meth:`run` runs jobs across them, each job in an emptied sandbox.

    Args:
        limits: Default limits of a job; ``disk_mb`` and ``max_files`` size each kept sandbox.
        workers: Sandboxes run at once (default 2).
        backend: The sandbox backend (``"auto"``, ``"bwrap"``, ``"process"``).
        batch: Jobs sent to a sandbox in one round trip (each still a process of its own).
        pin: Keep each sandbox (its supervisor and every job) on a CPU of its own. ``None``
            (default): pin when there are exactly as many sandboxes as CPUs this process may
            use, so that none can sit idle while another waits; with fewer sandboxes, the
            scheduler is left free to use the spare CPUs.

    Example:
        >>> runner = CodeRunner(Limits(wall_s=5))  # doctest: +SKIP
        >>> runner.run([Job.python("print(1)")])[0].stdout  # doctest: +SKIP
        '1\\n'
    """

    def __init__(
        self, limits: Limits | None = None, *, workers: int = 2, backend: str = "auto", batch: int = 16,
        pin: bool | None = None, packages: str | None = None,
    ) -> None:
        self.limits = limits or Limits()
        self.workers = max(1, workers)
        self.batch = max(1, batch)
        self.sandbox: Sandbox = shared_sandbox(self.limits, backend=backend, pool_size=0, packages=packages)
        self.cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        self.pin = (len(self.cpus) == self.workers if pin is None else pin) and len(self.cpus) > 1
        self._pinned: dict[int, Session | None] = {}  # CPU -> the session on it (None: starting)
        self._free: dict[bool, list[Session]] = {False: [], True: []}  # by trust: the two never share a sandbox
        self._lock = threading.Lock()
        self._owner = os.getpid()

    def _take(self, trusted: bool = False) -> Session:
        """A kept sandbox of the kind asked for: one that runs trusted code only, or one for untrusted jobs."""
        with self._lock:
            if self._owner != os.getpid():  # a forked copy: the sessions belong to the parent
                self._free, self._pinned, self._owner = {False: [], True: []}, {}, os.getpid()
            while self._free[trusted]:
                session = self._free[trusted].pop()
                if session.box.alive and session.error is None:
                    return session
                session.close()
            cpu = None
            if self.pin:  # a CPU no live session of this runner holds
                held = {c for c, s in self._pinned.items() if s is None or s.box.alive}
                cpu = next((c for c in self.cpus if c not in held), None)
                if cpu is not None:
                    self._pinned[cpu] = None
        try:
            session = self.sandbox.session(self.limits, cpus=None if cpu is None else (cpu,))
        except BaseException:
            if cpu is not None:
                with self._lock:
                    self._pinned.pop(cpu, None)
            raise
        if cpu is not None:
            with self._lock:
                self._pinned[cpu] = session
        return session

    def _give(self, session: Session, trusted: bool = False) -> None:
        with self._lock:
            kept = self._free[trusted]
            if session.box.alive and len(kept) < self.workers and self._owner == os.getpid():
                kept.append(session)
                return
        session.close()

    def run_one(self, job: Job) -> RunResult:
        """Run one job in a kept sandbox, emptied first."""
        session = self._take()
        try:
            return session.run(replace(job, fresh=True))
        finally:
            self._give(session)

    def run(self, jobs: Sequence[Job], *, batch: int | None = None, trusted: bool = False) -> list[RunResult]:
        """Run ``jobs`` in emptied kept sandboxes, ``workers`` sandboxes at once and up to ``batch`` jobs per
        round trip (default: the runner's); the results in the order of ``jobs``. Never raises on what the
        jobs do. A sandbox that finishes its round trip takes the next, so a small ``batch`` evens out
        jobs of very different lengths. ``trusted``: the jobs run trusted code only (a reference solution,
        hidden tests) and go to sandboxes that never run an untrusted job, before or after."""
        if len(jobs) <= 1 and not trusted:
            return [self.run_one(job) for job in jobs]
        size = min(batch or self.batch, -(-len(jobs) // self.workers))
        return run_in_chunks(jobs, size, self.workers, lambda: self._take(trusted),
                             functools.partial(self._give, trusted=trusted), "rollgym-code")

    def run_stages(self, stages: Iterable[Stage]) -> None:
        """Run stages (a few jobs, and a function of their results that may return more stages) on
        ``workers`` kept sandboxes until none is left, each stage's jobs in one round trip to one
        sandbox: work that depends on earlier results (a candidate's calls on a reference's recorded
        ones) starts as soon as they are in, while other sandboxes go on. The heaviest waiting stage
        goes first (then the oldest), so that a long job found late does not end the run alone.
        The first exception a stage's function raises ends the run and is raised here."""
        queue: list[tuple[float, int, Stage]] = []
        order = itertools.count()

        def push(more: Iterable[Stage]) -> None:
            for stage in more:
                heapq.heappush(queue, (-stage.weight, next(order), stage))

        push(stages)
        ready = threading.Condition()
        state = {"busy": 0}
        errors: list[BaseException] = []

        def work() -> None:
            session: Session | None = None
            trusted = False  # the kind of ``session``
            try:
                while True:
                    with ready:
                        while not queue and state["busy"] and not errors:
                            ready.wait()
                        if errors or not queue:
                            return
                        jobs, then, _, wanted = heapq.heappop(queue)[2]
                        state["busy"] += 1
                    try:
                        if session is not None and trusted != wanted:  # never one sandbox for both kinds
                            self._give(session, trusted)
                            session = None
                        trusted = wanted
                        fresh = [replace(job, fresh=True) for job in jobs]
                        done, session = run_batch_replacing(session, fresh, functools.partial(self._take, wanted))
                        more = list(then(done))
                    except BaseException as exc:
                        with ready:
                            errors.append(exc)
                            state["busy"] -= 1
                            ready.notify_all()
                        return
                    with ready:
                        push(more)
                        state["busy"] -= 1
                        ready.notify_all()
            finally:
                if session is not None:
                    self._give(session, trusted)

        if not queue:
            return
        with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="rollgym-code") as pool:
            for future in [pool.submit(work) for _ in range(self.workers)]:
                future.result()
        if errors:
            raise errors[0]

    def close(self) -> None:
        """End the kept sandboxes."""
        with self._lock:
            sessions = [*self._free[False], *self._free[True]]
            self._free = {False: [], True: []}
        for session in sessions:
            session.close()


_runners: dict[tuple[Any, ...], CodeRunner] = {}
_runners_lock = threading.Lock()


def code_runner(
    limits: Limits | None = None, *, workers: int = 2, backend: str = "auto", packages: str | None = None
) -> CodeRunner:
    """The process-wide :class:`CodeRunner` of a configuration (envs share it; do not close it);
    ``packages``: see :class:`~rollgym.sandbox.Sandbox`."""
    key = (limits or Limits(), workers, backend, packages)
    with _runners_lock:
        if key not in _runners:
            _runners[key] = CodeRunner(limits, workers=workers, backend=backend, packages=packages)
        return _runners[key]


@dataclass
class CallOutcome:
    """What one candidate's run claimed, parsed into plain data (encoded values, never its objects).

    Attributes:
        load: ``"ok"``, or why the program did not load: an exception class such as
            ``"SyntaxError"``, ``"missing_function"``, ``"Timeout"``, or ``"no_result"`` when
            the run left no report (it exited, was killed, or deleted the results).
        values: Per call, the encoded return value, or ``None``.
            ``"sandbox_error"`` when the sandbox failed through no fault of the run (the collector
            retries it: see :func:`failure_info`), ``"broke_sandbox"`` when this run left its
            sandbox unusable (it is retired; the run scores 0).
        errors: Per call, ``None`` or what went wrong: an exception class, ``"Timeout"``,
            ``"UnencodableResult"``, or ``"missing"`` (the run ended before the call reported).
        run: The sandbox run's label (``None``, ``"timeout"``, ``"memory"``, ``"output"``...).
        stdout: What the candidate printed (the harness keeps the first few kilobytes).
    """

    load: str
    values: list[Any] = field(default_factory=list)
    errors: list[str | None] = field(default_factory=list)
    run: str | None = None
    elapsed_s: float = 0.0
    sandbox: str | None = None  # what the sandbox said when it (not the program) failed

    @property
    def complete(self) -> bool:
        """Every call returned a value."""
        return self.load == "ok" and all(e is None for e in self.errors)


def call_job(
    program: str, entry_point: str, calls: Sequence[Any], limits: Limits, call_timeout_s: float,
    files: dict[str, Any] | None = None,
) -> tuple[Job, str]:
    """The job that runs ``program`` and calls ``entry_point`` on each encoded ``[args, kwargs]``, and its nonce.

    ``files`` are put beside the program (a repository it imports from)."""
    nonce = secrets.token_hex(8)
    spec = {"entry_point": entry_point, "calls": list(calls), "call_timeout_s": call_timeout_s, "nonce": nonce}
    job = Job.python("run_calls(job_data['spec'], job_data['program'], out_fd=job_files['results.jsonl'])\n",
                     prelude=HARNESS_SOURCE, data={"spec": spec, "program": program}, files=dict(files or {}),
                     echo=False, open_files=("results.jsonl",), return_files=("results.jsonl",), limits=limits)
    return job, nonce


def parse_outcome(result: RunResult, nonce: str, n_calls: int) -> CallOutcome:
    """Read the harness's report out of a run; lines without the run's nonce are ignored."""
    values: list[Any] = [None] * n_calls
    errors: list[str | None] = ["missing"] * n_calls
    load = "no_result"
    if result.error is not None:  # the sandbox, not the program, failed: this job broke it, or it is not to blame
        load = BROKE_SANDBOX if result.error.startswith("sandbox_broken") else SANDBOX_ERROR
        return CallOutcome(load, values, errors, result.label, result.elapsed_s, sandbox=result.error[:300])
    data = result.files.get("results.jsonl", b"")
    for line in data.decode("utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict) or record.get("n") != nonce:
            continue
        if "load" in record and load == "no_result":
            load = str(record["load"])[:100]
            continue
        index = record.get("i")
        if not isinstance(index, int) or not 0 <= index < n_calls or errors[index] != "missing":
            continue
        if "exc" in record:
            errors[index] = str(record["exc"])[:100]
        elif "v" in record:
            values[index], errors[index] = record["v"], None
    return CallOutcome(load, values, errors, result.label, result.elapsed_s)


def run_calls(
    runner: CodeRunner,
    items: Sequence[tuple[str, str, Sequence[Any]]],
    *,
    limits: Limits,
    call_timeout_s: float,
    files: Sequence[dict[str, Any] | None] | None = None,
) -> list[CallOutcome]:
    """Run each ``(program, entry_point, encoded calls)`` in its own job; the parsed outcomes, in order.

    ``files``, one per item, are put beside each program."""
    jobs, nonces = [], []
    for k, (program, entry_point, calls) in enumerate(items):
        extra = files[k] if files is not None else None
        job, nonce = call_job(program, entry_point, list(calls)[:MAX_CALLS], limits, call_timeout_s, extra)
        jobs.append(job)
        nonces.append(nonce)
    results = runner.run(jobs)
    return [parse_outcome(r, n, min(len(c), MAX_CALLS)) for r, n, (_, _, c) in zip(results, nonces, items)]


def judge_expected(outcome: CallOutcome, expected: Sequence[Any], *, parsed: Any = None) -> Score:
    """Score a run against expected encoded values: every call must return the same value with the same types.

    Labels as :class:`~rollgym.envs.code.humaneval_grader.HumanEvalGrader` does: ``syntax_error``,
    ``load_error``, ``missing_function``, ``timeout``, ``crashed``, ``output_limit``, ``wrong_type``,
    ``exception``, ``wrong_answer``; ``details`` has ``tests``, ``passed``, ``failed``, ``failures``, ``timeouts``.
    """
    n = len(expected)
    run_label = outcome.run
    ended = {"timeout": "timeout", "cpu": "timeout", "output": "output_limit"}.get(run_label or "", "crashed")
    if outcome.load == SANDBOX_ERROR:
        return sandbox_failure(outcome, parsed, n)
    if outcome.load != "ok":
        error = {"SyntaxError": "syntax_error", "IndentationError": "syntax_error", "TabError": "syntax_error",
                 "missing_function": "missing_function", "Timeout": "timeout",
                 BROKE_SANDBOX: BROKE_SANDBOX}.get(outcome.load, "load_error")
        if outcome.load == "no_result":
            error = ended
        return Score.fail(error, parsed=parsed, tests=n, passed=0, exception=outcome.load, run=run_label)
    failures: dict[int, tuple[str, str | None]] = {}
    for i, (value, problem, want) in enumerate(zip(outcome.values, outcome.errors, expected)):
        if problem == "missing":
            failures[i] = (ended, None)
        elif problem == "Timeout":
            failures[i] = ("timeout", None)
        elif problem == "UnencodableResult" or (problem is None and kind(value) == "?"):
            failures[i] = ("wrong_type", None if problem else value[1])
        elif problem is not None:
            failures[i] = ("exception", problem)
        elif not same(value, want):
            typed = conforms(value, want) and kind(value) == kind(want)
            failures[i] = ("wrong_answer" if typed else "wrong_type", None)
    details = {
        "tests": n,
        "passed": n - len(failures),
        "failed": sorted(failures)[:50],
        "failures": [{"test": i, "reason": r, "exception": e} for i, (r, e) in sorted(failures.items())[:10]],
        "timeouts": sum(1 for r, _ in failures.values() if r == "timeout"),
        "run": run_label,
    }
    if not failures:
        return Score.success(parsed=parsed, **details)
    reasons = {r for r, _ in failures.values()}
    for label in ("timeout", "crashed", "output_limit", "wrong_type", "exception", "wrong_answer"):
        if label in reasons:
            return Score.fail(label, parsed=parsed, **details)
    return Score.fail("wrong_answer", parsed=parsed, **details)


def sandbox_failure(outcome: CallOutcome, parsed: Any, tests: int) -> Score:
    """The score of a sample the sandbox failed to run through no fault of its own: labelled
    ``sandbox_error``, with the sandbox's message in ``details["sandbox"]``; :func:`failure_info` turns it
    into the ``info["failure"]`` that makes the rollout collector retry the episode."""
    return Score.fail(SANDBOX_ERROR, parsed=parsed, tests=tests, passed=0, sandbox=outcome.sandbox)


def failure_info(info: dict[str, Any]) -> dict[str, Any]:
    """A step's ``info`` with ``info["failure"]`` added when its score is a ``sandbox_error`` (an
    infrastructure failure, never a reward 0 for the answer: the collector marks the rollout failed
    and plays it again)."""
    if info.get("error") != SANDBOX_ERROR:
        return info
    message = str((info.get("details") or {}).get("sandbox") or "the sandbox failed")
    return {**info, "failure": {"type": "SandboxError", "message": message}}
