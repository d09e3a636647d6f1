"""The supervisor's privileged set-up under bubblewrap: the tmpfs, ``/etc``, a read-only root, and the
drop to an unprivileged uid in a new user namespace with no capabilities. Standard library only."""

from __future__ import annotations

import ctypes
import os
from typing import Any

INSIDE_UID = 65534
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 4, 24, 38
PR_SET_CHILD_SUBREAPER, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 36, 47, 4
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC = 1, 2, 4, 32, 4096, 16384
CLONE_NEWUSER, CLONE_NEWIPC = 0x10000000, 0x08000000


class SetupError(Exception):
    """A step of setting up the sandbox failed; the message says which."""


def prctl(option: int, value: int) -> int:
    """``prctl(option, value, 0, 0, 0)``."""
    return int(_libc.prctl(option, value, 0, 0, 0))


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise SetupError(f"{what} failed: {os.strerror(err)}")


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    result = _libc.mount(
        source.encode(), target.encode(), fstype.encode() if fstype else None, ctypes.c_ulong(flags),
        data.encode() if data else None,
    )
    _check(result, f"mount {target}")


def _write_file(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _proc_write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    except OSError as exc:
        raise SetupError(f"writing {path} failed: {exc.strerror}") from None
    finally:
        os.close(fd)


def mount_box(root: str, disk_bytes: int, max_files: int, rebind: list[list[str]] | None = None) -> None:
    """The sandbox's only writable place: a tmpfs with a byte and an inode quota, and its binds.

    ``rebind``: ``[stash, target]`` pairs, read-only folders of the Python installation that live
    under ``/tmp`` or ``/dev/shm`` (bubblewrap put them aside at ``stash``); each is bound back at
    ``target`` over the private folder, read-only, so that jobs run the same interpreter."""
    flags = MS_NOSUID | MS_NODEV
    _mount("tmpfs", root, "tmpfs", flags, f"size={disk_bytes},nr_inodes={max_files},mode=0755")
    for name, mode in (("work", 0o755), ("tmp", 0o1777), ("shm", 0o1777)):
        os.mkdir(os.path.join(root, name), mode)
        os.chmod(os.path.join(root, name), mode)
    _mount(os.path.join(root, "tmp"), "/tmp", None, MS_BIND, None)
    if os.path.isdir("/dev/shm"):
        _mount(os.path.join(root, "shm"), "/dev/shm", None, MS_BIND, None)
    for stash, target in rebind or ():
        for folder in [*reversed(_parents(target)), target]:
            if not os.path.isdir(folder):
                os.mkdir(folder, 0o755)
                os.chmod(folder, 0o755)
        _mount(stash, target, None, MS_BIND | MS_REC, None)
        _mount("none", target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, None)


def _parents(path: str) -> list[str]:
    """The folders above ``path`` below its top folder, nearest first: ``/tmp/a/b/c`` -> ``/tmp/a/b``, ``/tmp/a``."""
    parts = path.split("/")
    return ["/".join(parts[:n]) for n in range(len(parts) - 1, 2, -1)]


def kept_folders(rebind: list[list[str]], root: str) -> tuple[set[str], set[str]]:
    """For emptying the writable folders between jobs: the bound-back targets (as paths under ``root``,
    where the supervisor empties them) and the folders that lead to them."""
    targets: set[str] = set()
    leading: set[str] = set()
    for _, target in rebind:
        for mount, name in (("/tmp", "tmp"), ("/dev/shm", "shm")):
            if target.startswith(mount + "/"):
                inner = os.path.join(root, name, target[len(mount) + 1:])
                targets.add(inner)
                leading.update(p for p in _parents(inner) if len(p) > len(os.path.join(root, name)))
    return targets, leading


def write_etc(home: str) -> None:
    """A minimal ``/etc`` for the sandbox user (tools such as ``whoami`` and ``ssh`` ask for it)."""
    os.makedirs("/etc", exist_ok=True)
    _write_file("/etc/passwd", f"root:x:0:0::/:/bin/false\nsandbox:x:{INSIDE_UID}:{INSIDE_UID}::{home}:/bin/sh\n")
    _write_file("/etc/group", f"root:x:0:\nsandbox:x:{INSIDE_UID}:\n")
    _write_file("/etc/hosts", "127.0.0.1 localhost\n::1 localhost\n")


def make_read_only(*paths: str) -> None:
    """Remount the bubblewrap root and ``/dev`` read-only, so nothing but the tmpfs takes writes."""
    for path in paths:
        _mount("none", path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID, None)


def drop_privileges(host_uid: int | None, inside_uid: int | None, chown: list[str]) -> None:
    """Become ``host_uid`` (root path), enter a new user namespace as ``inside_uid``, drop every capability."""
    if host_uid is not None:
        for path in chown:
            os.chown(path, host_uid, host_uid)
        os.setgroups([])
        os.setresgid(host_uid, host_uid, host_uid)
        os.setresuid(host_uid, host_uid, host_uid)
    elif inside_uid is not None:
        for path in chown:
            os.chown(path, 0, 0)
    if inside_uid is not None:
        outer_uid, outer_gid = os.getuid(), os.getgid()
        _libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # a uid change made /proc/self root's; the maps live there
        _check(_libc.unshare(CLONE_NEWUSER), "unshare(CLONE_NEWUSER)")
        _proc_write("/proc/self/setgroups", "deny")
        _proc_write("/proc/self/uid_map", f"{inside_uid} {outer_uid} 1")
        _proc_write("/proc/self/gid_map", f"{inside_uid} {outer_gid} 1")
        os.setresgid(inside_uid, inside_uid, inside_uid)
        os.setresuid(inside_uid, inside_uid, inside_uid)
    drop_capabilities()


def private_ipc() -> None:
    """Enter a new IPC namespace (in a new user namespace, as the same uid and gid), then drop every capability.

    Called in each job's process before its code runs, so that System V IPC objects and POSIX
    message queues die with the job: a later job in the same sandbox starts with none.
    Raises :class:`SetupError` if the kernel refuses."""
    uid, gid = os.getuid(), os.getgid()
    _check(_libc.unshare(CLONE_NEWUSER | CLONE_NEWIPC), "unshare(CLONE_NEWUSER | CLONE_NEWIPC)")
    _proc_write("/proc/self/setgroups", "deny")
    _proc_write("/proc/self/uid_map", f"{uid} {uid} 1")
    _proc_write("/proc/self/gid_map", f"{gid} {gid} 1")
    drop_capabilities()


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _last_cap() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 40


LAST_CAP = _last_cap()


def drop_capabilities() -> None:
    """Clear the bounding and ambient sets, then effective, permitted and inheritable capabilities."""
    for cap in range(LAST_CAP + 1):
        _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # fails harmlessly without CAP_SETPCAP
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(header), data), "capset")
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")


def self_report() -> dict[str, Any]:
    """What the supervisor can see of its own confinement, for the host's isolation report."""
    report: dict[str, Any] = {"uid": os.getuid(), "gid": os.getgid(), "pid": os.getpid(), "ns": {}}
    for ns in ("user", "pid", "mnt", "net", "ipc", "uts", "cgroup"):
        try:
            report["ns"][ns] = os.readlink(f"/proc/self/ns/{ns}")
        except OSError:
            report["ns"][ns] = None
    try:
        with open("/proc/self/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("CapEff", "CapPrm", "CapInh", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp"):
                    report[key] = value.strip()
    except OSError:
        pass
    try:
        with open("/proc/self/uid_map") as f:
            report["uid_map"] = f.read().split()
    except OSError:
        pass
    return report
