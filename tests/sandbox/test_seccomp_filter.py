"""The seccomp filter's verdicts, read by a small classic-BPF interpreter for every system call number.

The filter finds a call's rule by binary search (not a walk down the list), so these tests run it
as the kernel would, for every number of the machine's table and for arguments on both sides of
each rule, and compare with what the rule tables say. The kernel-side tests (the filter loaded in
real jobs) are in test_attacks.py and test_sandbox.py.
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


def expected(name: str | None, args: tuple[int, ...], *, no_new_processes: bool, no_exec: bool,
             own_signals_only: bool) -> str:
    """The verdict the module docstring promises, from the rule tables."""
    first = args[0] if args else 0
    if name in seccomp.ALWAYS_DENIED:
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
@pytest.mark.parametrize("flags", list(itertools.product([False, True], repeat=3)))
def test_every_system_call_gets_the_verdict_of_its_rule(machine: str, flags: tuple[bool, bool, bool]) -> None:
    no_new_processes, no_exec, own_signals_only = flags
    arch, numbers = seccomp.ARCHES[machine]
    prog = seccomp.build_filter(no_new_processes=no_new_processes, no_exec=no_exec,
                                own_signals_only=own_signals_only, self_pid=SELF, machine=machine)
    names = {nr: name for name, nr in numbers.items()}
    for nr in range(max(numbers.values()) + 20):
        for args in ARGUMENTS:
            args = args + (0,) * (2 - len(args))
            want = expected(names.get(nr), args, no_new_processes=no_new_processes, no_exec=no_exec,
                            own_signals_only=own_signals_only)
            assert run(prog, nr, args, arch) == want, (machine, names.get(nr, nr), args)


def test_other_architectures_and_x32_calls_are_refused() -> None:
    prog = seccomp.build_filter(no_new_processes=True, no_exec=True, own_signals_only=True, self_pid=SELF,
                                machine="x86_64")
    assert run(prog, 0, arch=0x40000003) == EPERM  # i386
    assert run(prog, 0x40000000 + 1) == EPERM  # an x32 write
    assert run(prog, 1) == ALLOW  # write


def test_a_search_not_a_walk() -> None:
    """The depth of the search, not the number of rules, is what a call costs (and what loading costs)."""
    prog = seccomp.build_filter(no_new_processes=True, no_exec=True, own_signals_only=True, self_pid=SELF,
                                machine="x86_64")
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
