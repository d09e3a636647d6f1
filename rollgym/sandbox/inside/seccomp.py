"""Seccomp-BPF filters that deny cross-process, kernel-configuration and namespace system calls.

Two filters, stacked (the kernel runs both on every call, and the stricter verdict wins):

* the **base** filter, loaded once by the supervisor after its set-up, binds the supervisor
  and, inherited, every job;
* a **job** filter, loaded by each job's process before its code runs, adds what the
  supervisor itself needs but a job must not do (start namespaces, open pidfds, signal
  others) and what the job's kind forbids.

Each is a deny list (anything not named is allowed; the namespaces and the read-only file
view are the walls around the rest). They bind root too. Together they refuse, with ``EPERM``
unless noted:

* other processes: ``ptrace``, ``process_vm_readv``/``writev``, ``pidfd_getfd``,
  ``kcmp``, ``process_madvise``; ``prlimit64``, ``sched_set*``, ``get_robust_list``,
  ``migrate_pages``, ``move_pages`` on any pid but 0 (itself); ``setpriority`` and
  ``ioprio_set`` on anyone but itself; with ``own_signals_only`` (one process, no
  children) ``kill``/``tkill``/``tgkill``/``rt_*sigqueueinfo`` to anyone but itself and
  ``pidfd_send_signal``;
* the kernel's configuration: ``mount`` and the new mount API, ``umount2``, ``pivot_root``,
  ``chroot``, ``unshare`` (job filter: the supervisor's children call it before theirs is
  loaded), ``setns``, ``clone`` with any namespace flag, ``keyctl``,
  ``add_key``, ``request_key``, ``bpf``, ``perf_event_open``, ``userfaultfd``, the
  ``io_uring`` calls (their operations bypass seccomp), module, kexec, swap, reboot,
  ``syslog``, ``acct``, ``quotactl``, file handles (``open_by_handle_at``), ``fanotify_init``,
  ``iopl``/``ioperm``/``modify_ldt``/``uselib`` on x86_64;
* ``ioctl`` requests that inject terminal input (``TIOCSTI``, ``TIOCLINUX``) or set
  inode flags (``FS_IOC_SETFLAGS``: immutable/append-only, ``FS_IOC_FSSETXATTR``);
* ``socket`` outside ``AF_UNIX``, ``AF_INET``, ``AF_INET6`` (no ``AF_VSOCK`` to a VM host,
  no ``AF_ALG``, ``AF_PACKET``, netlink);
* with ``no_new_processes``: ``fork``, ``vfork`` and every ``clone`` that is not a thread
  (``RLIMIT_NPROC`` caps threads); with ``no_exec``: ``execve``, ``execveat``;
* with ``no_ipc``: the System V IPC calls (shared memory, semaphores, message queues) and
  the POSIX message queue calls, for a job of one process, which has nobody to share such
  objects with and so needs no IPC namespace of its own to leave none behind;
* ``clone3`` (base) and ``pidfd_open`` (job filter) answer ``ENOSYS`` (their arguments
  cannot be inspected, and libc falls back to ``clone``); 32-bit and x32 system calls are
  refused.

The split is for speed: the kernel prepares a filter when it is loaded (it runs it once per
call number to cache the calls it always allows), about 0.2 ms for the whole rule set on its
own, about a third of that for the job filter loaded over the base one.
"""

from __future__ import annotations

import ctypes
import os
import sys

EPERM, ENOSYS = 1, 38

X86_64 = {
    "ioctl": 16, "socket": 41, "socketpair": 53, "clone": 56, "fork": 57, "vfork": 58, "execve": 59, "kill": 62,
    "ptrace": 101, "syslog": 103, "rt_sigqueueinfo": 129, "uselib": 134, "setpriority": 141, "sched_setparam": 142,
    "sched_setscheduler": 144, "modify_ldt": 154, "pivot_root": 155, "chroot": 161, "acct": 163, "mount": 165,
    "umount2": 166, "swapon": 167, "swapoff": 168, "reboot": 169, "iopl": 172, "ioperm": 173, "init_module": 175,
    "delete_module": 176, "quotactl": 179, "tkill": 200, "sched_setaffinity": 203, "tgkill": 234,
    "kexec_load": 246, "add_key": 248, "request_key": 249, "keyctl": 250, "ioprio_set": 251, "migrate_pages": 256,
    "unshare": 272, "get_robust_list": 274, "move_pages": 279, "rt_tgsigqueueinfo": 297, "perf_event_open": 298,
    "fanotify_init": 300, "prlimit64": 302, "name_to_handle_at": 303, "open_by_handle_at": 304, "setns": 308,
    "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312, "finit_module": 313, "sched_setattr": 314,
    "kexec_file_load": 320, "bpf": 321, "execveat": 322, "userfaultfd": 323, "pidfd_send_signal": 424,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428, "move_mount": 429,
    "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "pidfd_open": 434, "clone3": 435,
    "pidfd_getfd": 438, "process_madvise": 440, "mount_setattr": 442, "quotactl_fd": 443,
    "shmget": 29, "shmat": 30, "shmctl": 31, "semget": 64, "semop": 65, "semctl": 66, "shmdt": 67, "msgget": 68,
    "msgsnd": 69, "msgrcv": 70, "msgctl": 71, "semtimedop": 220, "mq_open": 240, "mq_unlink": 241,
    "mq_timedsend": 242, "mq_timedreceive": 243, "mq_notify": 244, "mq_getsetattr": 245,
}  # fmt: skip
AARCH64 = {
    "ioctl": 29, "ioprio_set": 30, "umount2": 39, "mount": 40, "pivot_root": 41, "chroot": 51, "quotactl": 60,
    "acct": 89, "unshare": 97, "get_robust_list": 100, "kexec_load": 104, "init_module": 105,
    "delete_module": 106, "syslog": 116, "ptrace": 117, "sched_setparam": 118, "sched_setscheduler": 119,
    "sched_setaffinity": 122, "kill": 129, "tkill": 130, "tgkill": 131, "rt_sigqueueinfo": 138,
    "setpriority": 140, "reboot": 142, "socket": 198, "socketpair": 199, "add_key": 217, "request_key": 218,
    "keyctl": 219, "clone": 220, "execve": 221, "swapon": 224, "swapoff": 225, "migrate_pages": 238,
    "move_pages": 239, "rt_tgsigqueueinfo": 240, "perf_event_open": 241, "prlimit64": 261, "fanotify_init": 262,
    "name_to_handle_at": 264, "open_by_handle_at": 265, "setns": 268, "process_vm_readv": 270,
    "process_vm_writev": 271, "kcmp": 272, "finit_module": 273, "sched_setattr": 274, "bpf": 280,
    "execveat": 281, "userfaultfd": 282, "kexec_file_load": 294, "pidfd_send_signal": 424, "io_uring_setup": 425,
    "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428, "move_mount": 429, "fsopen": 430,
    "fsconfig": 431, "fsmount": 432, "fspick": 433, "pidfd_open": 434, "clone3": 435, "pidfd_getfd": 438,
    "process_madvise": 440, "mount_setattr": 442, "quotactl_fd": 443,
    "mq_open": 180, "mq_unlink": 181, "mq_timedsend": 182, "mq_timedreceive": 183, "mq_notify": 184,
    "mq_getsetattr": 185, "msgget": 186, "msgctl": 187, "msgrcv": 188, "msgsnd": 189, "semget": 190, "semctl": 191,
    "semtimedop": 192, "semop": 193, "shmget": 194, "shmctl": 195, "shmat": 196, "shmdt": 197,
}  # fmt: skip
ARCHES = {"x86_64": (0xC000003E, X86_64), "aarch64": (0xC00000B7, AARCH64)}

ALWAYS_DENIED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp", "process_madvise",
    "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick",
    "mount_setattr", "setns", "keyctl", "add_key", "request_key", "bpf", "perf_event_open",
    "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "init_module", "finit_module",
    "delete_module", "kexec_load", "kexec_file_load", "swapon", "swapoff", "reboot", "syslog", "acct", "quotactl",
    "quotactl_fd", "name_to_handle_at", "open_by_handle_at", "fanotify_init", "iopl", "ioperm", "modify_ldt",
    "uselib",
)  # fmt: skip
SELF_ONLY_PID0 = ("prlimit64", "sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr",
                  "get_robust_list", "migrate_pages", "move_pages")  # first argument is a pid; only 0 (itself)
SIGNALS = ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")  # first argument is a pid/tgid
IPC_CALLS = ("shmget", "shmat", "shmctl", "shmdt", "semget", "semop", "semctl", "semtimedop", "msgget", "msgsnd",
             "msgrcv", "msgctl", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify",
             "mq_getsetattr")  # fmt: skip

CLONE_THREAD = 0x00010000
CLONE_NAMESPACES = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
# TIOCSTI, TIOCLINUX, FS_IOC_SETFLAGS (64- and 32-bit), FS_IOC_FSSETXATTR
IOCTL_DENIED = (0x5412, 0x541C, 0x40086602, 0x40046602, 0x401C5820)
SOCKET_FAMILIES = (1, 2, 10)  # AF_UNIX, AF_INET, AF_INET6
PRIO_PROCESS = 0

# classic BPF opcodes
_LD_ABS, _JA, _JEQ, _JGE, _JSET, _RET = 0x20, 0x05, 0x15, 0x35, 0x45, 0x06
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
_NR, _ARCH = 0, 4


def _arg(index: int) -> int:
    """Offset of the low 32 bits of argument ``index`` in ``struct seccomp_data`` (little-endian)."""
    return 16 + 8 * index


class _Block:
    """The instructions for one system call: jumps name labels (``"allow"``, ``"deny"``) resolved at the end."""

    def __init__(self, errno: int = EPERM) -> None:
        self.ops: list[tuple[int, int | str, int | str, int]] = []
        self.errno = errno

    def load(self, offset: int) -> _Block:
        self.ops.append((_LD_ABS, 0, 0, offset))
        return self

    def jump(self, code: int, k: int, jt: int | str, jf: int | str) -> _Block:
        self.ops.append((code, jt, jf, k))
        return self

    def assemble(self) -> list[tuple[int, int, int, int]]:
        """The block's instructions followed by its two exits, ``deny`` then ``allow``."""
        labels = {"deny": len(self.ops), "allow": len(self.ops) + 1}
        out = [(op, _target(jt, labels, i), _target(jf, labels, i), k) for i, (op, jt, jf, k) in enumerate(self.ops)]
        out.append((_RET, 0, 0, _ERRNO | self.errno))
        out.append((_RET, 0, 0, _ALLOW))
        return out


def _target(label: int | str, labels: dict[str, int], here: int) -> int:
    return label if isinstance(label, int) else labels[label] - here - 1


def _deny() -> _Block:
    return _Block().jump(_JEQ, 0, "deny", "deny")  # an unconditional jump to the denial


def _only_values(arg: int, values: tuple[int, ...]) -> _Block:
    """Allowed only when argument ``arg`` (low 32 bits) is one of ``values``."""
    block = _Block().load(_arg(arg))
    for value in values:
        block.jump(_JEQ, value & 0xFFFFFFFF, "allow", 0)
    return block.jump(_JEQ, 0, "deny", "deny")


def _not_values(arg: int, values: tuple[int, ...]) -> _Block:
    """Denied when argument ``arg`` (low 32 bits) is one of ``values``."""
    block = _Block().load(_arg(arg))
    for value in values:
        block.jump(_JEQ, value & 0xFFFFFFFF, "deny", 0)
    return block.jump(_JEQ, 0, "allow", "allow")


Rules = dict[str, _Block]


def base_rules() -> Rules:
    """The supervisor's filter, which every job inherits: see the module docstring."""
    rules: Rules = {name: _deny() for name in ALWAYS_DENIED}
    for name in SELF_ONLY_PID0:
        rules[name] = _only_values(0, (0,))
    # setpriority(which, who, prio) / ioprio_set(which, who, prio): only PRIO_PROCESS of itself
    for name in ("setpriority", "ioprio_set"):
        block = _Block().load(_arg(0))
        block.jump(_JEQ, PRIO_PROCESS if name == "setpriority" else 1, 0, "deny")  # IOPRIO_WHO_PROCESS = 1
        rules[name] = block.load(_arg(1)).jump(_JEQ, 0, "allow", "deny")
    rules["ioctl"] = _not_values(1, IOCTL_DENIED)
    rules["socket"] = _only_values(0, SOCKET_FAMILIES)
    rules["clone"] = _Block().load(_arg(0)).jump(_JSET, CLONE_NAMESPACES, "deny", "allow")
    rules["clone3"] = _Block(ENOSYS).jump(_JEQ, 0, "deny", "deny")
    return rules


def job_rules(*, no_new_processes: bool, no_exec: bool, own_signals_only: bool, no_ipc: bool, self_pid: int) -> Rules:
    """A job's own filter, loaded over the base one: see the module docstring."""
    rules: Rules = {"unshare": _deny(), "pidfd_open": _Block(ENOSYS).jump(_JEQ, 0, "deny", "deny")}
    if own_signals_only:
        for name in SIGNALS:
            rules[name] = _only_values(0, (0, self_pid) if name == "kill" else (self_pid,))
        rules["pidfd_send_signal"] = _deny()
    if no_new_processes:
        rules["clone"] = _Block().load(_arg(0)).jump(_JSET, CLONE_THREAD, "allow", "deny")
        rules["fork"] = rules["vfork"] = _deny()
    if no_exec:
        rules["execve"] = rules["execveat"] = _deny()
    if no_ipc:
        rules.update((name, _deny()) for name in IPC_CALLS)
    return rules


def build_filter(rules: Rules, machine: str | None = None) -> list[tuple[int, int, int, int]]:
    """The filter of ``rules`` as ``(code, jt, jf, k)`` tuples: other architectures and x32 calls
    refused, then each call's rule found by :func:`_dispatch`; a call without a rule is allowed."""
    arch, numbers = ARCHES[machine or MACHINE]
    prog = [
        (_LD_ABS, 0, 0, _ARCH),
        (_JEQ, 1, 0, arch),
        (_RET, 0, 0, _ERRNO | EPERM),
        (_LD_ABS, 0, 0, _NR),
        (_JGE, 0, 1, 0x40000000),  # x32 system calls
        (_RET, 0, 0, _ERRNO | EPERM),
    ]
    ruled = sorted((numbers[name], block) for name, block in rules.items() if name in numbers)
    # (fork, vfork, iopl... do not exist on some machines)
    prog.extend(_dispatch(ruled))
    return prog


def _dispatch(ruled: list[tuple[int, _Block]]) -> list[tuple[int, int, int, int]]:
    """Instructions that find the rule of the system call number (loaded in the accumulator) by
    binary search, then run it; a call without a rule is allowed.

    A search instead of a list to walk: the kernel runs the filter once per system call number
    when it is loaded (to cache the calls it always allows), so its cost there and on every
    checked call is the depth of the tree (about 8 comparisons), not the number of rules (about 80).
    """
    if len(ruled) == 1:
        number, block = ruled[0]
        if block.ops == _deny().ops:  # denied whatever the arguments
            return [(_JEQ, 0, 1, number), (_RET, 0, 0, _ERRNO | block.errno), (_RET, 0, 0, _ALLOW)]
        body = block.assemble()
        if len(body) > 255:
            raise ValueError(f"seccomp rule for system call {number} is too long for a BPF jump")
        # the rule, or past it to the allow that ends this leaf; its body ends in its own deny and allow
        return [(_JEQ, 0, len(body), number), *body, (_RET, 0, 0, _ALLOW)]
    middle = len(ruled) // 2
    low, high = _dispatch(ruled[:middle]), _dispatch(ruled[middle:])
    # at or above the middle number: a jump over the lower half (JA where it is too far for a JGE)
    if len(low) <= 255:
        return [(_JGE, len(low), 0, ruled[middle][0]), *low, *high]
    return [(_JGE, 0, 1, ruled[middle][0]), (_JA, 0, 0, len(low)), *low, *high]


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


_libc = ctypes.CDLL(None, use_errno=True)


def install(prog: list[tuple[int, int, int, int]]) -> None:
    """Set ``no_new_privs`` and load ``prog`` into this thread (and every later child); raises ``OSError``."""
    filters = (_Filter * len(prog))(*[_Filter(*op) for op in prog])
    _install(_Program(len(prog), filters))


def _install(program: _Program) -> None:
    if _libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if _libc.prctl(22, 2, ctypes.byref(program), 0, 0) != 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")


def install_base() -> None:
    """Load the base filter into this thread (the supervisor, after its set-up); raises ``OSError``."""
    install(build_filter(base_rules()))


class Prepared:
    """A job filter built once (in the supervisor) for every job process it forks: only the job's own
    pid, which ``own_signals_only`` rules name, is filled in at :meth:`install`."""

    def __init__(self, *, no_new_processes: bool, no_exec: bool, own_signals_only: bool, no_ipc: bool) -> None:
        def build(pid: int) -> list[tuple[int, int, int, int]]:
            return build_filter(job_rules(no_new_processes=no_new_processes, no_exec=no_exec,
                                          own_signals_only=own_signals_only, no_ipc=no_ipc, self_pid=pid))

        first, second = build(1_000_001), build(2_000_002)  # where they differ is where the pid goes
        self.slots = [i for i, (a, b) in enumerate(zip(first, second)) if a != b]
        self.filters = (_Filter * len(first))(*[_Filter(*op) for op in first])
        self.program = _Program(len(first), self.filters)

    def install(self, pid: int) -> None:
        """Fill in ``pid`` and load the filter into this thread (over the base one); raises ``OSError``."""
        for slot in self.slots:
            self.filters[slot].k = pid
        _install(self.program)


MACHINE = os.uname().machine
SUPPORTED = sys.platform == "linux" and MACHINE in ARCHES


def supported() -> bool:
    """Whether this machine has a filter here (Linux on x86_64 or aarch64)."""
    return SUPPORTED
