"""The seccomp filters' verdicts, read by a small classic-BPF interpreter for every system call number.

A job runs under two filters: the base one (loaded by the supervisor) and its own on top. Each
finds a call's rule by binary search (not a walk down the list), so these tests run both as the
kernel would, for every number of the machine's table and for arguments on both sides of each
rule, combine their verdicts as the kernel does, and compare with what the rule tables say. The
kernel-side tests (the filters loaded in real jobs) are in test_attacks.py, test_sandbox.py and
test_reuse.py.
"""

from __future__ import annotations

import itertools

import pytest

from rollgym.sandbox.inside import seccomp

ALLOW, EPERM, ENOSYS = "allow", "EPERM", "ENOSYS"
SELF = 4242  # the job's pid the filter names


def run(prog: list[tuple[int, int, int, int]], nr: int, args: tuple[int, ...] = (), arch: int | None = None) -> str:
    """The verdict of ``prog`` on one call, as the kernel's classic-BPF interpreter reaches it."""
    data = {0: nr, 4: arch if arch is not None else seccomp.ARCHES["x86_64"][0]}
    for i in range(6):
        data[seccomp._arg(i)] = (args[i] if i < len(args) else 0) & 0xFFFFFFFF
    acc, pc, steps = 0, 0, 0
    while True:
        steps += 1
        assert steps <= len(prog), "the filter loops"
        code, jt, jf, k = prog[pc]
        if code == seccomp._LD_ABS:
            acc = data[k]
        elif code == seccomp._RET:
            if k == seccomp._ALLOW:
                return ALLOW
            return {seccomp.EPERM: EPERM, seccomp.ENOSYS: ENOSYS}[k & 0xFFFF]
        elif code == seccomp._JA:
            pc += k
        else:
            taken = {seccomp._JEQ: acc == k, seccomp._JGE: acc >= k, seccomp._JSET: bool(acc & k)}[code]
            pc += jt if taken else jf
        pc += 1
        assert 0 <= pc < len(prog), "a jump leaves the filter"


def stacked(base: str, job: str) -> str:
    """The kernel's verdict under both filters: a refusal wins over an allow; of two refusals (both
    ``SECCOMP_RET_ERRNO``), the newer filter's (the job's) errno."""
    return job if job != ALLOW else base


def job_filters(flags: tuple[bool, ...], machine: str) -> tuple[list[tuple[int, int, int, int]], ...]:
    no_new_processes, no_exec, own_signals_only, no_ipc = flags
    base = seccomp.build_filter(seccomp.base_rules(), machine)
    job = seccomp.build_filter(seccomp.job_rules(no_new_processes=no_new_processes, no_exec=no_exec,
                                                 own_signals_only=own_signals_only, no_ipc=no_ipc, self_pid=SELF),
                               machine)
    return base, job


def expected(name: str | None, args: tuple[int, ...], *, no_new_processes: bool, no_exec: bool,
             own_signals_only: bool, no_ipc: bool) -> str:
    """The verdict the module docstring promises, from the rule tables."""
    first = args[0] if args else 0
    if name in seccomp.ALWAYS_DENIED or name == "unshare":
        return EPERM
    if no_ipc and name in seccomp.IPC_CALLS:
        return EPERM
    if name in ("clone3", "pidfd_open"):
        return ENOSYS
    if name in seccomp.SELF_ONLY_PID0:
        return ALLOW if first == 0 else EPERM
    if name in ("setpriority", "ioprio_set"):
        who = seccomp.PRIO_PROCESS if name == "setpriority" else 1
        return ALLOW if first == who and args[1] == 0 else EPERM
    if own_signals_only and name in seccomp.SIGNALS:
        return ALLOW if first == SELF or (name == "kill" and first == 0) else EPERM
    if own_signals_only and name == "pidfd_send_signal":
        return EPERM
    if name == "ioctl":
        return EPERM if args[1] in seccomp.IOCTL_DENIED else ALLOW
    if name == "socket":
        return ALLOW if first in seccomp.SOCKET_FAMILIES else EPERM
    if name == "clone":
        if first & seccomp.CLONE_NAMESPACES:
            return EPERM
        return EPERM if no_new_processes and not first & seccomp.CLONE_THREAD else ALLOW
    if name in ("fork", "vfork") and no_new_processes:
        return EPERM
    if name in ("execve", "execveat") and no_exec:
        return EPERM
    return ALLOW


ARGUMENTS = [(), (0, 0), (SELF, 0), (1, 0), (2, 0), (16, 0), (seccomp.CLONE_THREAD, 0), (0x20000000, 0),
             (0, 0x5412), (0, 0x40086602), (0, 0x5401), (1, 1), (10, 0), (0x10000000 | seccomp.CLONE_THREAD, 0)]


@pytest.mark.parametrize("machine", sorted(seccomp.ARCHES))
@pytest.mark.parametrize("flags", list(itertools.product([False, True], repeat=4)))
def test_every_system_call_gets_the_verdict_of_its_rule(machine: str, flags: tuple[bool, bool, bool, bool]) -> None:
    no_new_processes, no_exec, own_signals_only, no_ipc = flags
    arch, numbers = seccomp.ARCHES[machine]
    base, job = job_filters(flags, machine)
    names = {nr: name for name, nr in numbers.items()}
    for nr in range(max(numbers.values()) + 20):
        for args in ARGUMENTS:
            args = args + (0,) * (2 - len(args))
            want = expected(names.get(nr), args, no_new_processes=no_new_processes, no_exec=no_exec,
                            own_signals_only=own_signals_only, no_ipc=no_ipc)
            got = stacked(run(base, nr, args, arch), run(job, nr, args, arch))
            assert got == want, (machine, names.get(nr, nr), args)


@pytest.mark.parametrize("machine", sorted(seccomp.ARCHES))
def test_the_base_filter_lets_the_supervisor_start_and_watch_jobs(machine: str) -> None:
    """What the supervisor itself does under the base filter: fork, let a child enter an IPC namespace,
    wait on a pidfd, kill every process of its namespace; the kernel's configuration stays refused."""
    arch, numbers = seccomp.ARCHES[machine]
    base = seccomp.build_filter(seccomp.base_rules(), machine)
    for name, args in (("clone", (0x01200011, 0)), ("unshare", (0x18000000, 0)), ("pidfd_open", (SELF, 0)),
                       ("kill", ((-1) & 0xFFFFFFFF, 9)), ("wait4", (SELF, 0)), ("shmget", (1, 0))):
        if name in numbers:
            assert run(base, numbers[name], args, arch) == ALLOW, name
    for name in ("mount", "setns", "ptrace", "bpf"):
        assert run(base, numbers[name], (0, 0), arch) == EPERM, name
    assert run(base, numbers["clone"], (0x20000000, 0), arch) == EPERM  # a new namespace: never
    assert run(base, numbers["clone3"], (0, 0), arch) == ENOSYS


def test_other_architectures_and_x32_calls_are_refused() -> None:
    for prog in job_filters((True, True, True, True), "x86_64"):
        assert run(prog, 0, arch=0x40000003) == EPERM  # i386
        assert run(prog, 0x40000000 + 1) == EPERM  # an x32 write
        assert run(prog, 1) == ALLOW  # write


def test_a_search_not_a_walk() -> None:
    """The depth of the search, not the number of rules, is what a call costs (and what loading costs)."""
    prog = seccomp.build_filter(seccomp.base_rules(), "x86_64")
    longest = 0
    for nr in range(460):
        steps, pc = 0, 0
        while prog[pc][0] != seccomp._RET:  # count instructions up to the first return on this path
            code, jt, jf, k = prog[pc]
            steps += 1
            if code == seccomp._JA:
                pc += k
            elif code in (seccomp._JEQ, seccomp._JGE):
                acc = nr if pc > 1 else seccomp.ARCHES["x86_64"][0]
                taken = acc == k if code == seccomp._JEQ else acc >= k
                pc += jt if taken else jf
            elif code == seccomp._JSET:
                break  # an argument check: the rule's own body
            pc += 1
        longest = max(longest, steps)
    assert longest < 25, longest

