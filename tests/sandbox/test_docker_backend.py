"""The Docker backend: its container runs the local sandbox's own Python runner (``inside/pyrun.py``).

No Docker engine runs on the development machine or in CI, so the container's command is run here
with the host's Python (the audit hook and the runner are what it starts), the container's options
are read back, and the end-to-end run skips with the reason where no engine is reachable.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rollgym.core.errors import MissingDependencyError
from rollgym.sandbox import Limits, make_sandbox
from rollgym.sandbox.docker import WORKDIR, container_command, container_options, docker_client


def run_command_here(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The container's command, run by this machine's Python in ``cwd`` (the walls are the engine's, not here)."""
    return subprocess.run(container_command(code, python=sys.executable), cwd=cwd, capture_output=True, text=True,
                          timeout=60)


def test_the_container_command_runs_code_under_the_runner_and_its_audit_hook(tmp_path: Path) -> None:
    done = run_command_here("x = 6 * 7\nprint('x is', x)\nx + 1", tmp_path)
    assert done.returncode == 0 and done.stdout == "x is 42\n43\n"  # a final expression is printed, as locally
    for attack, event in [("import socket\nsocket.socket()", "socket"),
                          ("open('/etc/hostname').read()", "cannot open"),
                          ("import os\nos.system('true')", "os.system"),
                          ("import ctypes\nctypes.CDLL(None)", "ctypes")]:
        refused = run_command_here(attack, tmp_path)
        assert refused.returncode == 1 and "PermissionError: sandbox:" in refused.stderr and event in refused.stderr
    failed = run_command_here("import sys\nsys.exit(3)", tmp_path)
    assert failed.returncode == 3


def test_the_container_gets_the_walls_and_limits_asked_for() -> None:
    pytest.importorskip("docker", reason="the Docker SDK is not installed (pip install 'rollgym[docker]')")
    options = container_options(Limits(wall_s=5, cpu_s=3, mem_mb=256, disk_mb=8, max_files=100, nofile=64))
    assert options["network_mode"] == "none" and options["network_disabled"] and options["read_only"]
    assert options["cap_drop"] == ["ALL"] and options["security_opt"] == ["no-new-privileges"]
    assert options["user"] == "65534:65534" and options["mem_limit"] == options["memswap_limit"] == "256m"
    assert options["tmpfs"] == {WORKDIR: "size=8m,nr_inodes=100,mode=1777"}
    ulimits = {u["Name"]: (u["Soft"], u["Hard"]) for u in options["ulimits"]}
    assert ulimits == {"cpu": (3, 4), "fsize": (8 << 20, 8 << 20), "nofile": (64, 64)}


def _docker_reachable() -> bool:
    try:
        docker_client().close()
        return True
    except MissingDependencyError:
        return False


def test_docker_backend_runs_code_when_an_engine_is_reachable() -> None:
    if not _docker_reachable():
        pytest.skip("no Docker engine is reachable on this machine (the end-to-end docker run is untested here)")
    try:
        sandbox = make_sandbox("docker", Limits(wall_s=60))
    except MissingDependencyError as exc:
        pytest.skip(str(exc))
    try:
        result = sandbox.run_python("import socket\nprint(6 * 7)\nsocket.create_connection(('1.1.1.1', 80))")
        assert result.stdout.strip() == "42" and not result.ok and "PermissionError" in result.stderr
    finally:
        sandbox.close()


def test_docker_backend_without_an_engine_is_one_clear_error() -> None:
    pytest.importorskip("docker", reason="the Docker SDK is not installed (pip install 'rollgym[docker]')")
    if _docker_reachable():
        pytest.skip("a Docker engine is reachable, so there is no missing-engine error to check")
    with pytest.raises(MissingDependencyError, match="No Docker engine is reachable"):
        make_sandbox("docker", Limits(wall_s=5))
