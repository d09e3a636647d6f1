"""Fixtures for the sandbox tests: a bubblewrap sandbox, and checks that a sandbox left nothing behind."""

from __future__ import annotations

import os
import resource
from collections.abc import Iterator

import pytest

from rollgym.sandbox import Limits, Sandbox, Session
from tests.conftest import require_binary

HOST_RLIMITS = (resource.RLIMIT_NOFILE, resource.RLIMIT_CPU, resource.RLIMIT_AS, resource.RLIMIT_NPROC,
                resource.RLIMIT_FSIZE, resource.RLIMIT_CORE, resource.RLIMIT_STACK)


# The source of a function for snooping programs run inside a sandbox: every text or bytes value
# reachable from the variables of ``frame`` and of the frames that called it (through dicts, lists,
# tuples and sets), up to ``limit`` objects. The audit hook allows all of it.
REACHABLE_BYTES = r"""
def reachable_bytes(frame, limit):
    todo, seen = [], set()
    while frame is not None:
        todo += [frame.f_locals, frame.f_globals]
        frame = frame.f_back
    while todo and len(seen) < limit:
        value = todo.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, dict):
            todo += list(value.values())
        elif isinstance(value, (list, tuple, set)):
            todo += list(value)
        elif isinstance(value, (bytes, bytearray, memoryview, str)):
            yield value.encode(errors="replace") if isinstance(value, str) else bytes(value)
"""


@pytest.fixture(scope="module")
def box() -> Iterator[Sandbox]:
    """A strict bubblewrap sandbox: it refuses to start if any required wall is missing."""
    require_binary("bwrap")
    sandbox = Sandbox(Limits(wall_s=20, cpu_s=10, mem_mb=512), backend="bwrap", strict=True)
    yield sandbox
    sandbox.close()


def processes_of(uid: int) -> list[int]:
    """Host pids owned by ``uid``."""
    pids = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def assert_sandbox_gone(session: Session) -> None:
    """After ``session.close()``: bubblewrap exited and no process of the sandbox's host uid is left,
    so its namespaces and tmpfs are gone with it."""
    box = session.box
    assert box.proc is not None and box.proc.poll() is not None, "bubblewrap is still running"
    uid = box.plan.host_uid
    if uid is not None:
        assert processes_of(uid) == [], f"processes of sandbox uid {uid} survived"
    if box.plan.host_dir is not None:
        assert not box.plan.host_dir.exists(), f"{box.plan.host_dir} survived"


class HostState:
    """What an attack must not change in this (the env's) process: rlimits, priority, affinity, a file."""

    def __init__(self, canary: os.PathLike[str] | str) -> None:
        self.canary = str(canary)
        self.snapshot = self._take()

    def _take(self) -> dict[str, object]:
        stat = os.stat(self.canary)
        return {
            "rlimits": [resource.getrlimit(r) for r in HOST_RLIMITS],
            "priority": os.getpriority(os.PRIO_PROCESS, 0),
            "affinity": sorted(os.sched_getaffinity(0)),
            "canary": (open(self.canary, "rb").read(), stat.st_mtime_ns, stat.st_mode),
        }

    def assert_unchanged(self) -> None:
        assert self._take() == self.snapshot
