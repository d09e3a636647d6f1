"""The zygote: the clean process that forks every job of a sandbox. Standard library only.

The supervisor forks it right after set-up, before it has read any job: the zygote holds the
sandbox's set-up (its folders, audit hooks, seccomp filters) and the trusted preludes it was
sent, and never a byte of a job. For each job the supervisor sends it one small command over a
``SOCK_SEQPACKET`` socket with descriptors attached (the job's spec in a memfd, its stdin, its
status pipe, in a batch its output pipes; a prelude's source in a memfd the first time its key
is used); it forks, and only the forked child reads the job's spec. So a job's process starts
from the zygote's memory, never from the supervisor's (which holds every job's input and
output): no frame, variable or freed buffer of another job is there to be found, through frame
introspection or ``/proc/self/mem``. The zygote waits for its child and sends back its pid, then
its exit status and resource usage.
"""

from __future__ import annotations

import _signal
import gc
import json
import os
import signal
import socket
import sys
from typing import Any

from . import pyrun, seccomp
from .confine import PR_SET_DUMPABLE, PR_SET_PDEATHSIG, SetupError, prctl, private_ipc
from .files import open_for_writing, safe_parts

PRELUDES_KEPT = 8  # the host's Box keeps the same count (box.PRELUDES_KEPT)
RESET_SIGNALS = (signal.SIGINT, signal.SIGPIPE, signal.SIGTERM, signal.SIGHUP)
# the descriptors a job's process finds its parts on, before it closes every other one
SPEC_FD, STATUS_FD = 3, 4


def _set_rlimits(limits: dict[str, Any], own_user_namespace: bool) -> None:
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
    # counted per user namespace: in its own, the job's processes alone; else the supervisor and zygote count too
    cap(resource.RLIMIT_NPROC, int(limits["nproc"]) + (0 if own_user_namespace else 2))


def _read_all(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


class Zygote:
    """What a job's process is forked from: set-up state and trusted preludes, nothing of any job."""

    def __init__(self, sock: socket.socket, *, mode: str, root: str, config: dict[str, Any],
                 read_roots: tuple[str, ...], hooks: dict[bool, Any]) -> None:
        self.sock = sock
        self.mode = mode
        self.root = root
        self.workdir = os.path.join(root, "work")
        self.config = config
        self.read_roots = read_roots
        self.hooks = hooks
        self.preludes: dict[str, dict[str, Any] | str] = {}  # by key: the globals after running it, or why it failed
        self.filters: dict[tuple[bool, ...], seccomp.Prepared] = {}

    def serve(self) -> None:
        """Fork a job per command until the supervisor closes the socket; never returns."""
        try:
            while True:
                message, fds, _, _ = socket.recv_fds(self.sock, 4096, 8)
                if not message:
                    break
                self.spawn(json.loads(message), fds)
        except BaseException:
            pass
        os._exit(0)

    def spawn(self, command: dict[str, Any], fds: list[int]) -> None:
        """Fork the job whose parts ``fds`` are; tell the supervisor its pid, then how it ended."""
        key = str(command.get("prelude") or "")
        if command.get("source"):  # a trusted prelude's source, in the last descriptor
            source = _read_all(fds.pop()).decode("utf-8", errors="replace")
            if len(self.preludes) >= PRELUDES_KEPT:
                self.preludes.clear()
            self.preludes[key] = self._run_prelude(source)
        namespace = None
        if key:
            loaded = self.preludes.get(key, "this sandbox holds no prelude of that key (a protocol error)")
            if isinstance(loaded, str):
                for fd in fds:
                    os.close(fd)
                self.sock.send(json.dumps({"error": f"prelude: {loaded}"}).encode())
                return
            namespace = loaded
        prepared = self._filter(tuple(command["filter"])) if command.get("filter") else None
        gc.freeze()  # the child's collections skip what is here: fewer copy-on-write pages
        pid = os.fork()
        if pid == 0:  # never returns
            self._child(fds, namespace, prepared, bool(command.get("capture")))
        for fd in fds:
            os.close(fd)
        self.sock.send(json.dumps({"pid": pid}).encode())
        _, status, usage = os.wait4(pid, 0)
        self.sock.send(json.dumps({"status": status, "cpu_s": usage.ru_utime + usage.ru_stime,
                                   "maxrss_kb": usage.ru_maxrss}).encode())

    def _run_prelude(self, source: str) -> dict[str, Any] | str:
        namespace: dict[str, Any] = {"__name__": "__prelude__", "__builtins__": __builtins__}
        try:
            exec(compile(source, "<prelude>", "exec"), namespace)
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"[:300]
        return namespace

    def _filter(self, key: tuple[bool, ...]) -> seccomp.Prepared:
        """A job's seccomp filter, built once per kind of job (then forked)."""
        if key not in self.filters:
            self.filters[key] = seccomp.Prepared(no_new_processes=key[0], no_exec=key[1], own_signals_only=key[2],
                                                 no_ipc=key[3])
        return self.filters[key]

    def _child(self, fds: list[int], namespace: dict[str, Any] | None, prepared: seccomp.Prepared | None,
               capture: bool) -> None:
        """The job's process: read its spec (the first bytes of any job it ever holds), confine, run."""
        try:
            os.setsid()
            spec_fd, stdin_fd, status_fd, *outputs = fds
            os.dup2(stdin_fd, 0)
            if capture:  # a batch: stdout and stderr go to the supervisor, not to the host directly
                os.dup2(outputs[0], 1)
                os.dup2(outputs[1], 2)
            os.dup2(spec_fd, SPEC_FD)
            os.dup2(status_fd, STATUS_FD)
            os.closerange(STATUS_FD + 1, 1 << 16)  # the zygote's socket and every other descriptor
            os.set_inheritable(STATUS_FD, False)
            if self.mode != "bwrap":  # under bubblewrap the supervisor kills it when the zygote dies, then exits
                prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            job = json.loads(_read_all(SPEC_FD))
            os.close(SPEC_FD)
            cwd = os.path.join(self.workdir, *safe_parts(job["cwd"])) if job.get("cwd", ".") != "." else self.workdir
            os.chdir(cwd)
            for sig in RESET_SIGNALS:
                _signal.signal(sig, _signal.SIG_DFL)  # the C function: the enum wrapper costs more than the calls
            prctl(PR_SET_DUMPABLE, 1)  # its own /proc entries; seccomp denies ptrace anyway
            limits = job["limits"]
            nproc = int(limits["nproc"])
            python = job["kind"] == "python"
            own_namespace = nproc > 1 or prepared is None  # else its filter refuses the IPC calls
            if own_namespace:
                try:
                    private_ipc()  # IPC objects die with this job; a later job in this sandbox sees none
                except SetupError:
                    if self.mode == "bwrap":
                        raise
                    own_namespace = False  # the fallback without bubblewrap: best effort
            if self.config.get("landlock"):
                from . import landlock

                landlock.restrict([*self.read_roots, *self.config.get("read_paths", [])], [self.root])
            _set_rlimits(limits, own_namespace)
            env = {str(k): str(v) for k, v in job["env"].items()}
            if prepared is not None:
                prepared.install(os.getpid())  # built in the zygote, before the fork
            if not python:
                argv = [str(a) for a in job["argv"]]
                os.execvpe(argv[0], argv, env)
            os.environ.clear()
            os.environ.update(env)
            if namespace is None:
                namespace = {"__builtins__": __builtins__}
            if "data" in job:
                namespace["job_data"] = job["data"]
            if job.get("open_files"):  # before the audit hook: no audited open for the harness's own files
                namespace["job_files"] = {name: open_for_writing(self.workdir, name) for name in job["open_files"]}
            code: Any = job["code"]
            if namespace.get("__name__") == "__prelude__" and not job.get("echo", True):
                try:  # the host's call into its prelude: compiled before the hook, as a prelude is
                    code = compile(code, "<sandbox>", "exec")
                except (SyntaxError, ValueError):
                    pass  # run_code reports it as for any code
            audit, echo = bool(job.get("audit_hook", True)), bool(job.get("echo", True))
            del job
            self._run_python(code, namespace, nproc > 1, cwd, audit, echo)
        except BaseException as exc:
            try:
                os.write(2, f"sandbox: could not start: {type(exc).__name__}: {exc}\n".encode())
            except OSError:
                pass
            os._exit(127)

    def _run_python(self, code: Any, namespace: dict[str, Any], processes: bool, cwd: str, audit: bool,
                    echo: bool) -> None:
        if audit:
            pyrun.add_hook(self.hooks[processes])
        sys.argv = ["<sandbox>"]
        sys.path.insert(0, cwd)  # as for a script in the working folder: its modules import
        status, exception = pyrun.run_code(code, namespace, echo=echo)
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            pass
        if exception:
            try:
                os.write(STATUS_FD, exception.encode()[:200])
            except OSError:
                pass
        os._exit(status)
