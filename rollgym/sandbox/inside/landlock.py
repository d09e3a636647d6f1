"""Landlock rules (Linux 5.13+) for the sandbox without bubblewrap: read only the Python and system
libraries, write only the working folder. Binds root too. Standard library only."""

from __future__ import annotations

import ctypes
import os

_FS_V1 = (1 << 13) - 1  # EXECUTE .. MAKE_SYM
_FS_BY_ABI = {2: 1 << 13, 3: 1 << 14, 5: 1 << 15}  # REFER, TRUNCATE, IOCTL_DEV
_FILE_RIGHTS = 1 | 2 | 4 | (1 << 14) | (1 << 15)  # the rights a rule on a plain file may carry
_READ = 1 | 4 | 8  # EXECUTE, READ_FILE, READ_DIR
# Folders the dynamic loader reads shared libraries from, and its cache; none holds task data.
SYSTEM_READ_PATHS = ("/lib", "/lib32", "/lib64", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/local/lib",
                     "/etc/ld.so.cache", "/dev/null", "/dev/zero", "/dev/random", "/dev/urandom")


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def abi() -> int:
    """The kernel's Landlock ABI version, or 0 when Landlock is unavailable."""
    version = _libc().syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))  # CREATE_RULESET_VERSION
    return int(version) if version > 0 else 0


def restrict(read_paths: list[str], write_paths: list[str]) -> None:
    """Confine this process (and its children) to reading ``read_paths`` and changing ``write_paths``.

    With ABI 4+ no TCP bind or connect either; with ABI 6+ no signals or abstract
    UNIX sockets outside the sandbox. Paths that do not exist are skipped. Raises
    ``OSError`` when Landlock is unavailable or a step fails.
    """
    version = abi()
    if version < 1:
        raise OSError("Landlock is not available on this kernel")
    handled_fs = _FS_V1
    for since, bit in _FS_BY_ABI.items():
        if version >= since:
            handled_fs |= bit
    fields = [("fs", ctypes.c_uint64)]
    values = [handled_fs]
    if version >= 4:
        fields.append(("net", ctypes.c_uint64))
        values.append(1 | 2)  # BIND_TCP, CONNECT_TCP
    if version >= 6:
        fields.append(("scoped", ctypes.c_uint64))
        values.append(1 | 2)  # ABSTRACT_UNIX_SOCKET, SIGNAL

    class RulesetAttr(ctypes.Structure):
        _fields_ = fields

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

    libc = _libc()
    attr = RulesetAttr(*values)
    ruleset = libc.syscall(444, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        for rights, paths in ((_READ, read_paths), (handled_fs, write_paths)):
            for path in paths:
                try:
                    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue
                try:
                    allowed = rights if os.path.isdir(path) else rights & _FILE_RIGHTS
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
