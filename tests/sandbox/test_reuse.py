"""``run_many(reuse=True)``, ``Session.run_batch`` and ``Job.fresh``: a job in a reused sandbox finds nothing the
previous job left: no files, no processes, no System V IPC objects, no abstract unix socket."""

from __future__ import annotations

import json
import os

import pytest

from rollgym.sandbox import Job, Limits, Sandbox
from rollgym.sandbox.inside import seccomp

pytestmark = pytest.mark.timeout(300)

LEAVE_TRACES = (
    "import os\n"
    "print(sorted(os.listdir('.')), sorted(os.listdir('/tmp')), sorted(os.listdir('/dev/shm')))\n"
    "open('left.txt', 'w').write('x'); open('/tmp/t', 'w').write('x'); open('/dev/shm/s', 'w').write('x')\n"
    "os.makedirs('locked/inner'); os.symlink('/etc/passwd', 'link')\n"
    "os.chmod('locked', 0); os.chmod('/tmp', 0); os.chmod('.', 0)\n"
)


def test_reused_sandboxes_start_every_job_empty(box: Sandbox) -> None:
    jobs = [Job.python(LEAVE_TRACES, files={"in.txt": "a"}) for _ in range(6)]
    results = box.run_many(jobs, reuse=True, concurrency=2)
    assert all(r.error is None for r in results), [r.error for r in results]
    assert {r.stdout for r in results} == {"['in.txt'] [] []\n"}
    assert box.stats["runs"] >= 6


def test_a_session_keeps_files_unless_a_job_asks_for_fresh(box: Sandbox) -> None:
    with box.session() as session:
        session.run_python("open('kept.txt', 'w').write('x')")
        assert session.run_python("import os\nprint(os.listdir('.'))").stdout == "['kept.txt']\n"
        fresh = session.run(Job.python("import os\nprint(os.listdir('.'))", fresh=True))
        assert fresh.stdout == "[]\n"


# Candidate A, in a reused sandbox: System V IPC objects (shared memory, a message queue, a semaphore
# set) under fixed keys, files in /tmp, /dev/shm and the working folder, a daemonized process, and one
# that holds an abstract unix socket. It prints what it made, so a test cannot pass because A failed.
LEAVE_STATE = r"""
import ctypes, json, os, socket, subprocess, sys, time
libc = ctypes.CDLL(None, use_errno=True)
KEY, CREATE = 0x524F4C4C, 0o1000 | 0o666  # IPC_CREAT
made = {"shm": libc.shmget(KEY, 4096, CREATE), "msg": libc.msgget(KEY, CREATE), "sem": libc.semget(KEY, 1, CREATE)}
libc.shmat.restype = ctypes.c_void_p
shm = libc.shmat(made["shm"], None, 0)
ctypes.memmove(shm, b"answer=42", 9)
for path in ("/tmp/leak", "/dev/shm/leak", "leak"):
    open(path, "w").write("answer=42")
holder = ("import socket, time\ns = socket.socket(socket.AF_UNIX)\ns.bind('\\0rollgym-leak')\ns.listen()\n"
          "print('listening', flush=True)\ntime.sleep(300)\n")
proc = subprocess.Popen([sys.executable, "-c", holder], stdout=subprocess.PIPE, start_new_session=True)
made["socket"] = proc.stdout.readline().decode().strip()
made["daemon"] = subprocess.Popen(["sleep", "300"], start_new_session=True).pid
made["ipcs"] = {k: len(open(f"/proc/sysvipc/{k}").read().splitlines()) - 1 for k in ("shm", "msg", "sem")}
print(json.dumps(made))
"""

# Candidate B, next in the same sandbox: looks for every trace A left.
LOOK_FOR_STATE = r"""
import ctypes, json, os, socket
libc = ctypes.CDLL(None, use_errno=True)
KEY = 0x524F4C4C
seen = {"shm": libc.shmget(KEY, 0, 0), "msg": libc.msgget(KEY, 0), "sem": libc.semget(KEY, 0, 0)}
seen["ipcs"] = {k: len(open(f"/proc/sysvipc/{k}").read().splitlines()) - 1 for k in ("shm", "msg", "sem")}
seen["files"] = sorted(os.listdir("/tmp") + os.listdir("/dev/shm") + os.listdir("."))
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("\0rollgym-leak")
    seen["socket"] = "connected"
except OSError as exc:
    seen["socket"] = type(exc).__name__
pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
# the supervisor (pid 1) and the zygote that forked this job (its parent) are the sandbox's own
seen["processes"] = sorted(open(f"/proc/{p}/comm").read().strip() for p in pids
                           if p not in (1, os.getppid(), os.getpid()))
print(json.dumps(seen))
"""


def test_a_job_leaves_nothing_for_the_next_job_in_a_reused_sandbox(box: Sandbox) -> None:
    """Two candidates graded one after the other in one kept sandbox cannot pass data to each other:
    each job (of several processes) has an IPC namespace of its own, the writable folders are emptied,
    no process survives."""
    limits = Limits(wall_s=30, nproc=16)
    jobs = [Job.python(LEAVE_STATE, audit_hook=False, limits=limits),
            Job.python(LOOK_FOR_STATE, audit_hook=False, limits=limits)] * 2
    results = box.run_many(jobs, reuse=True, concurrency=1, batch=2)  # two round trips, one sandbox
    assert all(r.ok for r in results), [(r.error, r.stderr[-500:]) for r in results]
    for made, seen in (json.loads(results[0].stdout), json.loads(results[1].stdout)), \
            (json.loads(results[2].stdout), json.loads(results[3].stdout)):
        assert min(made["shm"], made["msg"], made["sem"]) >= 0 and made["ipcs"] == {"shm": 1, "msg": 1, "sem": 1}
        assert made["socket"] == "listening" and made["daemon"] > 1
        assert seen == {"shm": -1, "msg": -1, "sem": -1, "ipcs": {"shm": 0, "msg": 0, "sem": 0}, "files": [],
                        "socket": "ConnectionRefusedError", "processes": []}, seen
    assert box.stats["started"] >= 1


# A later job: what System V IPC objects it sees, which calls that make them (or a POSIX message
# queue) the kernel lets through, and its IPC namespace.
TRY_IPC = r"""
import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
PRIVATE, CREATE = 0, 0o1000 | 0o600
seen = {k: len(open(f"/proc/sysvipc/{k}").read().splitlines()) - 1 for k in ("shm", "msg", "sem")}
errors = {}
for name, call in (("shm", lambda: libc.shmget(PRIVATE, 4096, CREATE)), ("msg", lambda: libc.msgget(PRIVATE, CREATE)),
                   ("sem", lambda: libc.semget(PRIVATE, 1, CREATE)),
                   ("mq", lambda: libc.syscall(MQ_OPEN, b"/rollgym", os.O_CREAT | os.O_RDWR, 0o600, None))):
    ctypes.set_errno(0)
    errors[name] = "made" if call() >= 0 else os.strerror(ctypes.get_errno())
print(json.dumps({"seen": seen, "errors": errors, "ns": os.readlink("/proc/self/ns/ipc")}))
""".replace("MQ_OPEN", str(seccomp.ARCHES.get(os.uname().machine, ({}, {"mq_open": 240}))[1]["mq_open"]))


def test_two_jobs_of_one_batch_do_not_share_ipc_objects(box: Sandbox) -> None:
    """The same through a session's batch. A job that may start processes has an IPC namespace of its own;
    a job of one process has none and needs none: its seccomp filter refuses every System V IPC and
    POSIX message queue call, so it can neither make an object nor see one a job before it made."""
    processes = Limits(wall_s=30, nproc=16)
    with box.session() as session:
        made, alone, first, second = session.run_batch([
            Job.python(LEAVE_STATE, audit_hook=False, limits=processes),
            Job.python(TRY_IPC, audit_hook=False),
            Job.python(TRY_IPC, audit_hook=False, limits=processes),
            Job.python(TRY_IPC, audit_hook=False, limits=processes),
        ])
    assert json.loads(made.stdout)["ipcs"] == {"shm": 1, "msg": 1, "sem": 1}
    alone_, first_, second_ = (json.loads(r.stdout) for r in (alone, first, second))
    assert alone_["seen"] == {"shm": 0, "msg": 0, "sem": 0}
    assert alone_["errors"] == dict.fromkeys(("shm", "msg", "sem", "mq"), "Operation not permitted"), alone_
    for view in (first_, second_):  # each in a new namespace: nothing of the first job's, and its own objects
        assert view["seen"] == {"shm": 0, "msg": 0, "sem": 0}
        assert {k: view["errors"][k] for k in ("shm", "msg", "sem")} == dict.fromkeys(("shm", "msg", "sem"), "made")
    # Each of the two differs from the sandbox's own namespace. The first and the second may carry the same
    # number: the kernel reuses a freed namespace's inode number, so only "nothing seen" above proves that the
    # second is not the first's (the first made three objects, and they would still be there).
    assert first_["ns"] != alone_["ns"] and second_["ns"] != alone_["ns"], (alone_["ns"], first_["ns"], second_["ns"])


def test_return_modes_lists_the_tree_with_lstat_and_follows_no_link(box: Sandbox) -> None:
    """``Job.return_modes``: the supervisor lists every entry (a folder chain deeper than Python's recursion
    limit too) with its ``lstat`` mode; a link to a folder is listed, not entered; an unreadable folder is
    listed without its contents."""
    code = (
        "import os\n"
        "os.makedirs('bin'); open('bin/t.sh', 'w').close(); os.chmod('bin/t.sh', 0o750)\n"
        "os.symlink('/etc', 'etc'); os.makedirs('locked/inner'); os.chmod('locked', 0)\n"
        "for _ in range(1200):\n    os.mkdir('d'); os.chdir('d')\n"
    )
    with box.session() as session:
        assert session.run(Job.python(code, audit_hook=False)).ok  # the hook refuses the link to /etc
        result = session.run(Job(return_modes=True))
    modes = result.modes
    assert modes["bin/t.sh"] == 0o100750 and modes["etc"] == 0o120777 and modes["locked"] == 0o40000
    assert not any(p.startswith(("etc/", "locked/")) for p in modes)
    assert "/".join(["d"] * 1200) in modes and len(modes) == 1200 + 4 and not result.modes_truncated
