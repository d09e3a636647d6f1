"""``Isolation``: which walls a sandbox really has on this machine, measured by running a probe in it.

The probe is ordinary sandboxed Python (audit hook off, so only the kernel speaks)
that reports its namespaces, uid map, capabilities, seccomp and ``no_new_privs``
state, rlimits, the size and inode count of its writable folder, whether ``/``,
``/usr`` and ``/etc`` refuse writes, and which host inodes it sees at paths that must
stay hidden (a folder of its own by the same name, such as ``/tmp``, is not the
host's). The host compares the namespaces with its own. Nothing is assumed from the
backend's name.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

WALLS: dict[str, str] = {
    "user_namespace": "runs in a user namespace of its own",
    "pid_namespace": "sees and signals only its own processes (new pid namespace)",
    "mount_namespace": "has a file system view of its own (new mount namespace)",
    "network_namespace": "has no network, not even the host's 127.0.0.1 (new network namespace)",
    "ipc_namespace": "shares no System V IPC or POSIX queues with the host (new IPC namespace)",
    "uts_namespace": "has a hostname of its own (new UTS namespace)",
    "cgroup_namespace": "sees only its own cgroup (new cgroup namespace)",
    "unprivileged_uid": "runs as a host uid that is not root",
    "no_capabilities": "holds no capabilities (effective, permitted, bounding, ambient)",
    "seccomp": "a seccomp filter denies cross-process and kernel-configuration system calls",
    "rlimits": "CPU, memory, file size, process and descriptor rlimits are set",
    "private_tmpfs": "its only writable place is a private tmpfs of the requested size",
    "inode_quota": "that tmpfs has a file-count (inode) quota",
    "read_only_system": "/, /usr and /etc refuse writes",
    "host_files_hidden": "the host's secrets, repository and data are not visible",
    "process_tree_kill": "every process it starts is killed when the run ends",
    "audit_hook": "Python code runs behind an audit hook (a second wall, in-process)",
}
# Walls a sandbox must have to run untrusted code in CI (the rest are extra layers).
REQUIRED = (
    "user_namespace", "pid_namespace", "mount_namespace", "network_namespace", "ipc_namespace",
    "unprivileged_uid", "no_capabilities", "seccomp", "rlimits", "private_tmpfs", "inode_quota",
    "read_only_system", "host_files_hidden", "process_tree_kill",
)  # fmt: skip

PROBE = r"""
import json, os, resource, sys
report = {"status": {}, "writes": {}, "visible": {}}
with open("/proc/self/status") as f:
    for line in f:
        key, _, value = line.partition(":")
        report["status"][key] = value.strip()
for ns in ("user", "pid", "mnt", "net", "ipc", "uts", "cgroup"):
    try:
        report.setdefault("ns", {})[ns] = os.readlink("/proc/self/ns/" + ns)
    except OSError:
        pass
try:
    report["uid_map"] = open("/proc/self/uid_map").read().split()
except OSError:
    pass
for path in ("/probe-write", "/usr/probe-write", "/etc/probe-write"):
    try:
        open(path, "w").close()
        os.unlink(path)
        report["writes"][path] = True
    except OSError:
        report["writes"][path] = False
for path in json.loads(sys.stdin.read()):
    try:
        info = os.stat(path)
        report["visible"][path] = [info.st_dev, info.st_ino]
    except OSError:
        report["visible"][path] = None
fs = os.statvfs(".")
report["disk_bytes"] = fs.f_blocks * fs.f_frsize
report["files"] = fs.f_files
report["rlimit_as"] = resource.getrlimit(resource.RLIMIT_AS)[0]
report["rlimit_nproc"] = resource.getrlimit(resource.RLIMIT_NPROC)[0]
report["uid"] = os.getuid()
print(json.dumps(report))
"""


@dataclass(frozen=True)
class Isolation:
    """Which walls a sandbox has, measured on this machine.

    Attributes:
        backend: ``"bwrap"``, ``"process"`` or ``"docker"``.
        walls: Wall name -> present; the names and meanings are in :data:`WALLS`.
        notes: Wall name -> why it is missing, where known.
    """

    backend: str
    walls: Mapping[str, bool]
    notes: Mapping[str, str] = field(default_factory=dict)

    @property
    def missing(self) -> tuple[str, ...]:
        """The required walls (:data:`REQUIRED`) this sandbox lacks."""
        return tuple(name for name in REQUIRED if not self.walls.get(name, False))

    @property
    def complete(self) -> bool:
        """Whether every required wall is present."""
        return not self.missing

    def describe(self) -> str:
        """A short text report: one line per wall, present or missing, and why."""
        lines = [f"sandbox backend: {self.backend}"]
        for name, meaning in WALLS.items():
            present = self.walls.get(name, False)
            note = f" ({self.notes[name]})" if name in self.notes else ""
            lines.append(f"  [{'x' if present else ' '}] {name}: {meaning}{note}")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        """The report as plain data (for ``info`` and logs)."""
        return {"backend": self.backend, "walls": dict(self.walls), "missing": list(self.missing),
                "notes": dict(self.notes)}


def hidden_paths() -> list[str]:
    """Host paths a sandbox must not see: secrets, the data folder, the current folder, the home folder."""
    candidates = ["/etc/shadow", "/etc/ssh", "/root/.ssh", "/root/.bash_history", "/var/log", "/run",
                  os.getcwd(), os.path.expanduser("~"), os.environ.get("ROLLGYM_DATA_DIR") or ""]
    return [os.path.abspath(p) for p in candidates if p and os.path.abspath(p) != "/" and os.path.exists(p)]


def identity(path: str) -> list[int] | None:
    """``[st_dev, st_ino]`` of ``path``: a bind mount shows the host's, a sandbox's own folder does not."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_dev, info.st_ino]


def _host_ns() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for ns in ("user", "pid", "mnt", "net", "ipc", "uts", "cgroup"):
        try:
            out[ns] = os.readlink(f"/proc/self/ns/{ns}")
        except OSError:
            out[ns] = None
    return out


def evaluate(
    backend: str,
    probe_stdout: str,
    *,
    disk_bytes: int,
    max_files: int,
    mem_bytes: int,
    audit_hook: bool,
    tree_kill: bool,
    error: str | None = None,
) -> Isolation:
    """Turn the probe's report into an :class:`Isolation` (every wall missing if the probe failed)."""
    if error is not None:
        return Isolation(backend, dict.fromkeys(WALLS, False), dict.fromkeys(REQUIRED, error))
    try:
        report = json.loads(probe_stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return Isolation(backend, dict.fromkeys(WALLS, False), {"probe": "the isolation probe printed no report"})
    host = _host_ns()
    ns = report.get("ns", {})
    walls: dict[str, bool] = {}
    notes: dict[str, str] = {}
    for name, key in (("user", "user"), ("pid", "pid"), ("mount", "mnt"), ("network", "net"), ("ipc", "ipc"),
                      ("uts", "uts"), ("cgroup", "cgroup")):
        walls[f"{name}_namespace"] = ns.get(key) is not None and ns.get(key) != host.get(key)
    status = report.get("status", {})
    uid_map = report.get("uid_map", [])
    if os.geteuid() != 0:
        walls["unprivileged_uid"] = True  # at most this process's own (non-root) uid
    elif walls["user_namespace"] and len(uid_map) == 3:
        walls["unprivileged_uid"] = uid_map[1] != "0"
    else:
        walls["unprivileged_uid"] = report.get("uid") != 0
    if not walls["unprivileged_uid"]:
        notes["unprivileged_uid"] = "the code runs as the host's root (Python not readable by others?)"
    caps = [status.get(k, "") for k in ("CapEff", "CapPrm", "CapBnd", "CapAmb")]
    walls["no_capabilities"] = all(c and int(c, 16) == 0 for c in caps)
    walls["seccomp"] = status.get("Seccomp") == "2" and status.get("NoNewPrivs") == "1"
    walls["rlimits"] = report.get("rlimit_as") == mem_bytes and report.get("rlimit_nproc", -1) > 0
    walls["private_tmpfs"] = walls["mount_namespace"] and report.get("disk_bytes") == disk_bytes
    walls["inode_quota"] = walls["private_tmpfs"] and report.get("files") == max_files
    if not walls["inode_quota"]:
        notes["inode_quota"] = "no tmpfs of its own: only RLIMIT_FSIZE bounds what it writes"
    walls["read_only_system"] = not any(report.get("writes", {}).values())
    # a path is visible when the sandbox sees the very host inode (not a folder of its own by that name)
    visible = [p for p, seen in report.get("visible", {}).items() if seen is not None and seen == identity(p)]
    walls["host_files_hidden"] = not visible
    if visible:
        notes["host_files_hidden"] = "visible: " + ", ".join(sorted(visible)[:5])
    walls["process_tree_kill"] = tree_kill
    walls["audit_hook"] = audit_hook
    for name in ("user", "pid", "mount", "network", "ipc"):
        if not walls[f"{name}_namespace"] and backend != "bwrap":
            notes[f"{name}_namespace"] = "needs bubblewrap (apt-get install bubblewrap)"
    return Isolation(backend, walls, notes)
