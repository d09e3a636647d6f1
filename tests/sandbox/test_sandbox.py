"""rollgym.sandbox: what a user relies on: code and commands run, files go in and come back, limits hold,
sessions keep files, the pool and batches work, the isolation report is measured."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest

import rollgym.sandbox.sandbox as sandbox_module
from rollgym.core.errors import ConfigError
from rollgym.sandbox import File, Job, Limits, Sandbox, SandboxUnavailableError, make_sandbox
from tests.sandbox.conftest import assert_sandbox_gone

pytestmark = pytest.mark.timeout(300)

SHELL = Limits(wall_s=20, nproc=16)


def test_python_code_prints_and_shows_the_last_expression(box: Sandbox) -> None:
    result = box.run_python("x = 6 * 7\nprint('x is', x)\nx + 1")
    assert result.ok and result.stdout == "x is 42\n43\n" and result.backend == "bwrap"
    assert result.label is None and result.exit_code == 0 and result.signal is None


def test_errors_exit_codes_and_exceptions_are_reported(box: Sandbox) -> None:
    syntax = box.run_python("print(1")
    assert not syntax.ok and "SyntaxError" in syntax.stderr and syntax.exception == "SyntaxError"
    zero = box.run_python("1/0")
    assert zero.exit_code == 1 and zero.exception == "ZeroDivisionError" and zero.label == "exit"
    assert "ZeroDivisionError" in zero.as_text() and "[exit status 1]" in zero.as_text()
    assert box.run_python("import sys\nsys.exit(3)").exit_code == 3


def test_sympy_and_numpy_import_inside(box: Sandbox) -> None:
    result = box.run_python("import sympy, numpy\nprint(sympy.factorint(2**32 + 1), numpy.arange(3).sum())")
    assert result.ok, result.stderr
    assert result.stdout.strip() == "{641: 1, 6700417: 1} 3"


def test_commands_stdin_env_and_cwd(box: Sandbox) -> None:
    result = box.run_command(["bash", "-c", "read a; echo \"$a-$GREETING\"; pwd; id -un"], stdin="hello\n",
                             env={"GREETING": "world"}, files={"sub/x.txt": "x"}, cwd="sub", limits=SHELL)
    assert result.ok, result.stderr
    assert result.stdout.splitlines() == ["hello-world", "/sandbox/work/sub", "sandbox"]
    missing = box.run_command(["no-such-program"], limits=SHELL)
    assert missing.exit_code == 127 and "could not start" in missing.stderr


def test_input_files_tree_and_returned_files(box: Sandbox, tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("def f():\n    return 41\n")
    (tmp_path / "link").symlink_to("/etc/hostname")  # symbolic links in a tree are skipped
    job = Job.python(
        "import pkg.mod, os\nopen('out/answer.txt', 'w').write(str(pkg.mod.f() + 1))\n"
        "open('out/skip.bin', 'wb').write(b'x')\nprint(sorted(os.listdir('.')), os.access('run.sh', os.X_OK))",
        tree=tmp_path,
        files={"out/.keep": b"", "run.sh": File(b"#!/bin/sh\necho hi\n", 0o755)},
        return_files=("out/*.txt",),
    )
    result = box.run(job)
    assert result.ok, result.stderr
    assert result.stdout.strip() == "['out', 'pkg', 'run.sh'] True"
    assert dict(result.files) == {"out/answer.txt": b"42"}


def test_pytest_runs_as_a_command(box: Sandbox) -> None:
    files = {"calc.py": "def add(a, b):\n    return a + b\n",
             "test_calc.py": "from calc import add\n\ndef test_add():\n    assert add(2, 2) == 4\n\n"
                             "def test_bad():\n    assert add(2, 2) == 5\n"}
    result = box.run_command(["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"], files=files,
                             limits=Limits(wall_s=60, nproc=32, mem_mb=1024))
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "1 failed, 1 passed" in result.stdout


def test_process_creation_is_a_per_call_limit(box: Sandbox) -> None:
    fork = "import os\npid = os.fork()\nif pid == 0:\n    os._exit(0)\nos.waitpid(pid, 0)\nprint('forked')"
    refused = box.run_python(fork, audit_hook=False)
    assert "forked" not in refused.stdout and "PermissionError" in refused.stderr
    allowed = box.run_python(fork, limits=Limits(nproc=4))
    assert allowed.ok and allowed.stdout == "forked\n", allowed.stderr
    threads = "import threading\nt = threading.Thread(target=print, args=('thread',))\nt.start()\nt.join()"
    assert "thread" not in box.run_python(threads).stdout  # nproc=1: no threads either
    assert box.run_python(threads, limits=Limits(nproc=2)).stdout == "thread\n"


def test_wall_clock_kills_the_whole_tree(box: Sandbox) -> None:
    with box.session(Limits(wall_s=2, nproc=16)) as session:
        code = "(setsid sleep 300 &); sleep 300"
        result = session.run_command(["bash", "-c", code])
        assert result.timed_out and result.label == "timeout" and "wall" in result.limits_hit
        assert "wall-clock" in result.as_text()
        after = session.run_command(["bash", "-c", "ps -e -o comm= | grep -c sleep || true"])
        assert after.stdout.strip() == "0"  # the daemonized sleep is gone too
    assert_sandbox_gone(session)


def test_cpu_limit_ends_a_spinning_process(box: Sandbox) -> None:
    result = box.run_python("while True:\n    pass", limits=Limits(cpu_s=1, wall_s=30))
    assert not result.ok and not result.timed_out and result.signal is not None
    assert "cpu" in result.limits_hit


def test_output_is_cut_and_a_flood_is_killed(box: Sandbox) -> None:
    cut = box.run_python("print('x' * 100_000)", limits=Limits(max_output_bytes=1000))
    assert cut.truncated and len(cut.stdout) == 1000 and "output" in cut.limits_hit
    flood = box.run_python("while True:\n    print('y' * 1000)", limits=Limits(max_output_bytes=1000, wall_s=60))
    assert not flood.timed_out and flood.signal == 9 and "output" in flood.limits_hit
    assert len(flood.stdout) == 1000


def test_sessions_keep_files_but_not_processes(box: Sandbox) -> None:
    with box.session(SHELL) as session:
        session.run_command(["bash", "-c", "echo one > a.txt; mkdir d; echo two > d/b.txt"])
        session.write_files({"c.txt": "three"})
        assert session.run_command(["cat", "a.txt", "d/b.txt", "c.txt"]).stdout == "one\ntwo\nthree"
        assert session.read_files(["**"]) == {"a.txt": b"one\n", "c.txt": b"three", "d/b.txt": b"two\n"}
        assert session.workdir == "/sandbox/work"
    assert_sandbox_gone(session)
    fresh = box.run_command(["ls", "-A"], limits=SHELL)
    assert fresh.ok and fresh.stdout == ""  # every run outside a session starts empty


def test_bad_jobs_are_one_clear_error() -> None:
    with pytest.raises(ConfigError, match="not both"):
        Job(code="1", argv=("ls",))
    with pytest.raises(ConfigError, match="stay inside"):
        Job(files={"../x": "y"})
    with pytest.raises(ConfigError, match="stay inside"):
        Job(return_files=("/etc/passwd",))
    with pytest.raises(ConfigError, match="argv"):
        Job(argv="ls -l")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="nproc"):
        Limits(nproc=0)
    with pytest.raises(ConfigError, match="wall_s"):
        Limits(wall_s=0)
    with pytest.raises(ConfigError, match="backend"):
        make_sandbox("chroot")


def test_input_files_that_do_not_fit_are_a_labelled_error(box: Sandbox) -> None:
    result = box.run_python("print(1)", files={"big.bin": b"x" * (3 << 20)}, limits=Limits(disk_mb=2))
    assert result.error is not None and result.error.startswith("input_files") and result.label == "sandbox_error"


def test_the_warm_pool_and_batches(box: Sandbox) -> None:
    pooled = Sandbox(Limits(wall_s=20), backend="bwrap", pool_size=2, preload=("json",), strict=True)
    try:
        jobs = [Job.python(f"print({i} * {i})") for i in range(8)]
        results = pooled.run_many(jobs, concurrency=2)
        assert [r.stdout for r in results] == [f"{i * i}\n" for i in range(8)]
        assert pooled.stats["warm_hits"] >= 1 and pooled.stats["cleanup_failures"] == 0
    finally:
        pooled.close()


def test_a_fork_bomb_in_one_sandbox_does_not_stop_another_from_forking(box: Sandbox) -> None:
    bomb = Job.command(["bash", "-c", ":(){ :|:& };:; sleep 5"], limits=Limits(wall_s=6, nproc=32))
    fork = Job.command(["bash", "-c", "sleep 1; for i in 1 2 3 4; do (echo $i) & done; wait"],
                       limits=Limits(wall_s=20, nproc=32))
    bombed, forked = box.run_many([bomb, fork], concurrency=2)
    assert "fork: retry: Resource temporarily unavailable" in bombed.stderr  # RLIMIT_NPROC held the bomb
    assert forked.ok and sorted(forked.stdout.split()) == ["1", "2", "3", "4"], forked.stderr


def test_isolation_report_is_measured_and_complete(box: Sandbox) -> None:
    report = box.isolation
    assert report.backend == "bwrap" and report.complete, report.describe()
    assert report.walls["audit_hook"] and not report.missing
    assert "[x] seccomp" in report.describe()


def test_without_bubblewrap_strict_refuses_and_lax_says_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_module, "bwrap_binary", lambda: None)
    with pytest.raises(SandboxUnavailableError, match="apt-get install bubblewrap"):
        Sandbox(strict=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        weak = Sandbox(Limits(wall_s=20), strict=False)
    assert weak.backend == "process"
    assert {"pid_namespace", "private_tmpfs", "inode_quota"} <= set(weak.isolation.missing)
    assert any("lacks" in str(w.message) for w in caught)
    result = weak.run_python("import os\nprint(6 * 7)")
    assert result.ok and result.stdout == "42\n" and result.backend == "process"
    with weak.session() as session:
        session.run_python("open('x', 'w').write('y')")
    assert_sandbox_gone(session)  # the host folder is removed
    if os.geteuid() == 0 and not weak.isolation.walls["unprivileged_uid"]:
        refused = weak.run_command(["bash", "-c", "echo hi"], limits=SHELL)  # root, no RLIMIT_NPROC: no forks
        assert refused.error is not None and refused.error.startswith("process_limit")


def test_strict_default_follows_ci_and_the_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROLLGYM_SANDBOX_STRICT", raising=False)
    monkeypatch.setenv("CI", "true")
    assert sandbox_module.strict_default() is True
    monkeypatch.setenv("ROLLGYM_SANDBOX_STRICT", "0")
    assert sandbox_module.strict_default() is False
    monkeypatch.delenv("CI")
    monkeypatch.setenv("ROLLGYM_SANDBOX_STRICT", "1")
    assert sandbox_module.strict_default() is True


def test_without_root_bubblewrap_makes_the_user_namespace(tmp_path: Path) -> None:
    """The same sandbox started by an unprivileged user (here uid 65534 running the system Python)."""
    import shutil
    import subprocess
    import sys

    system_python = Path("/usr/bin/python3")
    if os.geteuid() != 0 or shutil.which("setpriv") is None or not system_python.exists():
        pytest.skip("needs root (to become another user), setpriv and /usr/bin/python3")
    version = subprocess.run([str(system_python), "-c", "import sys; print(sys.version_info[:2])"],
                             capture_output=True, text=True).stdout.strip()
    if version != str(sys.version_info[:2]):
        pytest.skip(f"/usr/bin/python3 is {version}, not this Python's version")
    site = ":".join(p for p in sys.path if p.endswith("site-packages"))  # a venv's, and those its .pth files add
    repo = Path(__file__).resolve().parents[2]
    code = ("from rollgym.sandbox import Sandbox, Limits\nbox = Sandbox(Limits(wall_s=20), backend='bwrap', "
            "strict=True)\nr = box.run_command(['bash', '-c', 'id -u; touch /x'], limits=Limits(nproc=8))\n"
            "print(r.stdout.strip(), 'Read-only' in r.stderr)")
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "PYTHONPATH": f"{repo}:{site}"}
    done = subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
                           str(system_python), "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=120)
    if "Permission denied" in done.stderr and "site-packages" in done.stderr:
        pytest.skip("this Python's packages are not readable by other users")
    assert done.stdout.strip() == "65534 True", done.stderr[-2000:]


def test_a_session_outlives_the_thread_that_opened_it(box: Sandbox) -> None:
    import threading

    sessions = []
    opener = threading.Thread(target=lambda: sessions.append(box.session(SHELL)))
    opener.start()
    opener.join()
    with sessions[0] as session:
        session.run_command(["bash", "-c", "echo kept > f"])
        assert session.run_command(["cat", "f"]).stdout == "kept\n"


def test_when_the_env_process_dies_its_sandboxes_die_too(tmp_path: Path) -> None:
    """SIGKILL the process that runs a sandbox: the supervisor sees its pipe close and ends everything."""
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import require_binary
    from tests.sandbox.conftest import processes_of

    require_binary("bwrap")
    repo = Path(__file__).resolve().parents[2]
    code = (
        "from rollgym.sandbox import Sandbox, Limits\n"
        "box = Sandbox(Limits(wall_s=300, nproc=8), backend='bwrap', strict=True, pool_size=1)\n"
        "s = box.session()\nprint(s.box.plan.host_uid, flush=True)\n"
        "s.run_command(['bash', '-c', '(setsid sleep 300 &); sleep 300'])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(repo)}
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    assert child.stdout is not None
    uid = int(child.stdout.readline())
    deadline = time.monotonic() + 30
    while len(processes_of(uid)) < 3 and time.monotonic() < deadline:  # supervisor, bash, sleeps
        time.sleep(0.1)
    assert len(processes_of(uid)) >= 3
    child.send_signal(signal.SIGKILL)
    child.wait()
    deadline = time.monotonic() + 10
    while processes_of(uid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_of(uid) == []


def test_the_supervisor_and_every_job_run_under_seccomp(box: Sandbox) -> None:
    """Two stacked filters: the base one, which the supervisor loads once after its set-up (and so binds
    it too), and the job's own on top; ``no_new_privs`` on both."""
    if box.backend != "bwrap":
        pytest.skip("the supervisor is pid 1 only under bubblewrap")
    code = ("def status(pid):\n"
            "    rows = dict(line.split(':', 1) for line in open(f'/proc/{pid}/status'))\n"
            "    return [rows[k].strip() for k in ('Seccomp', 'Seccomp_filters', 'NoNewPrivs')]\n"
            "print(status(1), status('self'))")
    for job in (Job.python(code, audit_hook=False), Job.python(code, audit_hook=False, limits=SHELL)):
        assert box.run(job).stdout == "['2', '1', '1'] ['2', '2', '1']\n"
