"""``Box``: the host's handle on one running supervisor (one sandbox), and the frame protocol.

A box is started (possibly ahead of time, by a warm pool), set up once with the
session's disk and inode quota, then runs jobs one after another; closing it ends
the sandbox. Everything it returns is data: it never raises on what the sandboxed
code does, and a supervisor that dies or stops answering becomes a labelled
``RunResult.error``.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rollgym.sandbox.job import output_kill_at
from rollgym.sandbox.limits import Limits
from rollgym.sandbox.result import RunResult
from rollgym.sandbox.spawn import BwrapLauncher, DirectLauncher, Plan

GRACE_S = 5.0  # beyond the wall-clock limit, for set-up, killing and collecting files
SETUP_TIMEOUT_S = 60.0
NOT_RUN = "not_run"  # the error label of a job that a retired sandbox did not run (it may run elsewhere)
PRELUDES_KEPT = 8  # as the supervisor (inside/supervisor.py): a ninth prelude makes it forget the others


_spawner: tuple[int, ThreadPoolExecutor] | None = None
_spawner_lock = threading.Lock()


def _spawn(argv: list[str], result_w: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Start a supervisor from a long-lived thread of this process.

    With ``--die-with-parent``, a sandbox dies when the *thread* that started it ends
    (a test shows it): a session opened by a short-lived worker thread would die under
    the thread that still uses it.
    """
    global _spawner
    with _spawner_lock:
        if _spawner is None or _spawner[0] != os.getpid():  # none yet, or a forked copy without its threads
            _spawner = (os.getpid(), ThreadPoolExecutor(max_workers=2, thread_name_prefix="rollgym-sandbox-spawn"))
        pool = _spawner[1]
    return pool.submit(
        subprocess.Popen,
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        pass_fds=(result_w,),
        env=env,
        cwd="/",
        start_new_session=True,
    ).result()


class BoxError(Exception):
    """The sandbox could not start or stopped answering; the message says what happened."""


def _frame(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


class _Stream:
    """One of stdout/stderr: keeps the first ``limit`` bytes, counts the rest."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.limit - len(self.data)
        if room > 0:
            self.data += chunk[:room]

    def take(self, kept: bytes, total: int) -> None:
        """What the supervisor kept of a stream and how much there was in all."""
        self.data = bytearray(kept[: self.limit])
        self.total = max(total, len(self.data))

    @property
    def overflow(self) -> int:
        return self.total - len(self.data)

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


class Box:
    """One supervisor process and the pipes to it."""

    def __init__(self, launcher: BwrapLauncher | DirectLauncher, preload: tuple[str, ...] = ()) -> None:
        self.launcher = launcher
        self.backend = launcher.backend
        self.started = time.monotonic()
        self._result_r, result_w = os.pipe()
        self.plan: Plan = launcher.plan(preload, result_w)
        self.proc: subprocess.Popen[bytes] | None = None
        self.dead: str | None = None  # why the box can run nothing more
        self.report: dict[str, Any] | None = None
        self._buffer = bytearray()
        self._preludes: set[str] = set()  # the keys of the preludes the supervisor keeps
        self._selector: selectors.BaseSelector | None = None  # the supervisor's three pipes, for every exchange
        try:
            self.proc = _spawn(self.plan.command(), result_w, self.plan.env)
        except OSError as exc:
            self.dead = f"start_failed: {exc}"
        finally:
            os.close(result_w)
        for fd in self._fds():
            os.set_blocking(fd, False)

    def _fds(self) -> list[int]:
        if self.proc is None:
            return []
        assert self.proc.stdout is not None and self.proc.stderr is not None
        return [self.proc.stdout.fileno(), self.proc.stderr.fileno(), self._result_r]

    @property
    def alive(self) -> bool:
        """Whether the supervisor is running and can take a job."""
        return self.dead is None and self.proc is not None and self.proc.poll() is None

    @property
    def env_defaults(self) -> dict[str, str]:
        """The environment a job starts from in this box."""
        if isinstance(self.launcher, DirectLauncher):
            return self.launcher.env_for(self.plan)
        return dict(self.launcher.env_defaults)

    @property
    def workdir(self) -> str:
        """The working folder as the sandboxed code sees it."""
        return self.env_defaults["HOME"]

    # -- protocol ---------------------------------------------------------------------------------
    def _prelude_once(self, header: dict[str, Any], payload: bytes) -> tuple[dict[str, Any], bytes]:
        """The job without its prelude's source if the supervisor keeps that prelude already (it keeps
        the last ``PRELUDES_KEPT`` keys it was sent, and forgets them all for one more, as this list does)."""
        key, size = header.get("prelude_key"), int(header.get("prelude_size", 0))
        if not key or not size:
            return header, payload
        if key in self._preludes:
            return {**header, "prelude_size": 0}, payload[size:]
        if len(self._preludes) >= PRELUDES_KEPT:
            self._preludes.clear()
        self._preludes.add(key)
        return header, payload

    def _send(self, *frames: bytes) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        data = b"".join(_frame(f) for f in frames)
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def _take_frame(self) -> bytes | None:
        if len(self._buffer) < 4:
            return None
        size = int.from_bytes(self._buffer[:4], "big")
        if len(self._buffer) < 4 + size:
            return None
        frame = bytes(self._buffer[4 : 4 + size])
        del self._buffer[: 4 + size]
        return frame

    def setup(self, limits: Limits, cpus: tuple[int, ...] | None = None) -> dict[str, Any]:
        """Mount the tmpfs and drop privileges (and, with ``cpus``, keep the supervisor and every job on
        those CPUs); returns the supervisor's report or raises :class:`BoxError`."""
        if not self.alive:
            raise BoxError(self.dead or self._death_note())
        request: dict[str, Any] = {"disk_bytes": limits.disk_mb << 20, "max_files": limits.max_files}
        if cpus:
            request["cpus"] = list(cpus)
        try:
            self._send(json.dumps(request).encode())
        except OSError:
            raise BoxError(self._death_note()) from None
        stderr = _Stream(8192)
        frames = self._exchange(1, time.monotonic() + SETUP_TIMEOUT_S, _Stream(8192), stderr, None)
        if frames is None:
            raise BoxError(self._death_note(stderr.text()))
        reply = json.loads(frames[0])
        if not reply.get("ok"):
            self.dead = f"setup_failed: {reply.get('error')}"
            raise BoxError(self.dead)
        self.report = reply["report"]
        return reply["report"]

    def _death_note(self, stderr: str = "") -> str:
        """Why the supervisor is gone, with what it (or bubblewrap) printed."""
        if self.proc is not None:
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass
            if self.proc.stderr is not None and not stderr:
                try:
                    stderr = (self.proc.stderr.read() or b"").decode("utf-8", errors="replace")
                except (OSError, ValueError):
                    pass
        detail = " ".join(stderr.strip().splitlines()[-3:])[:500]
        status = self.proc.returncode if self.proc is not None else None
        self.dead = f"supervisor_died: the sandbox exited (status {status}) {detail}".strip()
        return self.dead

    def _exchange(
        self, wanted: int | None, deadline: float, out: _Stream, err: _Stream, kill_at: int | None
    ) -> list[bytes] | None:
        """Read stdout, stderr and reply frames until ``wanted`` frames (``None``: a result and its files)
        arrived; ``None`` if the supervisor died. Past ``deadline`` the box is killed."""
        assert self.proc is not None and self.proc.stdout is not None and self.proc.stderr is not None
        frames: list[bytes] = []
        streams = {self.proc.stdout.fileno(): out, self.proc.stderr.fileno(): err}
        if self._selector is None:  # made once: a pipe at its end is unregistered for good
            self._selector = selectors.DefaultSelector()
            for fd in (*streams, self._result_r):
                self._selector.register(fd, selectors.EVENT_READ)
        selector = self._selector
        kill_sent = False
        while True:
            while (wanted is None or len(frames) < wanted) and (frame := self._take_frame()) is not None:
                frames.append(frame)  # frames past ``wanted`` (the next job's, in a batch) stay buffered
                if wanted is None and len(frames) == 1:
                    reply = json.loads(frame)
                    wanted = 1 + len(reply.get("files", [])) + (2 if reply.get("captured") else 0)
            if wanted is not None and len(frames) >= wanted:
                return frames
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.kill("unresponsive: the sandbox did not answer in time")
                return None
            events = selector.select(min(remaining, 1.0))
            if not events and self.proc.poll() is not None and not selector.get_map():
                return None
            for key, _ in events:
                fd = int(key.fd)  # type: ignore[arg-type]
                try:
                    chunk = os.read(fd, 1 << 16)
                except BlockingIOError:
                    continue
                if not chunk:
                    selector.unregister(fd)
                    if fd == self._result_r:
                        return None
                    continue
                if fd == self._result_r:
                    self._buffer += chunk
                else:
                    streams[fd].feed(chunk)
                    if kill_at is not None and not kill_sent and out.overflow + err.overflow > kill_at:
                        kill_sent = True
                        try:
                            self._send(json.dumps({"type": "kill", "reason": "output"}).encode())
                        except OSError:
                            pass

    def _drain(self, out: _Stream, err: _Stream) -> None:
        assert self.proc is not None and self.proc.stdout is not None and self.proc.stderr is not None
        for fd, stream in ((self.proc.stdout.fileno(), out), (self.proc.stderr.fileno(), err)):
            while True:
                try:
                    chunk = os.read(fd, 1 << 16)
                except (BlockingIOError, OSError):
                    break
                if not chunk:
                    break
                stream.feed(chunk)

    def run(self, header: dict[str, Any], payload: bytes, limits: Limits) -> RunResult:
        """Run one encoded job; never raises on the job's behaviour."""
        start = time.monotonic()
        if not self.alive:
            return RunResult(error=self.dead or self._death_note(), backend=self.backend)
        out, err = _Stream(limits.max_output_bytes), _Stream(limits.max_output_bytes)
        header, payload = self._prelude_once(header, payload)
        try:
            self._send(json.dumps(header).encode(), payload)
        except OSError:
            return RunResult(error=self._death_note(), backend=self.backend)
        kill_at = output_kill_at(limits.max_output_bytes)
        deadline = start + limits.wall_s + GRACE_S + len(payload) / (50 << 20)
        frames = self._exchange(None, deadline, out, err, kill_at)
        self._drain(out, err)
        total = time.monotonic() - start
        if frames is None:
            note = self.dead or self._death_note(err.text())
            return RunResult(out.text(), err.text(), truncated=out.overflow + err.overflow > 0,
                             error=note, backend=self.backend, total_s=total)
        reply = json.loads(frames[0])
        self._retire_if_asked(reply)
        names = [name for name, _ in reply.get("files", [])]
        return _result(reply, dict(zip(names, frames[1:])), out, err, limits, self.backend, total)

    def _retire_if_asked(self, reply: dict[str, Any]) -> bool:
        """End the box if the supervisor said it cannot run another job (the job of ``reply`` broke it)."""
        if not reply.get("retire"):
            return False
        self.kill(f"{NOT_RUN}: the sandbox was retired before this job ran (a job before it broke it: "
                  f"{str(reply['retire'])[:200]})")
        return True

    def run_batch(self, jobs: list[tuple[dict[str, Any], bytes, Limits]]) -> list[RunResult]:
        """Run encoded jobs one after another in one round trip; each job's output is read by the
        supervisor. Never raises on the jobs' behaviour; if the sandbox dies, the rest get its error."""
        if not jobs:
            return []
        start = time.monotonic()
        if not self.alive:
            return [RunResult(error=self.dead or self._death_note(), backend=self.backend) for _ in jobs]
        jobs = [(*self._prelude_once(header, payload), limits) for header, payload, limits in jobs]
        try:
            self._send(json.dumps({"type": "batch", "jobs": [h for h, _, _ in jobs]}).encode(),
                       *(payload for _, payload, _ in jobs))
        except OSError:
            note = self._death_note()
            return [RunResult(error=note, backend=self.backend) for _ in jobs]
        results: list[RunResult] = []
        noise = _Stream(8192)  # the supervisor's own output: nothing, unless it fails
        transfer = sum(len(payload) for _, payload, _ in jobs) / (50 << 20)  # all are read before the first runs
        for _, payload, limits in jobs:
            deadline = time.monotonic() + limits.wall_s + GRACE_S + transfer
            transfer = len(payload) / (50 << 20)
            frames = self._exchange(None, deadline, noise, noise, None)
            now = time.monotonic()
            if frames is None:
                note = self.dead or self._death_note(noise.text())
                results += [RunResult(error=note, backend=self.backend) for _ in range(len(jobs) - len(results))]
                break
            reply = json.loads(frames[0])
            out, err = _Stream(limits.max_output_bytes), _Stream(limits.max_output_bytes)
            if reply.get("captured"):
                out.take(frames[1], int(reply.get("stdout_total") or 0))
                err.take(frames[2], int(reply.get("stderr_total") or 0))
                frames = frames[:1] + frames[3:]
            names = [name for name, _ in reply.get("files", [])]
            results.append(_result(reply, dict(zip(names, frames[1:])), out, err, limits, self.backend, now - start))
            start = now
            if self._retire_if_asked(reply):
                note = self.dead or NOT_RUN
                results += [RunResult(error=note, backend=self.backend) for _ in range(len(jobs) - len(results))]
                break
        return results

    # -- ending -----------------------------------------------------------------------------------
    def kill(self, why: str) -> None:
        """End the sandbox now (SIGKILL to bubblewrap or the supervisor's process group)."""
        self.dead = self.dead or why
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                self.proc.kill()

    def close(self) -> bool:
        """End the sandbox and release everything; ``False`` if clean-up failed (the caller counts it)."""
        if self.proc is not None:
            if self.proc.poll() is None and self.proc.stdin is not None:
                try:
                    self.proc.stdin.close()  # end of jobs: the supervisor kills what is left and exits
                except OSError:
                    pass
            try:
                self.proc.wait(timeout=GRACE_S)
            except subprocess.TimeoutExpired:
                self.kill("closed")
                try:
                    self.proc.wait(timeout=GRACE_S)
                except subprocess.TimeoutExpired:
                    pass
            for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                try:
                    if stream is not None:
                        stream.close()
                except OSError:
                    pass
        if self._selector is not None:
            self._selector.close()
        try:
            os.close(self._result_r)
        except OSError:
            pass
        self.dead = self.dead or "closed"
        exited = self.proc is None or self.proc.poll() is not None
        return self.launcher.cleanup(self.plan) and exited


def _result(
    reply: dict[str, Any],
    files: dict[str, bytes],
    out: _Stream,
    err: _Stream,
    limits: Limits,
    backend: str,
    total: float,
) -> RunResult:
    """A :class:`RunResult` from the supervisor's reply and what the host read itself."""
    sig = reply.get("signal")
    cpu = float(reply.get("cpu_s") or 0.0)
    exception = reply.get("exception")
    hit: list[str] = []
    if reply.get("timed_out"):
        hit.append("wall")
    if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu >= 0.9 * limits.to_wire()["cpu_s"]):
        hit.append("cpu")  # RLIMIT_CPU: SIGXCPU at the soft limit, SIGKILL a second later
    if exception == "MemoryError":
        hit.append("memory")
    if reply.get("killed_for") == "output" or out.overflow + err.overflow > 0:
        hit.append("output")
    if reply.get("disk_full"):
        hit.append("disk")
    if reply.get("inodes_full"):
        hit.append("files")
    if sig == signal.SIGXFSZ:
        hit.append("file_size")
    leftovers = int(reply.get("leftovers") or 0)
    if limits.nproc > 1 and leftovers + 1 >= limits.nproc:
        hit.append("nproc")  # it had as many processes as it may have when the run ended
    return RunResult(
        stdout=out.text(),
        stderr=err.text(),
        exit_code=reply.get("exit_code"),
        signal=sig,
        timed_out=bool(reply.get("timed_out")),
        oom=exception == "MemoryError",
        truncated=out.overflow + err.overflow > 0,
        limits_hit=tuple(hit),
        elapsed_s=float(reply.get("elapsed_s") or 0.0),
        cpu_s=cpu,
        files=files,
        modes={str(path): int(mode) for path, mode in reply.get("modes") or ()},
        modes_truncated=bool(reply.get("modes_truncated")),
        exception=exception,
        leftovers=leftovers,
        error=reply.get("error"),
        backend=backend,
        total_s=total,
    )
