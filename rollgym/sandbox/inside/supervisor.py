"""The supervisor: the first process of a sandbox. It sets the sandbox up, then runs jobs one by one.

Started by the host as ``python -I -c <loader> <package dir> <config JSON>``, under
bubblewrap (it is then pid 1 of a new pid namespace, which the kernel shields
from signals sent inside it, and whose exit kills every process left) or, without
bubblewrap, as a plain child process. Protocol, over length-prefixed frames
(4-byte big-endian length, then the bytes): the host writes frames to the
supervisor's stdin and reads replies from ``result_fd``:

1. ``{"disk_bytes", "max_files"}``: set up. Under bubblewrap, while it still holds
   the few capabilities bubblewrap left it (``CAP_SYS_ADMIN``, ``CAP_SETUID``,
   ``CAP_SETGID``, ``CAP_SETPCAP``, ``CAP_CHOWN``; in no process that runs sandboxed code), it
   mounts a tmpfs of that size and inode count on ``/sandbox`` (``work/`` is the
   working folder, ``tmp/`` is bound on ``/tmp``, ``shm/`` on ``/dev/shm``), writes
   ``/etc/passwd`` and friends, makes ``/`` and ``/dev`` read-only, switches to the
   host uid it was given, enters a new user namespace in which it is uid 65534,
   and drops every capability (effective, permitted, inheritable, ambient and the
   bounding set). Reply: what it measured about itself.
2. ``{"kind": "python" | "exec" | "none", ...}`` then one payload frame (code, stdin,
   input files): write the files, fork a child that applies rlimits, seccomp, (in
   Python mode) the audit hook, and runs; wait for it with a wall-clock limit (a
   ``{"type": "kill"}`` frame from the host ends it early); kill every process the
   child left; collect the files asked for. Reply: the result, then one frame per
   file. Repeat for the next job (a session) until the host closes stdin.
3. ``{"type": "batch", "jobs": [job, ...]}`` then one payload frame per job: run the jobs one
   after another as in 2, but with each job's stdout and stderr read by the supervisor
   (kept up to ``capture.limit`` bytes each; the job is killed when it writes far more),
   so that many jobs need one round trip. Reply per job, in order: the result (with
   ``"captured": true``), its stdout, its stderr, then one frame per file.

System V IPC objects and POSIX message queues never outlive a job: a job that may start
processes enters a new user and IPC namespace of its own before anything else
(:func:`confine.private_ipc`), so they die with it; a job of one process, which has nobody to
share them with, cannot make any (its seccomp filter refuses the calls). The supervisor loads
the base seccomp filter once after set-up; each job adds its own (:mod:`seccomp`).

A job may name a *prelude*: trusted Python source (from the host, never from the
sandboxed code) that the supervisor runs once and keeps; each job's process is forked with
the prelude's globals ready, as the namespace its code runs in (a harness compiled once
instead of once per job). The host sends a prelude's source with the first job that names it
and then only its key, while the supervisor keeps it (the last ``PRELUDES_KEPT`` keys); the
job's own code, the host's one-line call into the prelude, is compiled once too.
"""

from __future__ import annotations

import _signal
import errno
import gc
import json
import os
import resource  # here, not in each job's process: importing an extension module there costs a lot
import select
import signal
import sys
import time
from typing import Any

from . import pyrun, seccomp
from .confine import (
    PR_SET_CHILD_SUBREAPER,
    PR_SET_DUMPABLE,
    PR_SET_PDEATHSIG,
    SetupError,
    drop_capabilities,
    drop_privileges,
    make_read_only,
    mount_box,
    prctl,
    private_ipc,
    self_report,
    write_etc,
)
from .files import collect_files, empty_folder, open_for_writing, safe_parts, write_inputs

MAX_FRAME = 1 << 30
PRELUDES_KEPT = 8  # the host's Box keeps the same count (box.PRELUDES_KEPT)
RESET_SIGNALS = (signal.SIGINT, signal.SIGPIPE, signal.SIGTERM, signal.SIGHUP)


# -- frames ------------------------------------------------------------------------------------


def read_exact(fd: int, n: int) -> bytes | None:
    """``n`` bytes from ``fd``, or ``None`` at end of file."""
    chunks: list[bytes] = []
    while n > 0:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> bytes | None:
    head = read_exact(fd, 4)
    if head is None:
        return None
    size = int.from_bytes(head, "big")
    if size > MAX_FRAME:
        raise SetupError(f"frame of {size} bytes is over the limit")
    return read_exact(fd, size) if size else b""


def write_frame(fd: int, *frames: bytes) -> None:
    """Write length-prefixed frames, in one system call where the pipe takes them."""
    view = memoryview(b"".join(part for data in frames for part in (len(data).to_bytes(4, "big"), data)))
    while view:
        written = os.write(fd, view)
        view = view[written:]


def write_json(fd: int, value: dict[str, Any]) -> None:
    write_frame(fd, json.dumps(value).encode("utf-8"))


Reply = tuple[dict[str, Any], list[tuple[str, bytes]], "tuple[bytes, bytes] | None"]


def send_reply(fd: int, reply: Reply) -> None:
    """The result frame, then (a batch job) its stdout and stderr, then one frame per returned file."""
    result, files, captured = reply
    frames = [json.dumps(result).encode("utf-8"), *(captured or ()), *(data for _, data in files)]
    write_frame(fd, *frames)


def _set_rlimits(limits: dict[str, Any], own_user_namespace: bool) -> None:
    def cap(which: int, soft: int, hard: int | None = None) -> None:
        try:
            resource.setrlimit(which, (soft, soft if hard is None else hard))
        except (ValueError, OSError):
            pass

    cap(resource.RLIMIT_CORE, 0)
    cpu = int(limits["cpu_s"])
    cap(resource.RLIMIT_CPU, cpu, cpu + 1)
    cap(resource.RLIMIT_AS, int(limits["mem_bytes"]))
    cap(resource.RLIMIT_FSIZE, int(limits["fsize_bytes"]))
    cap(resource.RLIMIT_NOFILE, int(limits["nofile"]))
    cap(resource.RLIMIT_MEMLOCK, 0)
    cap(resource.RLIMIT_MSGQUEUE, 0)
    # counted per user namespace: in its own, the job's processes alone; else the supervisor counts too
    cap(resource.RLIMIT_NPROC, int(limits["nproc"]) + (0 if own_user_namespace else 1))


class Output:
    """A job's stdout or stderr as the supervisor reads it in a batch: the first ``limit`` bytes, and a count."""

    def __init__(self, fd: int, limit: int) -> None:
        self.fd = fd
        self.limit = limit
        self.data = bytearray()
        self.total = 0
        self.open = True

    def read(self) -> None:
        """Read what is there; at end of file, close."""
        try:
            chunk = os.read(self.fd, 1 << 16)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self.close()
            return
        self.total += len(chunk)
        room = self.limit - len(self.data)
        if room > 0:
            self.data += chunk[:room]

    @property
    def overflow(self) -> int:
        return self.total - len(self.data)

    def close(self) -> None:
        if self.open:
            self.open = False
            os.close(self.fd)


class Supervisor:
    """State of one sandbox: its writable root, how to reach the host, and what it promised to enforce."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.mode: str = config["mode"]
        self.root: str = config["root"]
        self.workdir = os.path.join(self.root, "work")
        self.result_fd: int = config["result_fd"]
        self.pid_one = os.getpid() == 1  # init of a pid namespace of its own (under bubblewrap)
        self.kill_all = bool(config.get("kill_all"))
        self.write_roots = (self.root, "/tmp", "/dev/shm") if self.mode == "bwrap" else (self.root,)
        self.prelude_sources: dict[str, str] = {}  # by key, as received (the host keeps the same list)
        self.preludes: dict[str, dict[str, Any] | str] = {}  # by key, run
        self.compiled: dict[str, Any] = {}  # the one-line calls of prelude jobs, compiled once
        self.filters: dict[tuple[bool, bool, bool], seccomp.Prepared] = {}
        self.environment: dict[str, str] | None = None
        # the audit hooks (with and without processes), built once: a job's process only adds one
        self.read_roots = pyrun.python_roots()  # for the audit hook and Landlock; the same for every job
        self.hooks = {allow: pyrun.make_hook(pyrun.real_roots(self.write_roots), self.read_roots, allow)
                      for allow in (False, True)}

    # set-up --------------------------------------------------------------------------------
    def setup(self, request: dict[str, Any]) -> dict[str, Any]:
        config = self.config
        disk_bytes, max_files = int(request["disk_bytes"]), int(request["max_files"])
        if request.get("cpus"):  # this process and every job it forks stay on these CPUs
            try:
                os.sched_setaffinity(0, {int(cpu) for cpu in request["cpus"]})
            except (OSError, ValueError):
                pass  # not allowed here: the scheduler places them
        if self.mode == "bwrap":
            mount_box(self.root, disk_bytes, max_files)
            write_etc(self.workdir)
            make_read_only("/", "/dev")
            chown = [self.workdir, os.path.join(self.root, "tmp"), os.path.join(self.root, "shm")]
            drop_privileges(config.get("host_uid"), config.get("inside_uid"), chown)
        else:
            host_uid = config.get("host_uid")
            if host_uid is not None:
                os.setgroups([])
                os.setresgid(host_uid, host_uid, host_uid)
                os.setresuid(host_uid, host_uid, host_uid)
            prctl(PR_SET_CHILD_SUBREAPER, 1)  # orphans come back to be reaped and killed
            if os.getuid() != 0:
                drop_capabilities()
        prctl(PR_SET_DUMPABLE, 0)  # no /proc/<pid>/mem or ptrace by the code it runs
        os.chdir(self.workdir)
        if seccomp.supported():
            try:
                seccomp.install_base()  # binds the supervisor too; each job adds its own filter
            except OSError as exc:
                raise SetupError(f"loading the seccomp filter failed: {exc.strerror or exc}") from None
        report = self_report()
        try:
            fs = os.statvfs(self.root)
            report["disk_bytes"] = fs.f_blocks * fs.f_frsize
            report["max_files"] = fs.f_files
        except OSError:
            pass
        return report

    # jobs ----------------------------------------------------------------------------------
    def run(self, job: dict[str, Any], payload: bytes, capture: bool = False) -> Reply:
        """Run one job; with ``capture`` its stdout and stderr come back in the reply, not on the supervisor's."""
        view = memoryview(payload)
        prelude_size = int(job.get("prelude_size", 0))
        prelude_key = str(job.get("prelude_key") or "")
        if prelude_size:  # kept before anything can fail: the host sends it only once
            self.keep_prelude(prelude_key, bytes(view[:prelude_size]).decode("utf-8", errors="replace"))
        view = view[prelude_size:]
        code_size, stdin_size = int(job.get("code_size", 0)), int(job.get("stdin_size", 0))
        code = bytes(view[:code_size]).decode("utf-8", errors="replace")
        stdin_data = view[code_size : code_size + stdin_size]
        result: dict[str, Any] = {"exit_code": None, "signal": None, "timed_out": False, "killed_for": None,
                                  "elapsed_s": 0.0, "cpu_s": 0.0, "exception": None, "error": None}
        outputs: list[Output] = []
        if capture:
            result.update(captured=True, stdout_total=0, stderr_total=0)
        if job.get("fresh"):
            try:
                self.empty()
            except OSError as exc:
                result["error"] = f"fresh: could not empty the sandbox ({exc})"
                return self._finish(result, job, outputs)
        try:
            if job.get("files"):
                write_inputs(self.workdir, job["files"], view[code_size + stdin_size :])
        except OSError as exc:
            result["error"] = "input_files: " + (os.strerror(exc.errno) if exc.errno else str(exc))
            if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
                result["error"] = "input_files: the input files do not fit in the sandbox's disk or file quota"
            return self._finish(result, job, outputs)
        except ValueError as exc:
            result["error"] = f"input_files: {exc}"
            return self._finish(result, job, outputs)
        if job["kind"] != "none" and self.mode == "direct" and os.getuid() == 0 and int(job["limits"]["nproc"]) > 1:
            # the kernel does not apply RLIMIT_NPROC to root: nothing would bound a fork bomb
            result["error"] = ("process_limit: without bubblewrap the code runs as root here, where the kernel does "
                               "not limit processes; use nproc=1 or install bubblewrap")
            return self._finish(result, job, outputs)
        namespace = None
        if prelude_key:
            loaded = self.prelude(prelude_key)
            if isinstance(loaded, str):
                result["error"] = f"prelude: {loaded}"
                return self._finish(result, job, outputs)
            namespace = loaded
            if job["kind"] == "python" and not job.get("echo", True):
                code = self.compile_call(code)
        if "data" in job:  # parsed here, with the header: the job's process finds it ready
            namespace = dict(namespace) if namespace is not None else {"__builtins__": __builtins__}
            namespace["job_data"] = job["data"]
        if job["kind"] != "none":
            write_ends: list[int] = []
            if capture:
                limit = int(job.get("capture", {}).get("limit", 1 << 16))
                for _ in range(2):  # stdout, stderr
                    r, w = os.pipe2(os.O_CLOEXEC)
                    os.set_blocking(r, False)
                    outputs.append(Output(r, limit))
                    write_ends.append(w)
            self._execute(job, code, stdin_data, result, namespace, outputs, write_ends)
        return self._finish(result, job, outputs)

    def _environment(self, env: dict[str, str]) -> None:
        """Make ``env`` the environment (of the supervisor, so that each forked job has it already)."""
        if env != self.environment:
            os.environ.clear()
            os.environ.update(env)
            self.environment = env

    def seccomp_filter(self, nproc: int, python: bool) -> seccomp.Prepared:
        """The filter of a job's process, built once per kind of job (in the supervisor, then forked)."""
        # several processes may signal each other only inside a pid namespace of their own; one
        # process has nobody to share IPC objects with (and no IPC namespace of its own)
        key = (nproc <= 1, python and nproc <= 1, nproc <= 1 or self.mode != "bwrap")
        if key not in self.filters:
            self.filters[key] = seccomp.Prepared(no_new_processes=key[0], no_exec=key[1], own_signals_only=key[2],
                                                 no_ipc=key[0])
        return self.filters[key]

    def compile_call(self, code: str) -> Any:
        """The code object of a prelude job's code (the host's call into its trusted prelude, the same for
        every job of a kind), compiled once; the source itself where it does not compile (the job's
        process then reports the error as for any code)."""
        if code not in self.compiled:
            if len(self.compiled) >= 64:
                self.compiled.clear()
            try:
                self.compiled[code] = compile(code, "<sandbox>", "exec")
            except (SyntaxError, ValueError):
                return code
        return self.compiled[code]

    def keep_prelude(self, key: str, source: str) -> None:
        """Keep a prelude's source under ``key``; a ninth key forgets the others (as the host's
        :class:`~rollgym.sandbox.box.Box` does, which sends each prelude once while it is kept here)."""
        if key not in self.prelude_sources:
            if len(self.prelude_sources) >= PRELUDES_KEPT:
                self.prelude_sources.clear()
                self.preludes.clear()
            self.prelude_sources[key] = source

    def prelude(self, key: str) -> dict[str, Any] | str:
        """The globals of a kept prelude, run once per key; a string says why it failed."""
        if key not in self.preludes:
            source = self.prelude_sources.get(key)
            if source is None:
                return "this sandbox holds no prelude of that key (a protocol error)"
            namespace: dict[str, Any] = {"__name__": "__prelude__", "__builtins__": __builtins__}
            try:
                exec(compile(source, "<prelude>", "exec"), namespace)
                self.preludes[key] = namespace
            except Exception as exc:
                self.preludes[key] = f"{type(exc).__name__}: {exc}"[:300]
        return self.preludes[key]

    def empty(self) -> None:
        """Empty every writable folder (the working folder, ``/tmp``, ``/dev/shm``), as a new sandbox has them."""
        modes = {"work": 0o755, "tmp": 0o1777, "shm": 0o1777}
        for name in os.listdir(self.root):
            path = os.path.join(self.root, name)
            if name in modes and os.path.isdir(path) and not os.path.islink(path):
                os.chmod(path, modes[name])  # the code may have made it unreadable
                empty_folder(path)
            elif os.path.isdir(path) and not os.path.islink(path):
                empty_folder(path)
                os.rmdir(path)
            else:
                os.unlink(path)

    def _finish(self, result: dict[str, Any], job: dict[str, Any], outputs: list[Output]) -> Reply:
        try:
            fs = os.statvfs(self.root)
            result["disk_full"] = fs.f_bavail * fs.f_frsize < 64 * 1024
            result["inodes_full"] = fs.f_favail == 0
        except OSError:
            pass
        files, cut = collect_files(self.workdir, list(job.get("return_files", [])), int(job.get("return_limit", 0)))
        result["files"] = [[name, len(data)] for name, data in files]
        result["files_truncated"] = cut
        captured: tuple[bytes, bytes] | None = None
        if result.get("captured"):
            for out in outputs:
                out.close()
            data = [bytes(out.data) for out in outputs] or [b"", b""]
            result["stdout_total"], result["stderr_total"] = [out.total for out in outputs] or [0, 0]
            captured = (data[0], data[1])
        return result, files, captured

    def _execute(
        self, job: dict[str, Any], code: Any, stdin_data: memoryview, result: dict[str, Any],
        namespace: dict[str, Any] | None, outputs: list[Output], write_ends: list[int],
    ) -> None:
        stdin_fd = os.memfd_create("stdin", os.MFD_CLOEXEC) if stdin_data else os.open("/dev/null", os.O_RDONLY)
        if stdin_data:
            data = stdin_data
            while data:
                data = data[os.write(stdin_fd, data) :]
            os.lseek(stdin_fd, 0, os.SEEK_SET)
        status_r, status_w = os.pipe()
        if seccomp.supported():
            self.seccomp_filter(int(job["limits"]["nproc"]), job["kind"] == "python")  # build it here, once
        self._environment({str(k): str(v) for k, v in job["env"].items()})
        wall_s = float(job["limits"]["wall_s"])
        kill_at = int(job.get("capture", {}).get("kill_at", 1 << 20))
        # everything the wait needs is made before the fork: while the child lives, each page this
        # process writes is copied, so it goes from the fork to its poll with as little as it can
        poller = select.poll()
        poller.register(0, select.POLLIN)
        for out in outputs:
            poller.register(out.fd, select.POLLIN)
        sys.stdout.flush()
        sys.stderr.flush()
        gc.freeze()  # the child's collections skip what is here: fewer copy-on-write pages
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(status_r)
            self._child(job, code, stdin_fd, status_w, namespace, write_ends)
        reason = self._wait(pid, start + wall_s, poller, outputs, kill_at)
        os.close(status_w)
        os.close(stdin_fd)
        for fd in write_ends:  # the job's ends of its output pipes: closed, so the drain below meets their end
            os.close(fd)
        if reason == "wall":
            result["timed_out"] = True
        elif reason is not None:
            result["killed_for"] = reason
        self._kill_everything(pid)
        _, status, usage = os.wait4(pid, 0)
        result["elapsed_s"] = time.monotonic() - start
        result["cpu_s"] = usage.ru_utime + usage.ru_stime
        result["maxrss_kb"] = usage.ru_maxrss
        if os.WIFSIGNALED(status):
            result["signal"] = os.WTERMSIG(status)
        else:
            result["exit_code"] = os.WEXITSTATUS(status)
        result["leftovers"] = self._reap_others()
        self._drain(outputs)
        try:
            os.set_blocking(status_r, False)
            note = os.read(status_r, 200).decode("utf-8", errors="replace").strip()
            result["exception"] = note or None
        except OSError:
            pass
        os.close(status_r)

    def _wait(
        self, pid: int, deadline: float, poller: select.poll, outputs: list[Output], kill_at: int
    ) -> str | None:
        """Wait for the child, reading its captured output (``poller`` has stdin and the outputs); the
        reason it was stopped early (``"wall"``, ``"output"``, or the host's), or ``None``."""
        try:
            pidfd = os.pidfd_open(pid)
            poller.register(pidfd, select.POLLIN)
        except (AttributeError, OSError):
            pidfd = None
        streams = {out.fd: out for out in outputs}
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return "wall"
                timeout_ms = int(min(remaining, 0.05 if pidfd is None else remaining) * 1000) + 1
                events = poller.poll(timeout_ms)
                if pidfd is None and os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                    return None
                for fd, _ in events:
                    if fd in streams:
                        out = streams[fd]
                        out.read()
                        if not out.open:
                            poller.unregister(fd)
                            del streams[fd]
                        if sum(o.overflow for o in outputs) > kill_at:
                            return "output"
                        continue
                    if fd == pidfd:
                        return None
                    if fd == 0:
                        frame = read_frame(0)
                        if frame is None:
                            return "host_gone"
                        message = json.loads(frame)
                        if message.get("type") == "kill":
                            return str(message.get("reason") or "host")
        finally:
            if pidfd is not None:
                os.close(pidfd)

    def _kill_everything(self, pid: int) -> None:
        """SIGKILL the child's whole tree: under a pid namespace (we are its init) every other process."""
        for target in (-pid,):
            try:
                os.kill(target, signal.SIGKILL)
            except OSError:
                pass
        if os.getpid() == 1 or self.kill_all:
            try:
                os.kill(-1, signal.SIGKILL)  # all processes we may signal but ourselves
            except OSError:
                pass
        else:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def _drain(self, outputs: list[Output]) -> None:
        """Read the captured output to its end (every writer is dead by now; a bounded wait in case not)."""
        deadline = time.monotonic() + 1.0
        live = [o for o in outputs if o.open]
        while live and time.monotonic() < deadline:
            ready, _, _ = select.select([o.fd for o in live], [], [], max(0.0, deadline - time.monotonic()))
            for out in live:
                if out.fd in ready:
                    out.read()
            live = [o for o in live if o.open]

    def _reap_others(self) -> int:
        """Reap the processes the child left behind (killed already); how many there were."""
        reaped = 0
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            try:
                done, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return reaped
            reaped += done != 0
            if done == 0:
                if os.getpid() == 1 or self.kill_all:
                    try:
                        os.kill(-1, signal.SIGKILL)
                    except OSError:
                        pass
                time.sleep(0.002)
        return reaped

    def _child(
        self, job: dict[str, Any], code: Any, stdin_fd: int, status_w: int, namespace: dict[str, Any] | None,
        write_ends: list[int],
    ) -> None:
        try:
            os.setsid()
            os.dup2(stdin_fd, 0)
            if write_ends:  # a batch: stdout and stderr go to the supervisor, not to the host directly
                os.dup2(write_ends[0], 1)
                os.dup2(write_ends[1], 2)
            os.closerange(3, status_w)
            os.closerange(status_w + 1, 1 << 16)
            os.set_inheritable(status_w, False)
            cwd = os.path.join(self.workdir, *safe_parts(job["cwd"])) if job.get("cwd", ".") != "." else self.workdir
            os.chdir(cwd)
            for sig in RESET_SIGNALS:
                _signal.signal(sig, _signal.SIG_DFL)  # the C function: the enum wrapper costs more than the calls
            if not self.pid_one:  # else the kernel kills every process of the namespace when we die
                prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            prctl(PR_SET_DUMPABLE, 1)  # its own /proc entries; seccomp denies ptrace anyway
            limits = job["limits"]
            nproc = int(limits["nproc"])
            python = job["kind"] == "python"
            filtered = seccomp.supported()
            own_namespace = nproc > 1 or not filtered  # else its filter refuses the IPC calls
            if own_namespace:
                try:
                    private_ipc()  # IPC objects die with this job; a later job in this sandbox sees none
                except SetupError:
                    if self.mode == "bwrap":
                        raise
                    own_namespace = False  # the fallback without bubblewrap: best effort
            if self.config.get("landlock"):
                from . import landlock

                read = [*self.read_roots, *self.config.get("read_paths", [])]
                landlock.restrict(read, [self.root])
            _set_rlimits(limits, own_namespace)
            if filtered:
                self.seccomp_filter(nproc, python).install(os.getpid())  # built before the fork
            if python:
                if job.get("open_files"):  # before the audit hook: no audited open for the harness's own files
                    namespace = namespace if namespace is not None else {"__builtins__": __builtins__}
                    namespace["job_files"] = {name: open_for_writing(self.workdir, name) for name in job["open_files"]}
                if job.get("audit_hook", True):
                    pyrun.add_hook(self.hooks[nproc > 1])
                sys.argv = ["<sandbox>"]
                sys.path.insert(0, cwd)  # as for a script in the working folder: its modules import
                status, exception = pyrun.run_code(code, namespace, echo=job.get("echo", True))
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                except BaseException:
                    pass
                if exception:
                    try:
                        os.write(status_w, exception.encode()[:200])
                    except OSError:
                        pass
                os._exit(status)
            argv = [str(a) for a in job["argv"]]
            os.execvp(argv[0], argv)  # the job's environment is the supervisor's by now
        except BaseException as exc:
            try:
                os.write(2, f"sandbox: could not start: {type(exc).__name__}: {exc}\n".encode())
            except OSError:
                pass
            os._exit(127)


def _site(paths: list[str]) -> None:
    """What ``site`` would have done that code relies on: site-packages on ``sys.path``, ``exit``,
    ``quit`` and ``help`` (the interpreter starts with ``-S``, skipping ``.pth`` files)."""
    import _sitebuiltins
    import builtins

    for path in paths:
        if path not in sys.path:
            sys.path.append(path)
    builtins.exit = _sitebuiltins.Quitter("exit", "Ctrl-D (i.e. EOF)")  # type: ignore[attr-defined]
    builtins.quit = _sitebuiltins.Quitter("quit", "Ctrl-D (i.e. EOF)")  # type: ignore[attr-defined]
    builtins.help = _sitebuiltins._Helper()  # type: ignore[attr-defined]


def main(argv: list[str]) -> None:
    """Entry point: ``argv[1]`` is the JSON configuration the host built."""
    config = json.loads(argv[1])
    _site(config.get("site_paths", []))
    supervisor = Supervisor(config)
    for sig in (signal.SIGINT, signal.SIGPIPE, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN if sig != signal.SIGPIPE else signal.SIG_DFL)
    prctl(PR_SET_DUMPABLE, 0)
    for name in config.get("preload", []):
        try:
            __import__(name)
        except Exception:
            pass
    out = supervisor.result_fd
    frame = read_frame(0)
    if frame is None:
        return
    try:
        report = supervisor.setup(json.loads(frame))
    except (SetupError, OSError, ValueError, KeyError) as exc:
        write_json(out, {"ok": False, "error": f"{type(exc).__name__}: {exc}"})
        return
    write_json(out, {"ok": True, "report": report})
    while True:
        frame = read_frame(0)
        if frame is None:
            break
        job = json.loads(frame)
        if job.get("type") in ("close", "kill"):
            if job.get("type") == "close":
                break
            continue
        batch = job["jobs"] if job.get("type") == "batch" else [job]
        payloads = [read_frame(0) for _ in batch]
        if any(p is None for p in payloads):
            break
        for header, payload in zip(batch, payloads):
            assert payload is not None
            try:
                reply = supervisor.run(header, payload, capture=job.get("type") == "batch")
            except Exception as exc:  # a supervisor bug: say so instead of hanging the host
                write_json(out, {"error": f"supervisor: {type(exc).__name__}: {exc}", "files": []})
                continue
            send_reply(out, reply)
    if os.getpid() == 1 or supervisor.kill_all:
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
