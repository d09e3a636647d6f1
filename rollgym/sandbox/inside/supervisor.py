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
   bounding set). Then it forks the *zygote* (:mod:`zygote`), which forks every job, before
   it reads a byte of any job. Reply: what it measured about itself.
2. ``{"kind": "python" | "exec" | "none", ...}`` then one payload frame (code, stdin,
   input files): write the files, have the zygote fork a child that reads the job's spec
   (only the child ever holds it), applies rlimits, seccomp, (in Python mode) the audit
   hook, and runs; wait for it with a wall-clock limit (a ``{"type": "kill"}`` frame from
   the host ends it early); kill every process the child left; collect the files asked
   for; a ``fresh`` job's folders are emptied before it runs and after. Reply: the result,
   then one frame per file. Repeat for the next job (a session) until the host closes stdin.
   A sandbox that cannot be emptied, whose zygote died, or whose supervisor failed says so
   in the job's reply (``"retire"``) and exits: the host retires it.
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
sandboxed code) that the zygote runs once and keeps; each job's process is forked with
the prelude's globals ready, as the namespace its code runs in (a harness compiled once
instead of once per job). The host sends a prelude's source with the first job that names it
and then only its key, while the supervisor keeps it (the last ``PRELUDES_KEPT`` keys).

The supervisor holds every job's input and output; it never forks a job. A job's process is
forked from the zygote, which holds no byte of any job, so no job can find another's data in
its own memory (:mod:`zygote`).
"""

from __future__ import annotations

import errno
import json
import os
import resource  # noqa: F401  # here, not in each job's process: importing an extension module there costs a lot
import select
import signal
import socket
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
    kept_folders,
    make_read_only,
    mount_box,
    prctl,
    self_report,
    write_etc,
)
from .files import collect_files, empty_folder, list_modes, write_inputs
from .zygote import PRELUDES_KEPT, Zygote

MAX_FRAME = 1 << 30
# what the job's process reads of its header
SPEC_FIELDS = ("kind", "limits", "env", "cwd", "argv", "echo", "audit_hook", "open_files", "data")
MODES_LIMIT = 1 << 22  # bytes of paths a return_modes listing may hold (the reply is one JSON frame)
GRACE_S = 5.0  # how long the zygote may take to fork a job, or to report one that was killed


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
        self.zygote_keys: set[str] = set()  # the prelude keys whose source the zygote was sent
        self.zygote_pid = 0
        self.zygote: socket.socket | None = None
        self.broken: str | None = None  # why this sandbox must run nothing more (the host retires it)
        self.clean = False  # the writable folders are empty (a fresh job need not empty them again)
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
            mount_box(self.root, disk_bytes, max_files, config.get("rebind"))
            write_etc(self.workdir)
            make_read_only("/", "/dev")
            if not os.access(sys.executable, os.X_OK):  # jobs would run another Python, or none
                raise SetupError(f"the interpreter {sys.executable} is not visible inside the sandbox")
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
        self.start_zygote()
        self.clean = True
        return report

    def start_zygote(self) -> None:
        """Fork the zygote, which forks every job; now, before this process has read a byte of any job."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            try:
                ours.close()
                null = os.open("/dev/null", os.O_RDONLY)
                os.dup2(null, 0)  # the host's frames are the supervisor's to read, never the zygote's
                os.close(null)
                os.close(self.result_fd)
                if not self.pid_one:  # else the kernel ends it with the pid namespace
                    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
                Zygote(theirs, mode=self.mode, root=self.root, config=self.config, read_roots=self.read_roots,
                       hooks=self.hooks).serve()
            finally:
                os._exit(1)
        theirs.close()
        self.zygote, self.zygote_pid = ours, pid

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
        if job.get("fresh") and not self.clean:
            try:
                self.empty()
            except Exception as exc:
                self.broken = f"the sandbox's folders could not be emptied ({type(exc).__name__}: {exc})"[:300]
                result["error"] = f"sandbox_broken: {self.broken}"
                return self._finish(result, job, outputs, ran=False)
        try:
            if job.get("files"):
                self.clean = False
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
        if prelude_key and prelude_key not in self.prelude_sources:
            result["error"] = "prelude: this sandbox holds no prelude of that key (a protocol error)"
            return self._finish(result, job, outputs)
        if job["kind"] != "none":
            self.clean = False
            write_ends: list[int] = []
            if capture:
                limit = int(job.get("capture", {}).get("limit", 1 << 16))
                for _ in range(2):  # stdout, stderr
                    r, w = os.pipe2(os.O_CLOEXEC)
                    os.set_blocking(r, False)
                    outputs.append(Output(r, limit))
                    write_ends.append(w)
            spec: dict[str, Any] = {key: job[key] for key in SPEC_FIELDS if key in job}
            spec["code"] = code
            self._execute(job, spec, prelude_key, stdin_data, result, outputs, write_ends)
        return self._finish(result, job, outputs)

    def keep_prelude(self, key: str, source: str) -> None:
        """Keep a prelude's source under ``key``; a ninth key forgets the others (as the host's
        :class:`~rollgym.sandbox.box.Box` does, which sends each prelude once while it is kept here)."""
        if key not in self.prelude_sources:
            if len(self.prelude_sources) >= PRELUDES_KEPT:
                self.prelude_sources.clear()
            self.prelude_sources[key] = source

    def empty(self) -> None:
        """Empty every writable folder (the working folder, ``/tmp``, ``/dev/shm``), as a new sandbox has them."""
        modes = {"work": 0o755, "tmp": 0o1777, "shm": 0o1777}
        targets, leading = kept_folders(self.config.get("rebind") or [], self.root)
        for name in os.listdir(self.root):
            path = os.path.join(self.root, name)
            if name in modes and os.path.isdir(path) and not os.path.islink(path):
                os.chmod(path, modes[name])  # the code may have made it unreadable
                if leading or targets:
                    empty_keeping(path, targets, leading)
                else:
                    empty_folder(path)
            elif os.path.isdir(path) and not os.path.islink(path):
                empty_folder(path)
                os.rmdir(path)
            else:
                os.unlink(path)
        self.clean = True

    def _finish(self, result: dict[str, Any], job: dict[str, Any], outputs: list[Output], ran: bool = True) -> Reply:
        try:
            fs = os.statvfs(self.root)
            result["disk_full"] = fs.f_bavail * fs.f_frsize < 64 * 1024
            result["inodes_full"] = fs.f_favail == 0
        except OSError:
            pass
        files, cut = collect_files(self.workdir, list(job.get("return_files", []))
                                   if ran else [], int(job.get("return_limit", 0)))
        result["files"] = [[name, len(data)] for name, data in files]
        result["files_truncated"] = cut
        if ran and job.get("return_modes"):
            try:
                modes, modes_cut = list_modes(self.workdir, MODES_LIMIT)
            except (OSError, RecursionError, ValueError):
                modes, modes_cut = {}, True
            result["modes"], result["modes_truncated"] = sorted(modes.items()), modes_cut
        captured: tuple[bytes, bytes] | None = None
        if result.get("captured"):
            for out in outputs:
                out.close()
            data = [bytes(out.data) for out in outputs] or [b"", b""]
            result["stdout_total"], result["stderr_total"] = [out.total for out in outputs] or [0, 0]
            captured = (data[0], data[1])
        if ran and self.broken is None and self.zygote_pid > 0:
            try:  # the zygote must be there for the next job: a job that killed it broke the sandbox
                gone = os.waitpid(self.zygote_pid, os.WNOHANG)[0] != 0
            except ChildProcessError:
                gone = True
            if gone:
                self.broken, self.zygote_pid = "the sandbox's zygote died", -1
        if job.get("fresh") and ran and self.broken is None:
            try:  # a fresh job leaves nothing behind; if it cannot be cleared away, this job broke the sandbox
                self.empty()
            except Exception as exc:
                self.broken = f"the job's files could not be removed ({type(exc).__name__}: {exc})"[:300]
        if self.broken is not None:
            result["retire"] = self.broken
            if result.get("error") is None:
                result["error"] = f"sandbox_broken: {self.broken}"
        return result, files, captured

    def _execute(
        self, job: dict[str, Any], spec: dict[str, Any], prelude_key: str, stdin_data: memoryview,
        result: dict[str, Any], outputs: list[Output], write_ends: list[int],
    ) -> None:
        """Have the zygote fork the job, wait for it (with the wall-clock limit and the host's kill
        frames), kill what it left and note how it ended."""
        assert self.zygote is not None
        spec_fd = os.memfd_create("job", os.MFD_CLOEXEC)
        _write_all(spec_fd, json.dumps(spec).encode("utf-8"))
        stdin_fd = os.memfd_create("stdin", os.MFD_CLOEXEC) if stdin_data else os.open("/dev/null", os.O_RDONLY)
        if stdin_data:
            _write_all(stdin_fd, stdin_data)
            os.lseek(stdin_fd, 0, os.SEEK_SET)
        status_r, status_w = os.pipe()
        nproc = int(job["limits"]["nproc"])
        python = job["kind"] == "python"
        command: dict[str, Any] = {"prelude": prelude_key, "capture": bool(write_ends)}
        if seccomp.supported():
            # several processes may signal each other only inside a pid namespace of their own; one
            # process has nobody to share IPC objects with (and no IPC namespace of its own)
            command["filter"] = [nproc <= 1, python and nproc <= 1, nproc <= 1 or self.mode != "bwrap", nproc <= 1]
        fds = [spec_fd, stdin_fd, status_w, *write_ends]
        source_fd = None
        if prelude_key and prelude_key not in self.zygote_keys:
            if len(self.zygote_keys) >= PRELUDES_KEPT:  # the zygote forgets them all for a ninth, as this set does
                self.zygote_keys.clear()
            self.zygote_keys.add(prelude_key)
            source_fd = os.memfd_create("prelude", os.MFD_CLOEXEC)
            _write_all(source_fd, self.prelude_sources[prelude_key].encode("utf-8"))
            fds.append(source_fd)
            command["source"] = True
        wall_s = float(job["limits"]["wall_s"])
        kill_at = int(job.get("capture", {}).get("kill_at", 1 << 20))
        poller = select.poll()
        poller.register(0, select.POLLIN)
        poller.register(self.zygote.fileno(), select.POLLIN)
        for out in outputs:
            poller.register(out.fd, select.POLLIN)
        sys.stdout.flush()
        sys.stderr.flush()
        start = time.monotonic()
        try:
            socket.send_fds(self.zygote, [json.dumps(command).encode()], fds)
            answer = self._from_zygote(start + GRACE_S)
        except OSError:
            answer = None
        finally:
            for fd in fds:  # with the job's ends of its output pipes: closed, so the drain below meets their end
                os.close(fd)
        if answer is None or "pid" not in answer:
            os.close(status_r)
            if answer is None:
                self.broken = "the sandbox's zygote died or stopped answering"
                result["error"] = f"sandbox_broken: {self.broken}"
            else:
                result["error"] = str(answer.get("error"))[:400]
            return
        pid = int(answer["pid"])
        reason = self._wait(pid, start + wall_s, poller, outputs, kill_at)
        if reason == "wall":
            result["timed_out"] = True
        elif reason is not None:
            result["killed_for"] = reason
        self._kill_job(pid, nproc > 1 or not seccomp.supported())
        ended = self._from_zygote(time.monotonic() + GRACE_S)
        result["elapsed_s"] = time.monotonic() - start
        if ended is None or "status" not in ended:
            self.broken = "the sandbox's zygote died while a job ran"
            result["error"] = f"sandbox_broken: {self.broken}"
            result["signal"] = signal.SIGKILL
        else:
            status = int(ended["status"])
            result["cpu_s"] = float(ended["cpu_s"])
            result["maxrss_kb"] = int(ended["maxrss_kb"])
            if os.WIFSIGNALED(status):
                result["signal"] = os.WTERMSIG(status)
            else:
                result["exit_code"] = os.WEXITSTATUS(status)
        result["leftovers"] = self._reap_others(nproc > 1 or not seccomp.supported())
        self._drain(outputs)
        try:
            os.set_blocking(status_r, False)
            note = os.read(status_r, 200).decode("utf-8", errors="replace").strip()
            result["exception"] = note or None
        except OSError:
            pass
        os.close(status_r)

    def _from_zygote(self, deadline: float) -> dict[str, Any] | None:
        """The zygote's next message; ``None`` if it died or said nothing before ``deadline``."""
        assert self.zygote is not None
        if not select.select([self.zygote], [], [], max(0.0, deadline - time.monotonic()))[0]:
            return None
        message = self.zygote.recv(4096)
        return json.loads(message) if message else None

    def _wait(
        self, pid: int, deadline: float, poller: select.poll, outputs: list[Output], kill_at: int
    ) -> str | None:
        """Wait for the job to end (the zygote says so), reading its captured output (``poller`` has
        stdin, the zygote and the outputs); the reason it was stopped early (``"wall"``, ``"output"``,
        or the host's), or ``None``."""
        assert self.zygote is not None
        streams = {out.fd: out for out in outputs}
        zygote = self.zygote.fileno()
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return "wall"
            events = poller.poll(int(remaining * 1000) + 1)
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
                if fd == zygote:
                    return None
                if fd == 0:
                    frame = read_frame(0)
                    if frame is None:
                        return "host_gone"
                    message = json.loads(frame)
                    if message.get("type") == "kill":
                        return str(message.get("reason") or "host")

    def _kill_job(self, pid: int, many: bool) -> None:
        """SIGKILL the job's process group, and (``many``: it may have made processes) every process it left."""
        for target in (-pid, pid):
            try:
                os.kill(target, signal.SIGKILL)
            except OSError:
                pass
        if many:
            self._kill_others()

    def _others(self) -> list[int]:
        """The processes a job may have left: under a pid namespace of our own, every one but this one and
        the zygote; else this process's children but the zygote (orphans come back to it, a subreaper)."""
        found = []
        me = os.getpid()
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) in (me, self.zygote_pid):
                continue
            if not self.pid_one:
                try:
                    with open(f"/proc/{name}/stat", "rb") as stat:
                        if int(stat.read().rsplit(b")", 1)[1].split()[1]) != me:
                            continue
                except (OSError, ValueError, IndexError):
                    continue
            found.append(int(name))
        return found

    def _kill_others(self) -> int:
        killed = 0
        for other in self._others():
            try:
                os.kill(other, signal.SIGKILL)
                killed += 1
            except OSError:
                pass
        return killed

    def _reap_others(self, many: bool) -> int:
        """Reap the processes the job left behind (killed already); how many there were. A zygote found
        dead here marks the sandbox broken."""
        reaped = 0
        deadline = time.monotonic() + 5.0
        while True:
            try:
                done, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                done = 0
            if done == self.zygote_pid and done:
                self.broken = "the sandbox's zygote died"
                self.zygote_pid = -1
                continue
            if done:
                reaped += 1
                continue
            if not many or time.monotonic() > deadline or not self._kill_others():
                return reaped
            time.sleep(0.002)

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

    def close(self) -> None:
        """End the zygote and every process left."""
        if self.zygote is not None:
            self.zygote.close()
        if self.zygote_pid > 0:
            try:
                os.kill(self.zygote_pid, signal.SIGKILL)
            except OSError:
                pass
        if os.getpid() == 1 or self.kill_all:
            try:
                os.kill(-1, signal.SIGKILL)
            except OSError:
                pass


def empty_keeping(path: str, targets: set[str], leading: set[str]) -> None:
    """Empty ``path`` but keep the folders that the Python installation is bound back on (``targets``) and
    the folders that lead to them (``leading``, emptied of everything else and made 0755 again). A target
    moved away by the code is a mount point found elsewhere: removing it fails, and the sandbox retires."""
    for name in os.listdir(path):
        full = os.path.join(path, name)
        if full in targets:
            continue
        if full in leading and os.path.isdir(full) and not os.path.islink(full):
            if os.stat(full).st_mode & 0o7777 != 0o755:  # the code made it its own (it cannot when root made it)
                os.chmod(full, 0o755)
            empty_keeping(full, targets, leading)
        elif os.path.isdir(full) and not os.path.islink(full):
            empty_folder(full)
            os.rmdir(full)
        else:
            os.unlink(full)


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


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
            except Exception as exc:  # a supervisor bug: say so, and retire the sandbox, instead of hanging the host
                supervisor.broken = f"supervisor: {type(exc).__name__}: {exc}"[:300]
                write_json(out, {"error": f"sandbox_broken: {supervisor.broken}", "retire": supervisor.broken,
                                 "files": []})
                break
            send_reply(out, reply)
            if supervisor.broken is not None:  # the host retires this sandbox; the rest of a batch is not run
                break
        if supervisor.broken is not None:
            break
    supervisor.close()
