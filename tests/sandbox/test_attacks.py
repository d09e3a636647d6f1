"""Attacks on the sandbox, each checked end to end: the attack fails with a labelled result, this process
(the env's) keeps its rlimits, priority, affinity and files, and the sandbox is gone afterwards.

Most attacks run twice: behind the audit hook, and with it off (``audit_hook=False``), which is what
code that disarmed the hook gets; then only the kernel's walls (namespaces, uid, seccomp, rlimits,
the read-only view, the tmpfs quota) stand. The cross-process system calls are made with raw
``ctypes`` calls so that nothing in Python stands between them and the kernel.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest

from rollgym.sandbox import Job, Limits, RunResult, Sandbox
from tests.sandbox.conftest import REACHABLE_BYTES, HostState, assert_sandbox_gone

pytestmark = pytest.mark.timeout(300)
HOOK = pytest.mark.parametrize("hook", [True, False], ids=["hook", "kernel-only"])
EPERM, ESRCH, EACCES, ENOSYS, EXDEV = 1, 3, 13, 38, 18


@pytest.fixture
def host(tmp_path: Path) -> HostState:
    canary = tmp_path / "canary.txt"
    canary.write_text("untouched", encoding="utf-8")
    return HostState(canary)


def attack(box: Sandbox, host: HostState, code: str, *, hook: bool = True, limits: Limits | None = None,
           **job: object) -> RunResult:
    """Run ``code`` in its own sandbox; check the host is unaffected and the sandbox is gone."""
    with box.session(limits or box.limits) as session:
        result = session.run(Job(code=code, audit_hook=hook, limits=limits, **job))  # type: ignore[arg-type]
    assert_sandbox_gone(session)
    host.assert_unchanged()
    return result


def attack_command(box: Sandbox, host: HostState, script: str, limits: Limits) -> RunResult:
    with box.session(limits) as session:
        result = session.run(Job(argv=("bash", "-c", script), limits=limits))
    assert_sandbox_gone(session)
    host.assert_unchanged()
    return result


# Raw system calls: each attack records (return value, errno); the script fails as a real attack would.
SYSCALLS = r"""
import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
results = {}
def call(name, fn, *args):
    ctypes.set_errno(0)
    results[name] = [int(fn(*args)), ctypes.get_errno()]
def finish():
    print(json.dumps(results))
    won = [name for name, (ret, _) in results.items() if ret >= 0]
    if won:
        print("SUCCEEDED", won)
        sys.exit(0)
    raise PermissionError("every call was refused")
class RLimit(ctypes.Structure):
    _fields_ = [("cur", ctypes.c_ulong), ("max", ctypes.c_ulong)]
"""


def syscall_results(result: RunResult, hook: bool) -> dict[str, list[int]]:
    """The attack failed and was labelled; its per-call results (empty behind the hook, which stops ctypes)."""
    assert "SUCCEEDED" not in result.stdout, result.stdout
    assert not result.ok and result.label == "exit" and result.exception == "PermissionError", result
    if hook:
        assert "sandbox: ctypes" in result.stderr
        return {}
    return json.loads(result.stdout.splitlines()[0])


needs_x86_64 = pytest.mark.skipif(platform.machine() != "x86_64", reason="raw system call numbers are x86_64's")


@needs_x86_64
@HOOK
def test_prlimit_on_the_parent_and_the_host(box: Sandbox, host: HostState, hook: bool) -> None:
    code = SYSCALLS + f"""
small = RLimit(5, 5)
one = RLimit(1, 1)
for pid in sorted({{os.getppid(), 1, {os.getpid()}, 2}}):
    call(f"nofile_{{pid}}", libc.prlimit, pid, 7, ctypes.byref(small), None)   # RLIMIT_NOFILE = 5
    call(f"cpu_{{pid}}", libc.prlimit, pid, 0, ctypes.byref(one), None)       # RLIMIT_CPU = 1
finish()
"""
    results = syscall_results(attack(box, host, code, hook=hook), hook)
    for name, (_, err) in results.items():
        assert err in (EPERM, ESRCH), (name, err)
    if not hook:
        assert results["nofile_1"][1] == EPERM  # the supervisor exists: seccomp refused, not the kernel's ESRCH


@needs_x86_64
@HOOK
def test_signals_and_tracing_of_the_parent(box: Sandbox, host: HostState, hook: bool) -> None:
    code = SYSCALLS + f"""
ppid = os.getppid()
for pid in sorted({{ppid, 1, {os.getpid()}}}):
    call(f"kill_{{pid}}", libc.kill, pid, 9)
    call(f"tkill_{{pid}}", libc.syscall, 200, pid, 9)
    call(f"tgkill_{{pid}}", libc.syscall, 234, pid, pid, 9)
    call(f"sigqueue_{{pid}}", libc.syscall, 129, pid, 9, ctypes.create_string_buffer(128))
    call(f"ptrace_attach_{{pid}}", libc.ptrace, 16, pid, None, None)
    call(f"ptrace_seize_{{pid}}", libc.ptrace, 0x4206, pid, None, None)
    buf = ctypes.create_string_buffer(64)
    local = (ctypes.c_void_p * 2)(ctypes.addressof(buf), 64)
    remote = (ctypes.c_void_p * 2)(0x400000, 64)
    call(f"vm_readv_{{pid}}", libc.syscall, 310, pid, local, 1, remote, 1, 0)
    call(f"vm_writev_{{pid}}", libc.syscall, 311, pid, local, 1, remote, 1, 0)
    call(f"setpriority_{{pid}}", libc.setpriority, 0, pid, 19)
    mask = ctypes.c_ulong(1)
    call(f"setaffinity_{{pid}}", libc.sched_setaffinity, pid, 8, ctypes.byref(mask))
    call(f"pidfd_open_{{pid}}", libc.syscall, 434, pid, 0)
    call(f"kcmp_{{pid}}", libc.syscall, 312, pid, os.getpid(), 0, 0, 0)
call("kill_everyone", libc.kill, -1, 9)
finish()
"""
    results = syscall_results(attack(box, host, code, hook=hook), hook)
    for name, (_, err) in results.items():
        assert err in (EPERM, ESRCH, ENOSYS), (name, err)


@needs_x86_64
@HOOK
def test_kernel_configuration_calls_are_refused(box: Sandbox, host: HostState, hook: bool) -> None:
    code = SYSCALLS + """
buf = ctypes.create_string_buffer(256)
call("keyctl", libc.syscall, 250, 1, None)                 # KEYCTL_JOIN_SESSION_KEYRING
call("add_key", libc.syscall, 248, b"user", b"k", b"v", 1, -3)
call("bpf", libc.syscall, 321, 0, buf, 72)                 # BPF_MAP_CREATE
call("mount", libc.mount, b"none", b"/tmp", b"tmpfs", 0, None)
call("umount", libc.umount2, b"/sandbox", 2)
call("perf_event_open", libc.syscall, 298, buf, 0, -1, -1, 0)
call("userfaultfd", libc.syscall, 323, 0)
call("unshare_user", libc.unshare, 0x10000000)
call("unshare_net", libc.unshare, 0x40000000)
call("setns", libc.setns, 0, 0)
call("io_uring_setup", libc.syscall, 425, 8, buf)
call("chroot", libc.chroot, b"/tmp")
call("pivot_root", libc.syscall, 155, b"/tmp", b"/tmp")
call("open_tree", libc.syscall, 428, -100, b"/", 1)
call("fsopen", libc.syscall, 430, b"tmpfs", 0)
call("clone_newuser", libc.syscall, 56, 0x10000000 | 17, 0, 0, 0, 0)
call("clone3", libc.syscall, 435, buf, 88)
call("vsock", libc.socket, 40, 1, 0)                       # AF_VSOCK: to the VM's host
call("netlink", libc.socket, 16, 3, 0)
call("packet", libc.socket, 17, 3, 0)
call("alg", libc.socket, 38, 5, 0)
call("syslog", libc.syscall, 103, 3, buf, 256)
call("tiocsti", libc.ioctl, 0, 0x5412, b"x")
finish()
"""
    results = syscall_results(attack(box, host, code, hook=hook), hook)
    for name, (_, err) in results.items():
        assert err in (EPERM, ENOSYS), (name, err)


@HOOK
def test_immutable_and_append_only_flags_cannot_be_set(box: Sandbox, host: HostState, hook: bool) -> None:
    code = """
import fcntl, os, struct
os.mkdir("keep")
open("keep/file", "w").write("x")
refused = 0
for path in ("keep/file", "keep", "."):
    fd = os.open(path, os.O_RDONLY)
    for flag in (0x10, 0x20):          # FS_IMMUTABLE_FL, FS_APPEND_FL
        try:
            fcntl.ioctl(fd, 0x40086602, struct.pack("l", flag))   # FS_IOC_SETFLAGS
            print("SET", path, flag)
        except OSError as exc:
            refused += exc.errno == 1
    os.close(fd)
print("refused", refused)
raise PermissionError("no flag could be set")
"""
    result = attack(box, host, code, hook=hook)
    assert "SET" not in result.stdout and "refused 6" in result.stdout
    assert result.label == "exit"
    chattr = attack_command(box, host, "touch f && chattr +i f; chattr +a .; lsattr -d f . 2>&1; exit 1",
                            Limits(wall_s=20, nproc=8))
    assert "----i" not in chattr.stdout and "-----a" not in chattr.stdout and chattr.label == "exit"


def test_disk_and_inode_filling_stop_at_the_quota(box: Sandbox, host: HostState) -> None:
    limits = Limits(disk_mb=4, max_files=256, wall_s=30)
    disk = attack(box, host, "f = open('fill', 'wb')\nwhile True:\n    f.write(b'x' * 65536)\n    f.flush()",
                  limits=limits)
    assert "disk" in disk.limits_hit and disk.label in ("disk", "file_size"), disk
    assert "No space left" in disk.stderr or "File too large" in disk.stderr
    inodes = attack(box, host, "import os\ni = 0\nwhile True:\n    open(f'f{i}', 'w').close()\n    i += 1",
                    limits=limits)
    assert "files" in inodes.limits_hit and "No space left" in inodes.stderr
    # /tmp and /dev/shm are the same quota'd tmpfs
    shm = attack_command(box, host, "head -c 100M /dev/zero > /dev/shm/x; head -c 100M /dev/zero > /tmp/y; exit 1",
                         Limits(disk_mb=4, max_files=256, wall_s=30, nproc=8))
    assert "disk" in shm.limits_hit and "No space left" in shm.stderr


@HOOK
def test_fork_bombs_are_refused_or_contained(box: Sandbox, host: HostState, hook: bool) -> None:
    python = attack(box, host, "import os\nwhile True:\n    os.fork()", hook=hook)
    assert python.label == "exit" and python.exception == "PermissionError"
    spawn = attack(box, host, "import subprocess\nsubprocess.run(['bash', '-c', ':(){ :|:& };:'])", hook=hook)
    assert spawn.label == "exit" and spawn.exception == "PermissionError"
    threads = attack(box, host, "import threading, time\nwhile True:\n    threading.Thread(target=time.sleep, "
                     "args=(60,)).start()", hook=hook)
    assert threads.label == "exit" and threads.exception == "RuntimeError"  # can't start new thread
    shell = attack_command(box, host, ":(){ :|:& };:; sleep 2", Limits(wall_s=10, nproc=32))
    assert shell.label == "nproc" and shell.leftovers >= 31  # the main shell ended; its bomb was killed
    assert "Resource temporarily unavailable" in shell.stderr
    looping = attack(box, host, "import os\nwhile True:\n    os.fork()", hook=hook, limits=Limits(nproc=16))
    assert looping.label is not None and "BlockingIOError" in looping.stderr


@HOOK
def test_memory_bombs_end_with_memory_error(box: Sandbox, host: HostState, hook: bool) -> None:
    small = Limits(mem_mb=256, wall_s=30)
    big = attack(box, host, "x = bytearray(8 * 1024**3)", hook=hook, limits=small)
    assert big.oom and big.label == "memory" and "MemoryError" in big.stderr
    grow = attack(box, host, "xs = []\nwhile True:\n    xs.append(' ' * 10**6)", hook=hook, limits=small)
    assert grow.oom and not grow.timed_out


# The source of a function for probing programs: ``attempt(mark, what, action)`` prints ``mark what
# <result>`` when ``action()`` succeeds, and ``refused what <error class>`` when it raises OSError.
ATTEMPT = """
def attempt(mark, what, action):
    try:
        print(mark, what, action())
    except OSError as exc:
        print("refused", what, type(exc).__name__)
"""


@pytest.fixture
def tcp_server() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    server.settimeout(20)
    reached: list[socket.socket] = []

    def serve() -> None:
        try:
            conn, _ = server.accept()
            reached.append(conn)
            conn.sendall(b"reached\n")
        except OSError:
            pass

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1]
    server.close()
    assert not reached, "a sandbox reached the host's 127.0.0.1"


@HOOK
def test_the_host_network_is_out_of_reach(box: Sandbox, host: HostState, tcp_server: int, hook: bool) -> None:
    code = ATTEMPT + f"""
import socket
for family, addr in ((socket.AF_INET, ("127.0.0.1", {tcp_server})), (socket.AF_INET6, ("::1", {tcp_server})),
                     (socket.AF_INET, ("10.0.2.2", 80)), (socket.AF_INET, ("1.1.1.1", 53))):
    s = socket.socket(family)
    s.settimeout(3)
    attempt("CONNECTED", addr, lambda: (s.connect(addr), s.recv(10)))
raise ConnectionError("no network")
"""
    result = attack(box, host, code, hook=hook)
    assert "CONNECTED" not in result.stdout and result.label == "exit"
    if not hook:
        assert result.stdout.count("refused") == 4  # the kernel answered, in an empty network namespace


def test_host_files_and_secrets_stay_hidden(box: Sandbox, host: HostState, shared_data: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROLLGYM_TEST_SECRET", "s3cr3t-canary")
    gold = shared_data / "math500.jsonl"
    targets = [str(gold), str(shared_data), "/etc/shadow", str(Path(__file__).resolve()), str(host.canary),
               "/root/.bash_history", f"/proc/{os.getpid()}/environ", "/proc/1/environ", "/proc/1/cmdline"]
    code = f"""
import os, glob
found = []
for path in {targets!r}:
    try:
        with open(path, "rb") as f:
            data = f.read(4096)
        found.append(path)
        print(path, data[:200])
    except OSError as exc:
        print("hidden", path, type(exc).__name__)
for name in os.listdir("/proc"):
    try:
        print(open(f"/proc/{{name}}/environ", "rb").read())
    except OSError:
        pass
print(dict(os.environ))
print(glob.glob("/work/*"), glob.glob("/home/*"), glob.glob("/root/*"))
raise PermissionError("nothing to read")
"""
    for hook in (True, False):
        result = attack(box, host, code, hook=hook)
        assert result.label == "exit"
        assert "s3cr3t-canary" not in result.stdout + result.stderr
        assert "problem" not in result.stdout and "untouched" not in result.stdout and "root:" not in result.stdout
        if not hook:
            assert result.stdout.count("hidden") == len(targets) - 1, result.stdout  # /proc/1/cmdline: ours
            environ = result.stdout.splitlines()[-2]
            assert "ROLLGYM" not in environ and "shared" not in environ, environ


@HOOK
def test_proc_of_the_parent_gives_nothing(box: Sandbox, host: HostState, hook: bool) -> None:
    code = ATTEMPT + f"""
import os
ppid = os.getppid()
for path, mode in ((f"/proc/{{ppid}}/mem", "r+b"), (f"/proc/{{ppid}}/environ", "rb"), (f"/proc/{{ppid}}/maps", "rb"),
                   (f"/proc/{{ppid}}/root/etc/shadow", "rb"), (f"/proc/{{ppid}}/cwd/../../../root/.ssh/id_rsa", "rb"),
                   ("/proc/{os.getpid()}/mem", "r+b"), ("/proc/{os.getpid()}/root/etc/shadow", "rb"),
                   ("/proc/sysrq-trigger", "wb"), ("/proc/sys/kernel/core_pattern", "wb")):
    attempt("OPENED", path, lambda: open(path, mode).read(64))
raise PermissionError("nothing")
"""
    result = attack(box, host, code, hook=hook)
    assert "OPENED" not in result.stdout and result.label == "exit"


@HOOK
def test_symlinks_and_hardlinks_do_not_leave_the_tmpfs(box: Sandbox, host: HostState, hook: bool) -> None:
    code = f"""
import os
links = {{"shadow": "/etc/shadow", "canary": {str(host.canary)!r}, "proc": "/proc/1/root/etc/passwd",
          "up": "../../../../etc/passwd"}}
for name, target in links.items():
    os.symlink(target, name)
for src in ("/usr/bin/python3", "/etc/passwd", {str(host.canary)!r}):
    try:
        os.link(src, "hard")
        print("LINKED", src)
    except OSError as exc:
        print("refused", src, exc.errno)
raise PermissionError("no way out")
"""
    result = attack(box, host, code, hook=hook, return_files=("*",))
    assert "LINKED" not in result.stdout
    assert dict(result.files) == {}  # symbolic links are never followed when files come back
    if not hook:
        assert result.stdout.count("refused") == 3


def test_an_input_file_through_a_planted_symlink_is_refused(box: Sandbox, host: HostState, tmp_path: Path) -> None:
    with pytest.warns(RuntimeWarning, match="lacks"):
        weak = Sandbox(Limits(wall_s=20), backend="process", strict=False)  # the fallback writes on the host
    for sandbox in (box, weak):
        with sandbox.session() as session:
            session.run_python(f"import os\nos.symlink({str(tmp_path)!r}, 'd')\nos.symlink('/etc', 'e')",
                               audit_hook=False)
            for path in ("d/evil.txt", "e/evil.txt"):
                written = session.write_files({path: "pwned"})
                assert written.error is not None and written.error.startswith("input_files"), written
        assert_sandbox_gone(session)
        assert not (tmp_path / "evil.txt").exists() and not Path("/etc/evil.txt").exists()
    host.assert_unchanged()


def test_the_old_disarm_fails_and_a_real_disarm_still_meets_the_kernel(box: Sandbox, host: HostState,
                                                                       shared_data: Path) -> None:
    # the attack: take the hook from the traceback's frame locals, widen its roots, then prlimit
    old = (
        "try:\n    1/0\nexcept ZeroDivisionError as e:\n    hook = e.__traceback__.tb_frame.f_back.f_locals['hook']\n"
        "import ctypes\nctypes.CDLL(None).prlimit(__import__('os').getppid(), 7, None, None)"
    )
    result = attack(box, host, old)
    assert result.label == "exit" and result.exception == "KeyError"
    # a disarm that works on this hook: rebind the module globals it looks up
    disarm = (
        "import sys\nm = next(m for n, m in sys.modules.items() if n.endswith('pyrun'))\n"
        "m._inside = lambda path, roots: True\nm.BLOCKED = frozenset()\n"
        f"print(open({str(shared_data / 'math500.jsonl')!r}).read(100))"
    )
    result = attack(box, host, disarm)
    assert result.label == "exit" and result.exception == "FileNotFoundError"  # the file is not in its world


def python_call(code: str) -> str:
    return "<tool_call>" + json.dumps({"name": "python", "arguments": {"code": code}}) + "</tool_call>"


def test_math500tool_survives_the_attacks_end_to_end(host: HostState, shared_data: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROLLGYM_DATA_DIR", str(shared_data))
    from rollgym.envs.math.datasets import MATH500, MathDataset

    env = gym.make("MATH500Tool-v0", max_calls_per_turn=1, max_turns=10)
    _, info = env.reset(options={"task_index": 7})
    dataset = MathDataset(MATH500, hub=False)
    gold = str(dataset.task(dataset.index_of(info["task_id"])).answer)
    attacks = {
        "prlimit": "import ctypes, os\nclass R(ctypes.Structure):\n    _fields_ = [('c', ctypes.c_ulong), "
                   "('m', ctypes.c_ulong)]\nctypes.CDLL(None).prlimit(os.getppid(), 7, ctypes.byref(R(5, 5)), None)",
        "disarm": "try:\n    1/0\nexcept ZeroDivisionError as e:\n    e.__traceback__.tb_frame.f_back.f_locals['hook']",
        "fork": "import os\nwhile True:\n    os.fork()",
        "memory": "x = bytearray(64 * 1024**3)",
        "gold": f"print(open({str(shared_data / 'math500.jsonl')!r}).read())",
        "network": "import socket\nsocket.create_connection(('127.0.0.1', 22), timeout=3)",
        "disk": "f = open('x', 'wb')\nwhile True:\n    f.write(b'x' * 2**20)",
        "spin": "while True:\n    pass",
    }
    for name, code in attacks.items():
        obs, reward, terminated, truncated, step_info = env.step(python_call(code))
        assert not terminated and not truncated and reward == 0.0, name
        tool = step_info["tool_results"][0]
        assert tool["ok"] is False and tool["label"] is not None, (name, tool)
        assert "problem" not in obs, name
    # the env still works: a normal call runs, the episode ends with a scored answer
    obs, *_ = env.step(python_call("print(6 * 7)"))
    assert "\n42\n" in obs
    wrong = "-987654321" if gold != "-987654321" else "0"
    _, reward, terminated, _, final = env.step(f"\\boxed{{{wrong}}}")
    assert terminated and reward == 0.0 and final["details"]["verification"]["calls"] == len(attacks) + 1
    env.close()
    host.assert_unchanged()


# -- one job, one process: nothing of another job (issue 28) -----------------------------------------
# Job B of a kept sandbox looks for the secrets of job A before it (its program, its stdout, its returned
# file) and of job C after it (its program, in the same round trip): in every frame of its process and
# what their variables hold, which the audit hook allows, and (with the hook off) in every readable
# byte of its memory through /proc/self/mem, where freed buffers would still be. Its own secret, in
# its own program, must be found: the search works.
HUNT = REACHABLE_BYTES + r"""
import json, os, re, sys
pattern = re.compile(rb"ROLLGYM-LEAK-([0-9a-f]{16})")
own = "ROLLGYM-LEAK-OWN"
found = set()
for data in reachable_bytes(sys._getframe(), 500000):
    found.update(m.decode() for m in pattern.findall(data))
if MEMORY:
    fd = os.open("/proc/self/mem", os.O_RDONLY)
    for line in open("/proc/self/maps").read().splitlines():
        fields = line.split()
        if "r" not in fields[1] or fields[-1] in ("[vvar]", "[vsyscall]", "[vvar_vclock]"):
            continue
        start, end = (int(x, 16) for x in fields[0].split("-"))
        for at in range(start, end, 1 << 20):
            try:
                data = os.pread(fd, min(1 << 20, end - at) + 64, at)
            except OSError:
                break
            found.update(m.decode() for m in pattern.findall(data))
print(json.dumps(sorted(found)))
"""


@HOOK
@pytest.mark.parametrize("way", ["batch", "session"])
def test_a_job_holds_no_byte_of_any_other_job(box: Sandbox, hook: bool, way: str) -> None:
    """Before, each job was a fork of the supervisor, which held the previous job's reply and this round
    trip's jobs: job B found A's stdout and file and C's program (frames with the hook, the heap without)."""
    secrets = {name: os.urandom(8).hex() for name in ("a_code", "a_stdout", "a_file", "c_code", "own")}
    leak = {name: f"ROLLGYM-LEAK-{value}" for name, value in secrets.items()}
    a = Job.python(f"x = {leak['a_code']!r}\nprint({leak['a_stdout']!r})\nopen('f.txt', 'w').write({leak['a_file']!r})",
                   return_files=("f.txt",))
    hunt = HUNT.replace("MEMORY", str(not hook)).replace("ROLLGYM-LEAK-OWN", leak["own"])
    b = Job.python(hunt, audit_hook=hook, limits=Limits(wall_s=60, cpu_s=30, mem_mb=1024))
    c = Job.python(f"x = {leak['c_code']!r}")
    if way == "batch":
        first, hunted, _ = box.run_many([a, b, c], reuse=True, concurrency=1, batch=3)
    else:
        with box.session() as session:
            first, hunted, _ = (session.run(j) for j in (a, b, c))
        assert_sandbox_gone(session)
    assert leak["a_stdout"] in first.stdout and first.files["f.txt"] == leak["a_file"].encode()
    assert hunted.ok, (hunted.error, hunted.stderr[-800:])
    found = set(json.loads(hunted.stdout))
    assert secrets["own"] in found  # the search works
    assert found == {secrets["own"]}, {k for k, v in secrets.items() if v in found}


# -- one job cannot poison a kept sandbox (issue 28) --------------------------------------------------
DEEP_CHAIN = ("import os\nos.chdir('/tmp')\nfor _ in range(1500):\n    os.mkdir('d')\n    os.chdir('d')\n"
              "print('planted')")


def test_a_deep_folder_chain_is_cleared_and_the_next_job_runs(box: Sandbox) -> None:
    """The cleanup between jobs recursed once per folder: a 1500-deep chain raised RecursionError in the
    supervisor and every later job of that sandbox failed. It is iterative now."""
    jobs = [Job.python(DEEP_CHAIN), Job.python("import os\nprint(os.listdir('/tmp'))")] * 2
    results = box.run_many(jobs, reuse=True, concurrency=1, batch=4)
    assert [r.stdout for r in results] == ["planted\n", "[]\n"] * 2, [(r.error, r.stderr[-300:]) for r in results]


def test_a_job_that_breaks_its_sandbox_bears_it_and_the_jobs_after_it_run_elsewhere(box: Sandbox) -> None:
    """A job of several processes kills every process it may signal, the sandbox's zygote included: the
    sandbox can fork no more jobs. That job's result says so (a labelled error); the sandbox is retired,
    and the jobs after it in the round trip run in a new one, as if nothing happened."""
    breaker = Job.command(["bash", "-c", "kill -9 -1; sleep 1"], limits=Limits(wall_s=20, nproc=8))
    jobs = [Job.python("print('before')"), breaker, *[Job.python(f"print({i})") for i in range(3)]]
    started = box.stats["started"]
    before, broke, *after = box.run_many(jobs, reuse=True, concurrency=1, batch=5)
    assert before.stdout == "before\n"
    assert broke.error is not None and broke.error.startswith("sandbox_broken"), broke
    assert [r.stdout for r in after] == ["0\n", "1\n", "2\n"], [r.error for r in after]
    assert box.stats["started"] == started + 2  # the first sandbox, and the one that replaced it
