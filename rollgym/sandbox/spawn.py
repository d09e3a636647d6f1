"""How a sandbox's supervisor is started: under bubblewrap (``bwrap``), or as a plain process (``process``).

:class:`BwrapLauncher` builds the ``bwrap`` command line: new pid, mount, network,
IPC, UTS and cgroup namespaces (the supervisor adds the user namespace itself),
``--die-with-parent``, ``--new-session``, ``--as-pid-1`` (the supervisor is the
namespace's init: signals from inside cannot touch it, and its exit kills every
process left), and a root file system that is an empty tmpfs with, read-only:
``/usr`` (and the ``/bin``, ``/lib``... links or folders), the Python installation
and virtual environment this process runs from, the supervisor's own code, the
loader cache and ``/etc/alternatives``; plus a new ``/proc`` and a minimal ``/dev``.
Nothing else of the host is visible: not ``/root``, ``/home``, ``/work``, the
repository, the data folder, ``/etc/shadow``, ``/var`` or ``/run``.

When this process is root, the supervisor keeps ``CAP_SYS_ADMIN``, ``CAP_SETUID``,
``CAP_SETGID``, ``CAP_SETPCAP`` and ``CAP_CHOWN`` just long enough to mount its tmpfs and drop to a
host uid of its own (one per sandbox, from :data:`UID_BASE`); otherwise bubblewrap
makes a user namespace in which the supervisor is root until it drops.

:class:`DirectLauncher` is the fallback without bubblewrap: the same supervisor in a
host temporary folder, with rlimits, seccomp, Landlock and the audit hook, but no
namespaces (except a network namespace from ``unshare -n`` when root) and no quota
on files.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

INSIDE_DIR = Path(__file__).resolve().with_name("inside")
BOX_ROOT = "/sandbox"
INSIDE_MOUNT = "/.rollgym/inside"
# a sandbox's own package folder, in place of the installed packages (named so that tools which skip installed
# code by its path, such as hypothesis when it collects constants from "local" modules, skip it)
PACKAGES_MOUNT = "/.rollgym/site-packages"
STASH_MOUNT = "/.rollgym/python"  # Python folders under /tmp or /dev/shm, until bound back over the private ones
PRIVATE_MOUNTS = ("/tmp", "/dev/shm")  # the supervisor mounts folders of its own tmpfs on these
UID_BASE = 1_900_000_000  # host uids of sandboxes (root only): UID_BASE .. UID_BASE + UID_RANGE
UID_RANGE = 1 << 24
INSIDE_UID = 65534
LOADER = (
    "import importlib.util, sys\n"
    "d = sys.argv[1]\n"
    "s = importlib.util.spec_from_file_location('rollgym_sandbox_inside', d + '/__init__.py',"
    " submodule_search_locations=[d])\n"
    "m = importlib.util.module_from_spec(s); sys.modules[s.name] = m; s.loader.exec_module(m)\n"
    "from rollgym_sandbox_inside import supervisor\n"
    "supervisor.main(sys.argv[1:])\n"
    "import os; os._exit(0)\n"  # no interpreter teardown: nothing is left to flush
)
SUPERVISOR_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
}
_uid_lock = threading.Lock()
_uid_counter = itertools.count(random.Random(os.getpid()).randrange(UID_RANGE))


def next_host_uid() -> int:
    """A host uid for the next sandbox; consecutive sandboxes of this process never share one."""
    with _uid_lock:
        return UID_BASE + next(_uid_counter) % UID_RANGE


@dataclass
class Plan:
    """A supervisor ready to start: the command, its configuration, and what to remove afterwards."""

    argv: list[str]
    config: dict[str, Any]
    host_dir: Path | None = None  # the direct launcher's folder on the host
    host_uid: int | None = None
    env: dict[str, str] = field(default_factory=lambda: dict(SUPERVISOR_ENV))

    def command(self) -> list[str]:
        """The full command line (the configuration goes last, as JSON)."""
        return [*self.argv, json.dumps(self.config)]


def python_roots(executable: str | None = None) -> list[str]:
    """The folders the sandbox needs to run this Python: its installation and its virtual environment."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_path(key)
        if path:
            roots.add(path)
    if executable:
        roots.add(str(Path(executable).parent))
    roots.update(site_paths())  # those a .pth file adds from elsewhere too: the supervisor puts them on sys.path
    real = {os.path.realpath(p) for p in roots if p and os.path.isdir(p)}
    # keep the outermost folders only
    ordered = sorted(real, key=len)
    kept: list[str] = []
    for path in ordered:
        if not any(path == k or path.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(path)
    return kept


def _under(path: str, folders: tuple[str, ...]) -> bool:
    return any(path == f or path.startswith(f + "/") for f in folders)


class InterpreterError(Exception):
    """The interpreter lives where no sandbox can show it; the message says where and what to do."""


def check_placement(roots: list[str]) -> None:
    """Refuse, in one sentence, an interpreter whose folders the sandbox cannot show at their own path: one
    that is (or holds) ``/tmp``, ``/dev/shm``, ``/proc``, ``/dev`` or the sandbox's own folders. Folders
    *below* ``/tmp`` or ``/dev/shm`` are fine: they are bound back over the sandbox's private ones."""
    for root in roots:
        holds = [p for p in (*PRIVATE_MOUNTS, BOX_ROOT, "/.rollgym", "/proc", "/dev") if _under(p, (root.rstrip("/"),))]
        inside = _under(root, (BOX_ROOT, "/.rollgym", "/proc")) or (_under(root, ("/dev",))
                                                                    and not _under(root, ("/dev/shm",)))
        if holds or inside:
            raise InterpreterError(
                f"The Python installation folder {root} cannot be shown inside the sandbox (it is or holds a "
                "folder the sandbox replaces); install Python or the virtual environment elsewhere, e.g. under "
                "/opt or /home, or below /tmp in a folder of its own.")


@functools.lru_cache(maxsize=1)
def site_paths() -> list[str]:
    """This Python's site-packages folders. The supervisor starts with ``-S`` (no ``site``: its ``.pth``
    files, editable-install finders among them, cost more than the rest of start-up) and adds these."""
    paths = [p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and os.path.isdir(p)]
    return list(dict.fromkeys(paths))


def usr_parts() -> list[str]:
    """The parts of ``/usr`` a sandbox with its own ``packages`` shows: commands, shared libraries, locales and
    time zones; not ``/usr/lib``'s other folders or ``/usr/share``, where other software keeps copies of Python
    packages (a cloud SDK's vendored ``six`` and ``idna``)."""
    keep = ["/usr/bin", "/usr/sbin", "/usr/lib64", "/usr/lib32", "/usr/libx32", "/usr/lib/locale",
            "/usr/share/zoneinfo", "/usr/lib/os-release"]
    keep += [str(p) for p in Path("/usr/lib").glob("*-linux-gnu*")]
    return [p for p in keep if os.path.exists(p) and not os.path.islink(p)]


def python_folders() -> list[str]:
    """This Python's standard library folders (the ones to show when ``/usr`` is shown only in part)."""
    found = {sysconfig.get_path(key) for key in ("stdlib", "platstdlib")}
    found |= {p for p in sys.path if p and os.path.isdir(p) and not p.endswith(("site-packages", "dist-packages"))}
    return sorted({os.path.realpath(p) for p in found if p and os.path.isdir(p)})


def installed_package_folders() -> list[str]:
    """Every folder of installed packages this Python could read: its own and its base installation's
    ``site-packages`` and ``dist-packages``, the user's, those on ``sys.path``, and the wheels ``ensurepip``
    bundles (real paths, existing)."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    found = [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, "/usr", "/usr/local"}:
        for lib in ("lib", "lib64"):
            found += [f"{prefix}/{lib}/{version}/site-packages", f"{prefix}/{lib}/{version}/dist-packages",
                      f"{prefix}/{lib}/python3/dist-packages", f"{prefix}/{lib}/python3/site-packages"]
    try:
        import site

        found += [*site.getsitepackages(), site.getusersitepackages()]
    except (AttributeError, ImportError):
        pass
    found.append(os.path.join(sysconfig.get_path("stdlib"), "ensurepip", "_bundled"))  # pip's and setuptools'
    real = {os.path.realpath(p) for p in found if p and os.path.isdir(p)}  # wheels, with vendored six and idna
    return sorted(real)


def interpreter(executable: str | None = None) -> str:
    """The Python the sandbox runs (this one by default), as an absolute path."""
    path = executable or sys.executable
    if not path or not os.path.isabs(path):
        raise FileNotFoundError("no absolute path to a Python interpreter; pass python='/path/to/python'")
    return path


def default_env(python: str, workdir: str, tmpdir: str) -> dict[str, str]:
    """The environment a job starts from; ``Job.env`` is laid over it."""
    return {
        "PATH": f"{Path(python).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": workdir,
        "TMPDIR": tmpdir,
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "NUMEXPR_NUM_THREADS": "1",
    }


@functools.lru_cache(maxsize=1)
def compile_inside() -> None:
    """Write the supervisor's ``.pyc`` files where we may (the sandbox sees the folder read-only and
    would compile the sources on every start otherwise)."""
    import compileall

    try:
        compileall.compile_dir(str(INSIDE_DIR), quiet=2)
    except OSError:
        pass


@functools.lru_cache(maxsize=1)
def bwrap_binary() -> str | None:
    """The ``bwrap`` executable, or ``None`` (``apt-get install bubblewrap``)."""
    return shutil.which("bwrap")


class BwrapLauncher:
    """Starts supervisors under bubblewrap; see the module docstring."""

    backend = "bwrap"

    def __init__(self, python: str | None = None, packages: str | None = None) -> None:
        binary = bwrap_binary()
        if binary is None:
            raise FileNotFoundError("bubblewrap is not installed (apt-get install bubblewrap)")
        self.binary = binary
        self.python = interpreter(python)
        check_placement(python_roots(self.python))
        compile_inside()
        self.root_mode = os.geteuid() == 0
        self.workdir = f"{BOX_ROOT}/work"
        self.packages = packages
        self.env_defaults = default_env(self.python, self.workdir, "/tmp")
        if packages is not None:
            self.env_defaults["PYTHONPATH"] = PACKAGES_MOUNT
        self._static = self._static_args()

    def _static_args(self) -> list[str]:
        args = [self.binary, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
                "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--as-pid-1", "--hostname", "sandbox"]
        if not self.root_mode:
            args += ["--unshare-user", "--uid", "0", "--gid", "0"]
        args += ["--perms", "0755", "--dir", "/etc", "--perms", "0755", "--dir", "/.rollgym"]
        usr = usr_parts() if self.packages is not None else ["/usr"]
        for part in usr:
            for parent in reversed(Path(part).parents):
                if str(parent) != "/":
                    args += ["--perms", "0755", "--dir", str(parent)]
            args += ["--ro-bind", part, part]
        for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
            host = Path("/") / name
            if host.is_symlink():
                args += ["--symlink", os.readlink(host), f"/{name}"]
            elif host.is_dir():
                args += ["--ro-bind", str(host), f"/{name}"]
        for path in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
                     "/etc/localtime", "/etc/nsswitch.conf"):
            if os.path.exists(path):
                args += ["--ro-bind", path, path]
        made: set[str] = set()
        self.rebind: list[list[str]] = []
        bound = list(usr)
        for root in python_roots(self.python):
            if _under(root, tuple(usr)):
                continue
            if _under(root, ("/usr",)):  # a Python of /usr, with /usr bound in part: its own folders only
                for folder in python_folders():
                    if _under(folder, (root,)) and not _under(folder, tuple(bound)):
                        args += ["--ro-bind", folder, folder]
                        bound.append(folder)
                continue
            for parent in reversed(Path(root).parents):  # bubblewrap would make them 0700
                if str(parent) != "/" and str(parent) not in made:
                    made.add(str(parent))
                    args += ["--perms", "0755", "--dir", str(parent)]
            args += ["--ro-bind", root, root]
            bound.append(root)
            if _under(root, PRIVATE_MOUNTS):  # hidden by the supervisor's own /tmp: kept aside, bound back over it
                stash = f"{STASH_MOUNT}/{len(self.rebind)}"
                args += ["--ro-bind", root, stash]
                self.rebind.append([stash, root])
        if self.packages is not None:  # only the given packages: every installed one is hidden (an empty folder)
            for folder in installed_package_folders():
                places = [folder] if _under(folder, tuple(bound)) else []
                places += [stash + folder[len(target):] for stash, target in self.rebind if _under(folder, (target,))]
                for place in places:
                    args += ["--tmpfs", place, "--remount-ro", place]
            args += ["--ro-bind", self.packages, PACKAGES_MOUNT]
        args += ["--ro-bind", str(INSIDE_DIR), INSIDE_MOUNT]
        args += ["--proc", "/proc", "--dev", "/dev", "--dir", BOX_ROOT, "--dir", "/tmp",
                 "--chdir", "/", "--cap-drop", "ALL"]
        for cap in ("CAP_SYS_ADMIN", "CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_CHOWN"):
            args += ["--cap-add", cap]
        if not self.root_mode:
            args += ["--cap-add", "CAP_SETFCAP"]  # to map its uid 0 into the supervisor's user namespace
        return args

    def plan(self, preload: tuple[str, ...], result_fd: int) -> Plan:
        """A supervisor to start, writing replies to ``result_fd``."""
        host_uid = next_host_uid() if self.root_mode else None
        config = {"mode": "bwrap", "root": BOX_ROOT, "result_fd": result_fd, "preload": list(preload),
                  "site_paths": [] if self.packages else site_paths(), "rebind": self.rebind,
                  "host_uid": host_uid, "inside_uid": INSIDE_UID, "kill_all": True}
        argv = [*self._static, "--", self.python, "-I", "-S", "-c", LOADER, INSIDE_MOUNT]
        return Plan(argv, config, host_uid=host_uid)

    def cleanup(self, plan: Plan) -> bool:
        """Nothing on the host to remove: the tmpfs dies with the sandbox's mount namespace."""
        return True


@functools.lru_cache(maxsize=1)
def python_is_world_readable() -> bool:
    """Whether an unprivileged user could run this Python (every folder on the way searchable)."""
    for path in python_roots():
        p = Path(path)
        try:
            if not p.stat().st_mode & 0o004:
                return False
            for parent in [p, *p.parents]:
                if not parent.stat().st_mode & 0o001:
                    return False
        except OSError:
            return False
    return True


@functools.lru_cache(maxsize=1)
def network_namespace_prefix() -> tuple[str, ...]:
    """``("unshare", "-n")`` when this process may create a network namespace (root), else ``()``."""
    unshare = shutil.which("unshare")
    if unshare is None or os.geteuid() != 0:
        return ()
    try:
        done = subprocess.run([unshare, "-n", "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ()
    return (unshare, "-n") if done.returncode == 0 else ()


@functools.lru_cache(maxsize=1)
def landlock_abi() -> int:
    """The kernel's Landlock ABI (0 when absent), asked in a child so this process stays unconfined."""
    code = "import sys; sys.path.insert(0, sys.argv[1]); import landlock; print(landlock.abi())"
    try:
        done = subprocess.run([sys.executable, "-I", "-c", code, str(INSIDE_DIR)], capture_output=True, timeout=30)
        return int(done.stdout.strip() or 0)
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return 0


class DirectLauncher:
    """Starts supervisors as plain child processes in a host temporary folder (no bubblewrap)."""

    backend = "process"

    def __init__(self, python: str | None = None, *, landlock: bool = True, packages: str | None = None) -> None:
        self.python = interpreter(python)
        self.packages = packages  # on PYTHONPATH only: without a mount namespace, installed packages stay readable
        compile_inside()
        self.prefix = network_namespace_prefix()
        self.drop = os.geteuid() == 0 and python_is_world_readable()
        self.landlock = landlock and landlock_abi() > 0
        self.workdir = ""  # per plan

    def plan(self, preload: tuple[str, ...], result_fd: int) -> Plan:
        root = Path(tempfile.mkdtemp(prefix="rollgym-sandbox-"))
        for name in ("work", "tmp"):
            (root / name).mkdir()
        host_uid = next_host_uid() if self.drop else None
        if host_uid is not None:
            root.chmod(0o711)
            for name in ("work", "tmp"):
                os.chown(root / name, host_uid, host_uid)
        read_paths = ["/usr", "/bin", "/lib", "/lib64", "/etc/ld.so.cache", "/etc/alternatives", "/proc/self",
                      "/dev/null", "/dev/zero", "/dev/random", "/dev/urandom"]
        read_paths += [self.packages] if self.packages else []
        config = {"mode": "direct", "root": str(root), "result_fd": result_fd, "preload": list(preload),
                  "site_paths": site_paths(),
                  "host_uid": host_uid, "inside_uid": None, "kill_all": host_uid is not None,
                  "landlock": self.landlock, "read_paths": read_paths}
        argv = [*self.prefix, self.python, "-I", "-S", "-c", LOADER, str(INSIDE_DIR)]
        plan = Plan(argv, config, host_dir=root, host_uid=host_uid)
        plan.env["TMPDIR"] = str(root / "tmp")
        return plan

    def env_for(self, plan: Plan) -> dict[str, str]:
        """The job environment defaults of one plan (its folders are on the host)."""
        env = default_env(self.python, str(Path(plan.config["root"]) / "work"), str(Path(plan.config["root"]) / "tmp"))
        if self.packages is not None:
            env["PYTHONPATH"] = self.packages
        return env

    def cleanup(self, plan: Plan) -> bool:
        """Remove the plan's host folder; ``False`` if anything is left (the caller counts and warns)."""
        if plan.host_uid is not None:
            kill_uid(plan.host_uid)
        if plan.host_dir is None:
            return True
        shutil.rmtree(plan.host_dir, ignore_errors=True)
        return not plan.host_dir.exists()


def kill_uid(uid: int) -> None:
    """SIGKILL every process of host uid ``uid`` (a sandbox's own uid; root only)."""
    import signal

    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid == uid:
                os.kill(int(entry.name), signal.SIGKILL)
        except OSError:
            continue
