"""The first code a local sandbox process runs; read as text and passed to ``python -I -c``.

It is deliberately standalone (standard library only, no rollgym imports). It
reads the user's code from stdin (or the ``code`` key of its JSON argument),
then, before running it:

1. lowers resource limits (kernel-enforced): ``RLIMIT_CPU``, ``RLIMIT_AS``,
   ``RLIMIT_FSIZE``, ``RLIMIT_NPROC``, ``RLIMIT_NOFILE``, ``RLIMIT_CORE=0``;
2. when started as root, drops to an unprivileged uid/gid (kernel-enforced file
   permissions, and ``RLIMIT_NPROC`` applies, which it does not to root);
   then, where supported (Linux x86_64/aarch64), installs a seccomp filter
   (kernel-enforced, binds root too) that refuses fork, vfork, execve,
   execveat, socket, socketpair and every ``clone`` that is not a thread;
3. installs an audit hook (``sys.addaudithook``, Python-level) that refuses
   sockets, process creation (fork, exec, spawn, ``os.system``, ``subprocess``),
   signals to other processes, ``ctypes`` (any library load, symbol lookup or
   foreign call after the module itself is imported), ``gc``
   object walks, opening or listing files outside the working directory (reads
   are also allowed inside the Python installation, so imports work), and any
   file change outside the working directory.

Then it runs the code as ``__main__``; if the last statement is an expression,
its value is printed (as in a notebook).
"""

from __future__ import annotations

import json
import os
import sys
import traceback

# Linux syscall numbers per machine: (arch id, {name: number}); fork/vfork do not exist on aarch64.
_SYSCALLS = {
    "x86_64": (0xC000003E, {"fork": 57, "vfork": 58, "execve": 59, "execveat": 322, "socket": 41,
                            "socketpair": 53, "clone": 56, "clone3": 435}),
    "aarch64": (0xC00000B7, {"execve": 221, "execveat": 281, "socket": 198, "socketpair": 199,
                             "clone": 220, "clone3": 435}),
}


def _install_seccomp() -> None:
    """A seccomp filter (kernel-enforced, binds root too): no new processes, no programs, no sockets.

    ``clone`` is allowed only with ``CLONE_THREAD`` (threads); ``clone3`` answers ENOSYS so
    libc falls back to ``clone``; other ABIs (32-bit, x32) are refused outright.
    """
    import ctypes
    import platform

    arch, numbers = _SYSCALLS[platform.machine()]
    allow, deny, nosys = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38  # ALLOW, ERRNO(EPERM), ERRNO(ENOSYS)
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    prog = [(ld, 0, 0, 4), (jeq, 1, 0, arch), (ret, 0, 0, deny), (ld, 0, 0, 0), (jge, 0, 1, 0x40000000),
            (ret, 0, 0, deny)]
    for name in ("fork", "vfork", "execve", "execveat", "socket", "socketpair"):
        if name in numbers:
            prog += [(jeq, 0, 1, numbers[name]), (ret, 0, 0, deny)]
    prog += [(jeq, 0, 1, numbers["clone3"]), (ret, 0, 0, nosys)]
    prog += [(jeq, 0, 3, numbers["clone"]), (ld, 0, 0, 16), (jset, 1, 0, 0x00010000), (ret, 0, 0, deny)]
    prog += [(ret, 0, 0, allow)]

    class Filter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Filter))]

    filters = (Filter * len(prog))(*[Filter(*f) for f in prog])
    program = Program(len(prog), filters)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.prctl(22, 2, ctypes.byref(program), 0, 0) != 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")


def _main() -> None:
    config = json.loads(sys.argv[1])
    code = config["code"] if "code" in config else sys.stdin.read()
    workdir = os.path.realpath(config["workdir"])

    import resource

    def limit(which: int, value: int) -> None:
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            pass

    limit(resource.RLIMIT_CORE, 0)
    limit(resource.RLIMIT_CPU, int(config["cpu_s"]))
    limit(resource.RLIMIT_AS, int(config["memory_bytes"]))
    limit(resource.RLIMIT_FSIZE, int(config["fsize_bytes"]))
    limit(resource.RLIMIT_NOFILE, 64)
    if config.get("uid") is not None and os.getuid() == 0:
        os.setgroups([])
        os.setgid(int(config["gid"]))
        os.setuid(int(config["uid"]))
    limit(resource.RLIMIT_NPROC, int(config["nproc"]))
    os.chdir(workdir)
    if config.get("seccomp"):
        _install_seccomp()

    read_roots = tuple(
        sorted({os.path.realpath(p) for p in [*sys.path, sys.prefix, sys.base_prefix, sys.exec_prefix] if p})
    )
    read_files = frozenset({"/dev/null", "/dev/urandom", "/dev/random", "/dev/zero"})
    blocked_prefixes = ("socket.", "ctypes.", "subprocess.", "os.fork", "os.exec", "os.posix_spawn", "os.spawn",
                        "pty.", "winreg.", "_winapi.", "os.startfile", "webbrowser.")
    blocked = frozenset({"os.system", "os.kill", "os.killpg", "signal.pthread_kill", "gc.get_objects",
                         "gc.get_referrers", "gc.get_referents", "os.chroot", "os.setuid",
                         "sys.settrace", "sys.setprofile", "os.chdir", "os.fchdir", "resource.setrlimit",
                         "resource.prlimit", "mmap.__new__"})
    path_events = frozenset({"os.listdir", "os.scandir", "os.remove", "os.rename", "os.rmdir", "os.mkdir",
                             "os.chmod", "os.chown", "os.link", "os.symlink", "os.truncate", "os.utime",
                             "os.chflags", "os.lchflags", "os.setxattr", "os.removexattr", "os.listxattr",
                             "os.getxattr", "shutil.rmtree", "shutil.copyfile", "shutil.copymode",
                             "shutil.copystat", "shutil.move", "shutil.chown", "glob.glob", "tempfile.mkstemp",
                             "tempfile.mkdtemp"})
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

    def inside(path: str, roots: tuple[str, ...]) -> bool:
        real = os.path.realpath(path)
        return any(real == r or real.startswith(r.rstrip("/") + "/") for r in roots)

    def as_path(value: object) -> str | None:
        if isinstance(value, bytes):
            return os.fsdecode(value)
        if isinstance(value, str):
            return value
        if isinstance(value, os.PathLike):
            return os.fsdecode(os.fspath(value))
        return None

    def hook(event: str, args: tuple) -> None:  # type: ignore[type-arg]
        if event in blocked or event.startswith(blocked_prefixes):
            raise PermissionError(f"sandbox: {event} is not allowed")
        if event == "open":
            path = as_path(args[0])
            if path is None:
                return  # an already-open file descriptor
            mode = args[1] or "r"
            flags = args[2] or 0
            writing = any(c in mode for c in "wax+") or bool(flags & write_flags)
            if inside(path, (workdir,)) or (not writing and (inside(path, read_roots) or path in read_files)):
                return
            raise PermissionError(f"sandbox: cannot open {path!r} outside the working directory")
        if event in path_events:
            for value in args:
                path = as_path(value)
                if path is None:
                    continue
                reading = event in ("os.listdir", "os.scandir", "os.listxattr", "os.getxattr", "glob.glob")
                if not (inside(path, (workdir,)) or (reading and inside(path, read_roots))):
                    raise PermissionError(f"sandbox: {event} on {path!r} is not allowed")
        if event == "object.__setattr__" and len(args) > 1 and args[1] in ("__code__", "__closure__"):
            raise PermissionError("sandbox: replacing code objects is not allowed")

    if config.get("audit", True):
        # ctypes loads the interpreter's own symbols when imported; do that now, so that numpy and
        # sympy can import it, and refuse every later ctypes load, symbol lookup or foreign call.
        try:
            import ctypes  # noqa: F401
        except ImportError:
            pass
        sys.addaudithook(hook)

    import ast

    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    tree = ast.parse(code, "<sandbox>", "exec")
    last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    if last is not None:
        tree.body.pop()
    exec(compile(tree, "<sandbox>", "exec"), namespace)
    if last is not None:
        value = eval(compile(ast.Expression(last.value), "<sandbox>", "eval"), namespace)
        if value is not None:
            print(repr(value))


if __name__ == "__main__":
    try:
        _main()
    except SystemExit:
        raise
    except BaseException:
        exc_type, exc, tb = sys.exc_info()
        # show the user's frames only, not the bootstrap's
        while tb is not None and tb.tb_frame.f_code.co_filename != "<sandbox>":
            tb = tb.tb_next
        traceback.print_exception(exc_type, exc, tb)
        sys.exit(1)
