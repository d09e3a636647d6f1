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
"""

from __future__ import annotations

import errno
import json
import os
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
    self_report,
    write_etc,
)
from .files import collect_files, empty_folder, safe_parts, write_inputs

MAX_FRAME = 1 << 30


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


def write_frame(fd: int, data: bytes) -> None:
    view = memoryview(len(data).to_bytes(4, "big") + data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def write_json(fd: int, value: dict[str, Any]) -> None:
    write_frame(fd, json.dumps(value).encode("utf-8"))


def _set_rlimits(limits: dict[str, Any]) -> None:
    import resource

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
    # the supervisor is a process of the same user in the same namespace, so it counts
    cap(resource.RLIMIT_NPROC, int(limits["nproc"]) + 1)


class Supervisor:
    """State of one sandbox: its writable root, how to reach the host, and what it promised to enforce."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.mode: str = config["mode"]
        self.root: str = config["root"]
        self.workdir = os.path.join(self.root, "work")
        self.result_fd: int = config["result_fd"]
        self.kill_all = bool(config.get("kill_all"))
        self.write_roots = (self.root, "/tmp", "/dev/shm") if self.mode == "bwrap" else (self.root,)

    # set-up --------------------------------------------------------------------------------
    def setup(self, request: dict[str, Any]) -> dict[str, Any]:
        config = self.config
        disk_bytes, max_files = int(request["disk_bytes"]), int(request["max_files"])
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
        report = self_report()
        try:
            fs = os.statvfs(self.root)
            report["disk_bytes"] = fs.f_blocks * fs.f_frsize
            report["max_files"] = fs.f_files
        except OSError:
            pass
        return report

    # jobs ----------------------------------------------------------------------------------
    def run(self, job: dict[str, Any], payload: bytes) -> tuple[dict[str, Any], list[tuple[str, bytes]]]:
        view = memoryview(payload)
        code_size, stdin_size = int(job.get("code_size", 0)), int(job.get("stdin_size", 0))
        code = bytes(view[:code_size]).decode("utf-8", errors="replace")
        stdin_data = view[code_size : code_size + stdin_size]
        result: dict[str, Any] = {"exit_code": None, "signal": None, "timed_out": False, "killed_for": None,
                                  "elapsed_s": 0.0, "cpu_s": 0.0, "exception": None, "error": None}
        if job.get("fresh"):
            try:
                self.empty()
            except OSError as exc:
                result["error"] = f"fresh: could not empty the sandbox ({exc})"
                return self._finish(result, job)
        try:
            write_inputs(self.workdir, job.get("files", []), view[code_size + stdin_size :])
        except OSError as exc:
            result["error"] = "input_files: " + (os.strerror(exc.errno) if exc.errno else str(exc))
            if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
                result["error"] = "input_files: the input files do not fit in the sandbox's disk or file quota"
            return self._finish(result, job)
        except ValueError as exc:
            result["error"] = f"input_files: {exc}"
            return self._finish(result, job)
        if job["kind"] != "none" and self.mode == "direct" and os.getuid() == 0 and int(job["limits"]["nproc"]) > 1:
            # the kernel does not apply RLIMIT_NPROC to root: nothing would bound a fork bomb
            result["error"] = ("process_limit: without bubblewrap the code runs as root here, where the kernel does "
                               "not limit processes; use nproc=1 or install bubblewrap")
            return self._finish(result, job)
        if job["kind"] != "none":
            self._execute(job, code, stdin_data, result)
        return self._finish(result, job)

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

    def _finish(self, result: dict[str, Any], job: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[str, bytes]]]:
        try:
            fs = os.statvfs(self.root)
            result["disk_full"] = fs.f_bavail * fs.f_frsize < 64 * 1024
            result["inodes_full"] = fs.f_favail == 0
        except OSError:
            pass
        files, cut = collect_files(self.workdir, list(job.get("return_files", [])), int(job.get("return_limit", 0)))
        result["files"] = [[name, len(data)] for name, data in files]
        result["files_truncated"] = cut
        return result, files

    def _execute(self, job: dict[str, Any], code: str, stdin_data: memoryview, result: dict[str, Any]) -> None:
        stdin_fd = os.memfd_create("stdin", os.MFD_CLOEXEC) if stdin_data else os.open("/dev/null", os.O_RDONLY)
        if stdin_data:
            data = stdin_data
            while data:
                data = data[os.write(stdin_fd, data) :]
            os.lseek(stdin_fd, 0, os.SEEK_SET)
        status_r, status_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(status_r)
            self._child(job, code, stdin_fd, status_w)
        os.close(status_w)
        os.close(stdin_fd)
        wall_s = float(job["limits"]["wall_s"])
        reason = self._wait(pid, start + wall_s)
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
        try:
            os.set_blocking(status_r, False)
            note = os.read(status_r, 200).decode("utf-8", errors="replace").strip()
            result["exception"] = note or None
        except OSError:
            pass
        os.close(status_r)

    def _wait(self, pid: int, deadline: float) -> str | None:
        """Wait for the child; the reason it was stopped early (``"wall"``, or the host's), or ``None``."""
        try:
            pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            pidfd = None
        poller = select.poll()
        if pidfd is not None:
            poller.register(pidfd, select.POLLIN)
        poller.register(0, select.POLLIN)
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

    def _child(self, job: dict[str, Any], code: str, stdin_fd: int, status_w: int) -> None:
        try:
            os.setsid()
            os.dup2(stdin_fd, 0)
            os.closerange(3, status_w)
            os.closerange(status_w + 1, 1 << 16)
            os.set_inheritable(status_w, False)
            cwd = os.path.join(self.workdir, *safe_parts(job["cwd"])) if job.get("cwd", ".") != "." else self.workdir
            os.chdir(cwd)
            env = {str(k): str(v) for k, v in job["env"].items()}
            os.environ.clear()
            os.environ.update(env)
            for sig in (signal.SIGINT, signal.SIGPIPE, signal.SIGTERM, signal.SIGHUP):
                signal.signal(sig, signal.SIG_DFL)
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            prctl(PR_SET_DUMPABLE, 1)  # its own /proc entries; seccomp denies ptrace anyway
            limits = job["limits"]
            nproc = int(limits["nproc"])
            python = job["kind"] == "python"
            if self.config.get("landlock"):
                from . import landlock

                read = [*pyrun.python_roots(), *self.config.get("read_paths", [])]
                landlock.restrict(read, [self.root])
            _set_rlimits(limits)
            if seccomp.supported():
                prog = seccomp.build_filter(
                    no_new_processes=nproc <= 1,
                    no_exec=python and nproc <= 1,
                    own_signals_only=nproc <= 1 or not (os.getpid() == 1 or self.mode == "bwrap"),
                    self_pid=os.getpid(),
                )
                seccomp.install(prog)
            if python:
                if job.get("audit_hook", True):
                    pyrun.install_hook(self.write_roots, allow_processes=nproc > 1)
                sys.argv = ["<sandbox>"]
                sys.path.insert(0, cwd)  # as for a script in the working folder: its modules import
                status, exception = pyrun.run_code(code)
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
            os.execvpe(argv[0], argv, env)
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
        payload = read_frame(0)
        if payload is None:
            break
        try:
            result, files = supervisor.run(job, payload)
        except Exception as exc:  # a supervisor bug: say so instead of hanging the host
            write_json(out, {"error": f"supervisor: {type(exc).__name__}: {exc}", "files": []})
            continue
        write_json(out, result)
        for _, data in files:
            write_frame(out, data)
    if os.getpid() == 1 or supervisor.kill_all:
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
