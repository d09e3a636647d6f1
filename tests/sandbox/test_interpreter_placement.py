"""A sandbox runs the user's interpreter wherever it lives, /tmp included, or refuses at once in one sentence.

Issue #41: from a clone under /tmp, the sandbox's private /tmp hid a virtual environment that lived
there, so jobs ran without its packages and ``python`` resolved to nothing (exit 127).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from rollgym.sandbox.spawn import InterpreterError, check_placement
from tests.conftest import require_binary

REPO = Path(__file__).resolve().parents[2]

# Run by the /tmp virtual environment's own python: a sandbox with its default interpreter (that one).
SCRIPT = r"""
import json
from rollgym.sandbox import Job, Limits, Sandbox
box = Sandbox(Limits(wall_s=30, cpu_s=20, nproc=8), backend="bwrap", strict=True)
code = "import only_in_tmp_venv, sys; print(only_in_tmp_venv.VALUE, sys.executable)"
write = "touch {venv}/planted; echo status=$?"
results = box.run_many([Job.python(code), Job.command(["python", "-c", code]), Job.command(["bash", "-c", write]),
                        Job.python(code)], reuse=True, concurrency=1)
results.append(box.run_command(["python", "-c", code]))
print(json.dumps([[r.stdout, r.stderr[-300:], r.exit_code, r.error] for r in results]))
"""


@pytest.fixture(scope="module")
def tmp_venv() -> Iterator[Path]:
    """A virtual environment under /tmp with a package that is installed nowhere else; the host side of
    rollgym (this checkout and the test venv's packages) reaches it through a ``.pth`` file."""
    require_binary("bwrap")
    folder = Path(tempfile.mkdtemp(prefix="rollgym-venv-", dir="/tmp"))
    try:
        venv = folder / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
        python = venv / "bin" / "python"
        purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                 capture_output=True, text=True, check=True, timeout=60).stdout.strip()
        ours = [p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p)]  # .pth-added ones too
        (Path(purelib) / "host-packages.pth").write_text("\n".join(ours) + "\n")
        (Path(purelib) / "only_in_tmp_venv").mkdir()
        (Path(purelib) / "only_in_tmp_venv" / "__init__.py").write_text("VALUE = 'from-the-tmp-venv'\n")
        yield venv
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_sandbox_jobs_run_the_interpreter_of_a_venv_under_tmp(tmp_venv: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "ROLLGYM_SANDBOX_STRICT": "1"}
    done = subprocess.run([str(tmp_venv / "bin" / "python"), "-c", SCRIPT.replace("{venv}", str(tmp_venv))],
                          capture_output=True, text=True, timeout=300, env=env, cwd="/")
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    expected = f"from-the-tmp-venv {tmp_venv}/bin/python\n"
    # Python code (forked by the sandbox), `python` on PATH, both again after a fresh job, and a new sandbox
    for index in (0, 1, 3, 4):
        stdout, stderr, exit_code, error = results[index]
        assert (stdout, exit_code, error) == (expected, 0, None), (index, stderr)
    # the interpreter's folders are read-only inside
    assert "status=1" in results[2][0] and "Read-only file system" in results[2][1]
    assert not (tmp_venv / "planted").exists()


@pytest.mark.parametrize("root", ["/tmp", "/", "/dev", "/proc/self", "/sandbox/py", "/.rollgym/x"])
def test_an_interpreter_the_sandbox_cannot_show_is_refused_in_one_sentence(root: str) -> None:
    with pytest.raises(InterpreterError, match=r"^The Python installation folder .* cannot be shown") as caught:
        check_placement(["/usr", root])
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("root", ["/tmp/x/venv", "/dev/shm/py", "/opt/python", "/home/u/.venv"])
def test_interpreter_folders_below_tmp_are_fine(root: str) -> None:
    check_placement(["/usr", root])


def test_a_sandbox_with_its_own_packages_shows_no_installed_package(tmp_path: Path) -> None:
    """``Sandbox(packages=...)`` (RepoRepairReal's grader): jobs import from that folder only; the installed
    packages (``six``, ``idna``, ``numpy`` here), ensurepip's wheels and ``/usr/share`` are not there to read."""
    require_binary("bwrap")
    from rollgym.sandbox import Limits, Sandbox
    from rollgym.sandbox.spawn import PACKAGES_MOUNT, installed_package_folders

    mine = tmp_path / "site-packages"
    mine.mkdir()
    (mine / "only_mine.py").write_text("X = 'mine'\n")
    folders = installed_package_folders()
    code = ("import importlib.util as u, json, os, sys, only_mine\n"
            "print(json.dumps([only_mine.X, [n for n in ('six', 'idna', 'numpy', 'pytest') if u.find_spec(n)],"
            " {f: os.listdir(f) for f in json.loads(sys.argv[1]) if os.path.isdir(f)},"
            " os.path.exists('/usr/share/doc'), os.path.exists('/usr/bin/env')]))")
    box = Sandbox(Limits(wall_s=30, cpu_s=20, nproc=8), backend="bwrap", strict=True, packages=str(mine))
    assert box.packages_path == PACKAGES_MOUNT
    result = box.run_command(["python", "-c", code, json.dumps(folders)])
    assert result.exit_code == 0, result.stderr[-1000:]
    name, importable, listed, share, env_binary = json.loads(result.stdout)
    assert (name, importable, share, env_binary) == ("mine", [], False, True)
    assert listed and all(entries == [] for entries in listed.values()), listed
