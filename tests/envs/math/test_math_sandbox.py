"""The pre-bubblewrap Python sandbox (``rollgym.sandbox.legacy``, the baseline of bench/bench_sandbox.py):
it runs code, and cannot read outside files, reach the network, fork or eat memory. The kernel sandbox
that replaced it in the MATH tool is tested in tests/sandbox."""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

import pytest

from rollgym.core.errors import ConfigError, MissingDependencyError
from rollgym.envs.math.sandbox import make_sandbox
from rollgym.sandbox.legacy import LocalSandbox, SandboxLimits
from tests.conftest import require_module

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def box() -> LocalSandbox:
    return LocalSandbox(SandboxLimits(timeout_s=20, cpu_s=10, memory_mb=512, max_output_chars=2000))


def test_runs_code_and_returns_stdout_and_the_last_expression(box: LocalSandbox) -> None:
    result = box.run("x = 6 * 7\nprint('x is', x)\nx + 1")
    assert result.ok and result.stdout == "x is 42\n43\n"
    assert "x is 42" in result.as_text()


def test_errors_come_back_as_text(box: LocalSandbox) -> None:
    result = box.run("print(1")
    assert not result.ok and "SyntaxError" in result.stderr
    result = box.run("1/0")
    assert result.exit_code == 1 and "ZeroDivisionError" in result.as_text()


def test_sympy_and_numpy_can_be_imported(box: LocalSandbox) -> None:
    require_module("sympy")
    result = box.run("import sympy\nprint(sympy.factorint(2**32 + 1))")
    assert result.ok, result.stderr
    assert result.stdout.strip() == "{641: 1, 6700417: 1}"


def test_cannot_read_files_outside_its_directory(box: LocalSandbox, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the answer is 42", encoding="utf-8")
    for target in (str(secret), "/etc/passwd", "/proc/self/environ", str(Path(__file__).resolve())):
        result = box.run(f"print(open({target!r}).read())")
        assert not result.ok and "42" not in result.stdout
        assert "PermissionError" in result.stderr or "Permission denied" in result.stderr
    result = box.run(f"import os\nprint(os.listdir({str(tmp_path)!r}))")
    assert "secret" not in result.stdout and not result.ok


@pytest.mark.parametrize(
    "code",
    [
        # C code that opens files without an audit event
        "import sqlite3\nc = sqlite3.connect(':memory:')\n"
        "c.execute(\"ATTACH {outside!r} AS a\")\nc.execute('create table a.t(x)')",
        "import sqlite3\nsqlite3.connect({outside!r}).execute('create table t(x)')",
        "import readline\nreadline.read_history_file({secret!r})\nprint(readline.get_history_item(1))",
        "import os\nos.mkfifo({outside!r})",
        "import _posixshmem\n_posixshmem.shm_open('/rollgym-test-shm', 66, 0o600)",
    ],
)
def test_c_level_file_access_stays_inside(box: LocalSandbox, tmp_path: Path, code: str) -> None:
    if "mkfifo" in code and not box.isolation["landlock"]:
        pytest.skip("os.mkfifo raises no audit event; only Landlock stops it, and this kernel has none")
    secret = tmp_path / "secret.txt"
    secret.write_text("the answer is 42", encoding="utf-8")
    outside = tmp_path / "escaped"
    result = box.run(code.format(outside=str(outside), secret=str(secret)))
    assert not result.ok and "42" not in result.stdout
    assert not outside.exists() and not Path("/dev/shm/rollgym-test-shm").exists()


DISARM_HOOK = (
    "try:\n    1/0\nexcept ZeroDivisionError as e:\n    hook = e.__traceback__.tb_frame.f_back.f_locals['hook']\n"
    "    for name, cell in zip(hook.__code__.co_freevars, hook.__closure__):\n"
    "        if name == 'read_roots':\n            cell.cell_contents = ('/',)\n"
)


def test_landlock_keeps_files_private_when_the_audit_hook_is_disarmed(tmp_path: Path) -> None:
    require_module("sympy")  # the sandboxed code imports it
    box = LocalSandbox(SandboxLimits(timeout_s=20))
    if not box.isolation["landlock"]:
        pytest.skip("Landlock is not available on this kernel; only the audit hook guards files")
    secret = tmp_path / "secret.txt"
    secret.write_text("the answer is 42", encoding="utf-8")
    # the audit hook is Python code in the sandboxed interpreter: the code can reach and rewrite its rules
    disarmed = LocalSandbox(SandboxLimits(timeout_s=20), landlock=False).run(
        DISARM_HOOK + f"print(open({str(secret)!r}).read())"
    )
    assert "42" in disarmed.stdout
    result = box.run(DISARM_HOOK + f"print(open({str(secret)!r}).read())")
    assert not result.ok and "42" not in result.stdout and "Permission denied" in result.stderr
    bare = LocalSandbox(SandboxLimits(timeout_s=20), audit_hook=False)  # the kernel alone
    for code in (f"print(open({str(secret)!r}).read())", "import os\nprint(os.listdir('/'))"):
        result = bare.run(code)
        assert not result.ok and "42" not in result.stdout and "Permission denied" in result.stderr
    assert bare.run("import sympy\nopen('note.txt', 'w').write('ok')\nprint(open('note.txt').read())").stdout == "ok\n"


def test_writes_inside_its_directory_and_the_directory_is_deleted(box: LocalSandbox) -> None:
    result = box.run("import os\nopen('note.txt', 'w').write('hi')\nprint(open('note.txt').read())\nprint(os.getcwd())")
    assert result.ok, result.stderr
    text, cwd = result.stdout.split()
    assert text == "hi"
    assert not Path(cwd).exists()
    result = box.run("open('/tmp/rollgym-sandbox-escape.txt', 'w').write('x')")
    assert not result.ok and not Path("/tmp/rollgym-sandbox-escape.txt").exists()


@pytest.fixture
def tcp_server() -> int:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    server.settimeout(15)
    accepted: list[socket.socket] = []

    def serve() -> None:
        try:
            conn, _ = server.accept()
            accepted.append(conn)
            conn.sendall(b"reached\n")
        except OSError:
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    server.close()
    for conn in accepted:
        conn.close()


def test_cannot_open_a_network_socket(box: LocalSandbox, tcp_server: int) -> None:
    code = f"import socket\ns = socket.create_connection(('127.0.0.1', {tcp_server}), timeout=5)\nprint(s.recv(10))"
    result = box.run(code)
    assert not result.ok and "reached" not in result.stdout
    assert "socket" in result.stderr


def test_the_network_namespace_alone_blocks_the_host_network(tcp_server: int) -> None:
    bare = LocalSandbox(SandboxLimits(timeout_s=20), audit_hook=False, seccomp=False)
    if not bare.isolation["network_namespace"]:
        pytest.skip("unshare cannot create a network namespace here; only the audit hook blocks sockets")
    code = f"import socket\ns = socket.create_connection(('127.0.0.1', {tcp_server}), timeout=5)\nprint(s.recv(10))"
    result = bare.run(code)
    assert not result.ok and "reached" not in result.stdout
    assert "Error" in result.stderr  # ConnectionRefused / NetworkUnreachable inside the empty namespace


@pytest.mark.parametrize(
    "code",
    [
        "import os\nwhile True:\n    os.fork()",
        "import subprocess\nsubprocess.run(['sh', '-c', ':(){ :|:& };:'])",
        "import os\nos.system('echo escaped')",
        "import os\nos.posix_spawn('/bin/echo', ['echo', 'escaped'], {})",
        "import ctypes\nctypes.CDLL(None).fork()",
        "import ctypes\nctypes.pythonapi.fork()",
        "import multiprocessing\np = multiprocessing.Process(target=print)\np.start()",
    ],
)
def test_cannot_create_processes(box: LocalSandbox, code: str) -> None:
    result = box.run(code)
    assert not result.ok and "escaped" not in result.stdout
    assert "PermissionError" in result.stderr or "BlockingIOError" in result.stderr


def test_seccomp_alone_stops_processes_and_sockets_but_not_threads(tcp_server: int) -> None:
    bare = LocalSandbox(SandboxLimits(timeout_s=20), audit_hook=False, network_namespace=False)
    if not bare.isolation["seccomp"]:
        pytest.skip("seccomp filters are not available on this kernel or machine")
    fork = bare.run("import os\npid = os.fork()\nif pid == 0:\n    os._exit(0)\nprint('forked')")
    assert "forked" not in fork.stdout and "PermissionError" in fork.stderr
    spawn = bare.run("import subprocess\nsubprocess.run(['echo', 'escaped'])")
    assert "escaped" not in spawn.stdout and "PermissionError" in spawn.stderr
    sock = bare.run(f"import socket\nsocket.create_connection(('127.0.0.1', {tcp_server}), timeout=5)")
    assert not sock.ok and "PermissionError" in sock.stderr
    threads = bare.run(
        "import threading\nt = threading.Thread(target=print, args=('in a thread',))\nt.start()\nt.join()"
    )
    assert threads.ok and threads.stdout == "in a thread\n"


def test_rlimit_nproc_alone_stops_a_fork_when_the_kernel_applies_it() -> None:
    bare = LocalSandbox(SandboxLimits(timeout_s=20), audit_hook=False, seccomp=False)
    if os.geteuid() == 0 and not bare.isolation["unprivileged_user"]:
        pytest.skip("running as root with a Python others cannot read: the kernel waives RLIMIT_NPROC for uid 0")
    result = bare.run("import os\npid = os.fork()\nif pid == 0:\n    os._exit(0)\nprint('forked')")
    assert "forked" not in result.stdout and "BlockingIOError" in result.stderr


def test_cannot_exhaust_memory() -> None:
    small = LocalSandbox(SandboxLimits(timeout_s=30, memory_mb=256))
    result = small.run("x = bytearray(2 * 1024**3)\nprint(len(x))")
    assert not result.ok and "MemoryError" in result.stderr
    result = small.run("xs = []\nwhile True:\n    xs.append(' ' * 10**6)")
    assert not result.ok and not result.timed_out
    assert "MemoryError" in result.stderr


def test_cpu_and_wall_clock_limits_end_runaway_code() -> None:
    quick = LocalSandbox(SandboxLimits(timeout_s=3, cpu_s=2))
    spin = quick.run("while True:\n    pass")
    assert not spin.ok and (spin.timed_out or (spin.exit_code is not None and spin.exit_code < 0))
    sleep = quick.run("import time\ntime.sleep(60)")
    assert sleep.timed_out and "wall-clock" in sleep.as_text()


def test_output_is_cut_to_the_limit(box: LocalSandbox) -> None:
    result = box.run("print('x' * 10**6)")
    assert result.truncated and len(result.stdout) == 2000
    flood = LocalSandbox(SandboxLimits(timeout_s=20, max_file_mb=1)).run("while True:\n    print('y' * 1000)")
    assert not flood.ok and not flood.timed_out  # RLIMIT_FSIZE ends it, not the clock


def test_limits_are_validated() -> None:
    with pytest.raises(ConfigError, match="memory_mb"):
        SandboxLimits(memory_mb=10)
    with pytest.raises(ConfigError, match="timeout_s"):
        SandboxLimits(timeout_s=0)
    with pytest.raises(ConfigError, match="backend"):
        make_sandbox("chroot")


def _docker_reachable() -> bool:
    try:
        from rollgym.envs.math.sandbox.docker import docker_client

        docker_client().close()
        return True
    except MissingDependencyError:
        return False


def test_docker_backend_runs_code_when_an_engine_is_reachable() -> None:
    if not _docker_reachable():
        pytest.skip("no Docker engine is reachable on this machine (docker backend untested here)")
    try:
        sandbox = make_sandbox("docker", SandboxLimits(timeout_s=60))
    except MissingDependencyError as exc:
        pytest.skip(str(exc))
    result = sandbox.run("import socket\nprint(6 * 7)\nsocket.create_connection(('1.1.1.1', 80), timeout=3)")
    assert result.stdout.strip() == "42" and not result.ok


def test_docker_backend_without_an_engine_is_one_clear_error() -> None:
    pytest.importorskip("docker", reason="the Docker SDK is not installed (pip install 'rollgym[docker]')")
    if _docker_reachable():
        pytest.skip("a Docker engine is reachable, so there is no missing-engine error to check")
    with pytest.raises(MissingDependencyError, match="No Docker engine is reachable"):
        make_sandbox("docker")
