"""The Dockerfile and ``serve-env --docker-image``, checked statically: no Docker engine runs here.

These tests read the Dockerfile (families, packages, extras, entrypoint) and check that the
command it starts is one the CLI accepts; building and running the image needs a Docker engine,
which this machine and CI do not have.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import tomllib

from rollgym.cli import build_parser

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = (REPO / "Dockerfile").read_text()


def _case_tables() -> list[dict[str, str]]:
    """The two ``case "$FAMILY"`` tables of the Dockerfile: Debian packages, then pip extras."""
    tables = []
    for block in DOCKERFILE.split('case "$FAMILY" in')[1:]:
        table = {}
        for families, value in re.findall(r"^\s*([\w|]+)\)\s+\w+=\"([^\"]*)\"", block.split("esac", 1)[0], re.M):
            for family in families.split("|"):
                table[family] = value
        tables.append(table)
    return tables


def test_every_family_gets_its_system_packages_and_existing_extras():
    packages, extras = _case_tables()
    assert "chromium" in packages["web"] and "stockfish" in packages["games"] and "bubblewrap" in packages["math"]
    optional = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    families = {"puzzles", "tools", "search", "games", "math", "web", "all"}
    assert families <= set(extras)
    for family in families:
        for extra in extras[family].split(","):
            assert extra in optional, f"{family}: extra {extra!r} is not in pyproject.toml"
    for path in re.findall(r"^COPY (\S+)", DOCKERFILE, re.M):
        assert (REPO / path).exists(), path


def test_the_entrypoint_is_a_command_line_the_cli_accepts():
    entry = re.search(r"^ENTRYPOINT (\[.*\])", DOCKERFILE, re.M)
    assert entry
    import json

    argv = json.loads(entry.group(1))
    assert argv[:2] == ["rollgym", "serve-env"]
    args = build_parser().parse_args([*argv[1:], "ToolWorld-v0", "--max-sessions", "64"])
    assert args.host == "0.0.0.0" and args.port == 8000 and args.env == ["ToolWorld-v0"]
    assert re.search(r"^EXPOSE 8000$", DOCKERFILE, re.M) and "/health" in DOCKERFILE


def test_docker_image_option_builds_the_docker_run_line_and_keeps_the_token_off_it(monkeypatch):
    from rollgym.commands.serve_env import docker_command

    monkeypatch.delenv("ROLLGYM_SERVE_TOKEN", raising=False)
    args = build_parser().parse_args(["serve-env", "ToolWorld-v0", "--docker-image", "rollgym-env:tools",
                                      "--port", "9000", "--token", "s3cret", "--env-arg", "max_turns=5"])
    command = docker_command(args)
    assert command[:6] == ["docker", "run", "--rm", "--init", "-p", "127.0.0.1:9000:8000"]
    assert "s3cret" not in " ".join(command) and ["-e", "ROLLGYM_SERVE_TOKEN"] == command[6:8]
    image_at = command.index("rollgym-env:tools")
    inner = build_parser().parse_args(["serve-env", "--host", "0.0.0.0", "--port", "8000", *command[image_at + 1:]])
    assert inner.env == ["ToolWorld-v0"] and inner.env_arg == ["max_turns=5"]


def test_docker_image_without_docker_is_one_clear_error(tmp_path):
    out = subprocess.run([sys.executable, "-m", "rollgym.cli", "serve-env", "Countdown-v0", "--docker-image", "x"],
                         capture_output=True, text=True, cwd=REPO,
                         env={"PATH": str(tmp_path), "PYTHONPATH": str(REPO)})  # a PATH without docker
    assert out.returncode == 2 and "needs the docker command line tool" in out.stderr
