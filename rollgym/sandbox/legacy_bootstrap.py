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
3. where the kernel offers Landlock (Linux 5.13+), restricts the file system
   (kernel-enforced, binds root too): reads only in the Python installation,
   the system library folders the dynamic loader needs and a few devices;
   reads, writes, new files and folders only in the working directory. With
   Landlock ABI 6+ it also refuses signals to processes outside the sandbox;
4. installs an audit hook (``sys.addaudithook``, Python-level) that refuses
   sockets, process creation (fork, exec, spawn, ``os.system``, ``subprocess``),
   signals to other processes, ``ctypes`` (any library load, symbol lookup or
   foreign call after the module itself is imported), ``gc``
   object walks, opening or listing files outside the working directory (reads
   are also allowed inside the Python installation, so imports work), and any
   file change outside the working directory, ``sqlite3`` connections (SQLite
   opens files in C, and ``ATTACH`` names any path) and the imports of
   ``readline`` and ``_posixshmem`` (both reach files without an audit event).
   The hook is Python code that the sandboxed code shares an interpreter with,
   so determined code can disarm it; the kernel layers above are what hold.

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


# Landlock access rights (linux/landlock.h), by the ABI version that introduced them.
_LANDLOCK_FS_V1 = (1 << 13) - 1  # EXECUTE .. MAKE_SYM
_LANDLOCK_FS_BY_ABI = {2: 1 << 13, 3: 1 << 14, 5: 1 << 15}  # REFER, TRUNCATE, IOCTL_DEV
_LANDLOCK_FILE_RIGHTS = 1 | 2 | 4 | (1 << 14) | (1 << 15)  # the rights a rule on a plain file may carry
_LANDLOCK_READ = 4 | 8  # READ_FILE, READ_DIR
# Folders the dynamic loader reads shared libraries from, and its cache; none holds task data.
SYSTEM_READ_PATHS = ("/lib", "/lib32", "/lib64", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/local/lib",
                     "/etc/ld.so.cache", "/dev/null", "/dev/zero", "/dev/random", "/dev/urandom")


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, or 0 when Landlock is unavailable."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    version = libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))  # LANDLOCK_CREATE_RULESET_VERSION
    return int(version) if version > 0 else 0


def _install_landlock(read_paths: list[str], write_paths: list[str]) -> None:
    """Restrict this process's file access to ``read_paths`` (read) and ``write_paths`` (everything).

    Raises ``OSError`` if Landlock is unavailable or a step fails; the caller decides
    whether that is fatal. Paths that do not exist are skipped.
    """
    import ctypes

    abi = landlock_abi()
    if abi < 1:
        raise OSError("Landlock is not available on this kernel")
    handled_fs = _LANDLOCK_FS_V1
    for version, bit in _LANDLOCK_FS_BY_ABI.items():
        if abi >= version:
            handled_fs |= bit
    fields = [("fs", ctypes.c_uint64)]
    values = [handled_fs]
    if abi >= 4:
        fields.append(("net", ctypes.c_uint64))
        values.append(1 | 2)  # BIND_TCP, CONNECT_TCP: no TCP at all (seccomp refuses sockets too)
    if abi >= 6:
        fields.append(("scoped", ctypes.c_uint64))
        values.append(1 | 2)  # ABSTRACT_UNIX_SOCKET, SIGNAL: nothing outside this sandbox

    class RulesetAttr(ctypes.Structure):
        _fields_ = fields

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    attr = RulesetAttr(*values)
    ruleset = libc.syscall(444, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        for rights, paths in ((_LANDLOCK_READ, read_paths), (handled_fs, write_paths)):
            for path in paths:
                try:
                    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue
                try:
                    allowed = rights if os.path.isdir(path) else rights & _LANDLOCK_FILE_RIGHTS
                    rule = PathBeneath(allowed & handled_fs, fd)
                    if libc.syscall(445, ctypes.c_int(ruleset), ctypes.c_int(1), ctypes.byref(rule),
                                    ctypes.c_uint32(0)) < 0:
                        raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
                finally:
                    os.close(fd)
        if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        if libc.syscall(446, ctypes.c_int(ruleset), ctypes.c_uint32(0)) < 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)


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
    if config.get("landlock"):
        _install_landlock([*read_roots, *SYSTEM_READ_PATHS], [workdir])
    read_files = frozenset({"/dev/null", "/dev/urandom", "/dev/random", "/dev/zero"})
    blocked_prefixes = ("socket.", "ctypes.", "subprocess.", "os.fork", "os.exec", "os.posix_spawn", "os.spawn",
                        "pty.", "winreg.", "_winapi.", "os.startfile", "webbrowser.", "sqlite3.")
    blocked_imports = frozenset({"readline", "_posixshmem", "_cffi_backend"})
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
        if event == "import" and args and args[0] in blocked_imports:
            raise PermissionError(f"sandbox: importing {args[0]} is not allowed")
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
