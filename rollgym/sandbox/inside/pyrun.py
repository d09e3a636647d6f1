"""Run Python source as ``__main__`` behind an audit hook, printing the value of a final expression.

The audit hook (``sys.addaudithook``) is a second wall, not the first: it lives in
the interpreter it guards, so code that reaches its closure (for instance through a
traceback's frame locals) can rewrite its rules. What holds then is the kernel:
namespaces, the read-only file view, seccomp and rlimits. The hook refuses sockets,
``ctypes`` after start-up, ``gc`` object walks, ``sqlite3`` and the imports of
``readline`` and ``_posixshmem`` (C code that opens files without an audit event),
opening or listing files outside the writable folders and the Python installation,
changing files outside the writable folders, signals to other processes, rlimit and
uid changes, and, unless ``allow_processes``, every way to start a process.
"""

from __future__ import annotations

import ast
import os
import sys
import traceback
from collections.abc import Callable
from types import CodeType
from typing import Any

PROCESS_EVENTS = ("subprocess.", "os.fork", "os.exec", "os.posix_spawn", "os.spawn", "pty.", "os.system")
BLOCKED_PREFIXES = ("socket.", "ctypes.", "winreg.", "_winapi.", "os.startfile", "webbrowser.", "sqlite3.")
BLOCKED = frozenset({"os.kill", "os.killpg", "signal.pthread_kill", "gc.get_objects", "gc.get_referrers",
                     "gc.get_referents", "os.chroot", "os.setuid", "sys.settrace", "sys.setprofile",
                     "resource.setrlimit", "resource.prlimit", "mmap.__new__"})
BLOCKED_IMPORTS = frozenset({"readline", "_posixshmem", "_cffi_backend"})
PATH_EVENTS = frozenset({"os.listdir", "os.scandir", "os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod",
                         "os.chown", "os.link", "os.symlink", "os.truncate", "os.utime", "os.chflags", "os.lchflags",
                         "os.setxattr", "os.removexattr", "os.listxattr", "os.getxattr", "shutil.rmtree",
                         "shutil.copyfile", "shutil.copymode", "shutil.copystat", "shutil.move", "shutil.chown",
                         "glob.glob", "tempfile.mkstemp", "tempfile.mkdtemp", "os.chdir", "os.fchdir"})
READ_EVENTS = frozenset({"os.listdir", "os.scandir", "os.listxattr", "os.getxattr", "glob.glob", "os.chdir"})
PASSED = frozenset({"exec", "compile"})  # never refused: the first test, so they touch little
READ_FILES = frozenset({"/dev/null", "/dev/urandom", "/dev/random", "/dev/zero"})
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _real(path: str) -> str:
    """``os.path.realpath(path)``; for a plain name in the working folder that is not a link, without
    realpath's walk (the working folder the kernel reports is real already)."""
    if "/" not in path and path not in ("", ".", ".."):
        try:
            folder = os.getcwd()
            # not there yet (no exception raised: cheap in a fresh fork), or there and not a link
            if not os.access(path, os.F_OK, follow_symlinks=False) or (
                    os.lstat(path).st_mode & 0o170000 != 0o120000):
                return folder.rstrip("/") + "/" + path
        except OSError:
            pass
    return os.path.realpath(path)


def _inside(path: str, roots: tuple[str, ...]) -> bool:
    real = _real(path)
    for root in roots:
        if real == root or real.startswith(root.rstrip("/") + "/"):
            return True
    return False


def _as_path(value: object) -> str | None:
    if isinstance(value, bytes):
        return os.fsdecode(value)
    if isinstance(value, str):
        return value
    if isinstance(value, os.PathLike):
        return os.fsdecode(os.fspath(value))
    return None


def make_hook(
    write_roots: tuple[str, ...], read_roots: tuple[str, ...], allow_processes: bool
) -> Callable[[str, tuple], None]:  # type: ignore[type-arg]
    """The audit hook: raises ``PermissionError("sandbox: ...")`` on a refused event."""
    blocked_prefixes = BLOCKED_PREFIXES if allow_processes else BLOCKED_PREFIXES + PROCESS_EVENTS

    def hook(event: str, args: tuple) -> None:  # type: ignore[type-arg]
        if event in PASSED:  # the events every job raises (few objects touched: cheap in a fresh fork)
            return
        if event in BLOCKED or event.startswith(blocked_prefixes):
            raise PermissionError(f"sandbox: {event} is not allowed")
        if event == "import" and args and args[0] in BLOCKED_IMPORTS:
            raise PermissionError(f"sandbox: importing {args[0]} is not allowed")
        if event == "open":
            path = _as_path(args[0])
            if path is None:
                return  # an already-open file descriptor
            mode = args[1] or "r"
            flags = args[2] or 0
            writing = bool(flags & _WRITE_FLAGS) or "w" in mode or "a" in mode or "x" in mode or "+" in mode
            if _inside(path, write_roots) or (not writing and (_inside(path, read_roots) or path in READ_FILES)):
                return
            raise PermissionError(f"sandbox: cannot open {path!r} outside the working directory")
        if event in PATH_EVENTS:
            reading = event in READ_EVENTS
            for value in args:
                path = _as_path(value)
                if path is None:
                    continue
                if not (_inside(path, write_roots) or (reading and _inside(path, read_roots))):
                    raise PermissionError(f"sandbox: {event} on {path!r} is not allowed")
        if event == "object.__setattr__" and len(args) > 1 and args[1] in ("__code__", "__closure__"):
            raise PermissionError("sandbox: replacing code objects is not allowed")

    return hook


def python_roots() -> tuple[str, ...]:
    """The folders this interpreter imports from (read-only for sandboxed code)."""
    paths = [*sys.path, sys.prefix, sys.base_prefix, sys.exec_prefix]
    return tuple(sorted({os.path.realpath(p) for p in paths if p}))


def real_roots(roots: tuple[str, ...]) -> tuple[str, ...]:
    """``roots`` with symbolic links resolved, as the hook compares paths."""
    return tuple(os.path.realpath(r) for r in roots)


def add_hook(hook: Callable[[str, tuple], None]) -> None:  # type: ignore[type-arg]
    """Install a hook from :func:`make_hook` (after importing ``ctypes`` once, so numpy and sympy can use it)."""
    try:
        import ctypes  # noqa: F401
    except ImportError:
        pass
    sys.addaudithook(hook)


def run_code(
    code: str | CodeType, namespace: dict[str, Any] | None = None, echo: bool = True
) -> tuple[int, str | None]:
    """Run ``code`` (source, or with ``echo=False`` a code object compiled already) as ``__main__``;
    return ``(exit status, uncaught exception class or None)``.

    ``namespace``: the globals to run in (a prelude's, already loaded); a new one by default.
    ``echo``: print the ``repr`` of a final expression statement's value (not ``None``); without
    it the code is compiled as it is, not parsed into a tree first.
    A traceback shows the user's frames only. ``SystemExit`` sets the status as
    ``sys.exit`` would.
    """
    if namespace is None:
        namespace = {"__builtins__": __builtins__}
    namespace["__name__"] = "__main__"
    try:
        if not echo:
            exec(code if isinstance(code, CodeType) else compile(code, "<sandbox>", "exec"), namespace)
            return 0, None
        assert isinstance(code, str)
        tree = ast.parse(code, "<sandbox>", "exec")
        last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        if last is not None:
            tree.body.pop()
        exec(compile(tree, "<sandbox>", "exec"), namespace)
        if last is not None:
            value = eval(compile(ast.Expression(last.value), "<sandbox>", "eval"), namespace)
            if value is not None:
                print(repr(value))
        return 0, None
    except SystemExit as exc:
        code_ = exc.code
        if code_ is None:
            return 0, None
        if isinstance(code_, int):
            return code_ & 0xFF, None
        print(code_, file=sys.stderr)
        return 1, None
    except BaseException:
        error_type, error, tb = sys.exc_info()
        while tb is not None and tb.tb_frame.f_code.co_filename != "<sandbox>":
            tb = tb.tb_next
        try:
            traceback.print_exception(error_type, error, tb)
        except BaseException:
            pass
        return 1, error_type.__name__ if error_type is not None else None
