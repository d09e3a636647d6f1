"""Read a Harbor task directory into a :class:`HarborTask` that rollgym's sandbox can play.

rollgym plays a Harbor task without building an image when its environment is only files: no
``environment/`` folder, or a Dockerfile whose instructions are ``FROM`` (any image; the sandbox's
own system, with bash, coreutils, tar, gzip and python3, stands in for it), ``WORKDIR``, ``COPY``
or ``ADD`` of files from the build context into the working folder, ``RUN chmod MODE PATH...``
and ``ENV``. Anything else (``RUN apt-get ...``, a docker-compose file) needs a real image: the
task is refused with one sentence that says which line. The task's working folder (``WORKDIR``,
``/app`` by default) becomes the sandbox's ``/sandbox/work``; ``/solution`` and ``/logs`` become
folders under ``/sandbox/work/.harbor``, and ``/tests`` becomes ``/tmp/harbor/tests`` (outside the
working folder, as ``/tests`` is outside ``/app`` in Harbor: no folder above the tests is the
agent's). Those absolute paths are rewritten in the instruction, ``solution/solve.sh`` and the text
files of ``tests/``.
"""

from __future__ import annotations

import importlib
import os
import re
import shlex
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from rollgym.core.errors import ConfigError

SANDBOX_WORKDIR = "/sandbox/work"
HIDDEN = ".harbor"  # below the working folder: solution and logs, made only when they are needed
GRADING_ROOT = "/tmp/harbor"  # the grader's tests and HOME, made after /tmp is emptied (the env's run_tests)
MAX_TASK_BYTES = 16 << 20
# What the Dockerfile may put in the working folder, copies counted each time: 200 ``COPY`` lines of a 1 MiB
# context made 200 MiB of starting files (and over 1 GiB in the importing process once encoded).
MAX_START_BYTES = 16 << 20
MAX_START_FILES = 2048  # the sandbox session's file limit


@dataclass(frozen=True)
class HarborTask:
    """A Harbor task read from its directory, with its paths mapped onto the sandbox."""

    name: str
    path: str
    instruction: str
    files: dict[str, bytes]
    modes: dict[str, int]
    tests: dict[str, bytes]
    solution: str | None
    workdir: str
    metadata: dict[str, Any] = field(default_factory=dict)


def _fail(folder: Path, why: str) -> ConfigError:
    return ConfigError(f"{folder} is not a Harbor task rollgym can play: {why}.")


def _files_below(folder: Path, root: Path) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for path in sorted(folder.rglob("*")):
        if path.is_symlink():
            raise _fail(root, f"{path.relative_to(root)} is a symbolic link")
        if path.is_file():
            found[path.relative_to(folder).as_posix()] = path.read_bytes()
    return found


def rewrite(text: str, workdir: str) -> str:
    """``text`` with the task's absolute paths mapped onto the sandbox (a path's own prefix is left alone), in one
    pass: a mapped path is never mapped again (``WORKDIR /tmp`` leaves ``/tmp/harbor/tests`` alone)."""
    targets = {"/tests": f"{GRADING_ROOT}/tests", "/solution": f"{SANDBOX_WORKDIR}/{HIDDEN}/solution",
               "/logs": f"{SANDBOX_WORKDIR}/{HIDDEN}/logs"}
    if workdir != "/":
        targets.setdefault(workdir, SANDBOX_WORKDIR)
    prefixes = "|".join(re.escape(p) for p in sorted(targets, key=len, reverse=True))
    return re.sub(rf"(?<![\w./-])({prefixes})(?=/|\b|$)", lambda m: targets[m.group(1)], text)


def _inside(workdir: str, path: str, folder: Path) -> str:
    target = PurePosixPath(workdir, path) if not path.startswith("/") else PurePosixPath(path)
    parts: list[str] = []
    for part in target.parts[1:]:
        if part == "..":
            if not parts:
                raise _fail(folder, f"{path} leaves the file system")
            parts.pop()
        elif part != ".":
            parts.append(part)
    base = list(PurePosixPath(workdir).parts[1:])
    if parts[: len(base)] != base:
        raise _fail(folder, f"its Dockerfile writes {path}, outside the working folder {workdir}")
    return "/".join(parts[len(base):])


def _copied(context: dict[str, bytes], source: str, dest: str, workdir: str, folder: Path,
            number: int) -> dict[str, bytes]:
    """What ``COPY source dest`` puts in the working folder: a folder's files below ``dest``, or one file."""
    if source in ("", ".") or any(k.startswith(source + "/") for k in context):
        base = "" if source in ("", ".") else source + "/"
        return {_inside(workdir, f"{dest.rstrip('/')}/{k[len(base):]}", folder): v
                for k, v in context.items() if k.startswith(base)}
    if source in context:
        target = f"{dest.rstrip('/')}/{source.split('/')[-1]}" if dest.endswith("/") or dest == "." else dest
        return {_inside(workdir, target, folder): context[source]}
    raise _fail(folder, f"Dockerfile line {number} copies {source}, which is not in environment/")


def _environment(folder: Path) -> tuple[str, dict[str, bytes], dict[str, int]]:
    environment = folder / "environment"
    if (environment / "docker-compose.yaml").exists() or (environment / "docker-compose.yml").exists():
        raise _fail(folder, "it needs a docker-compose environment")
    dockerfile = environment / "Dockerfile"
    if not dockerfile.is_file():
        return "/app", {}, {}
    context = _files_below(environment, folder)
    workdir, files, modes = "/", {}, {}
    lines = dockerfile.read_text(errors="replace").replace("\\\n", " ").splitlines()
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            words = shlex.split(line)
        except ValueError:
            raise _fail(folder, f"Dockerfile line {number} cannot be read") from None
        op, args = words[0].upper(), [w for w in words[1:] if not w.startswith("--")]
        if op in ("FROM", "ENV", "LABEL", "ARG", "CMD", "ENTRYPOINT", "USER", "EXPOSE"):
            continue
        if op == "WORKDIR" and len(args) == 1:
            workdir = str(PurePosixPath(workdir, args[0]))
        elif op in ("COPY", "ADD") and len(args) >= 2:
            for source in args[:-1]:
                files.update(_copied(context, source.strip("/").removeprefix("./"), args[-1], workdir, folder, number))
            if len(files) > MAX_START_FILES or sum(map(len, files.values())) > MAX_START_BYTES:
                raise _fail(folder, f"its Dockerfile copies more than {MAX_START_BYTES >> 20} MiB or "
                                    f"{MAX_START_FILES} files into the working folder (line {number})")
        elif op == "RUN" and len(args) >= 3 and args[0] == "chmod" and re.fullmatch(r"[0-7]{3,4}", args[1]):
            for path in args[2:]:
                modes[_inside(workdir, path, folder)] = int(args[1], 8)
        else:
            raise _fail(folder, f"it needs a container image (Dockerfile line {number}: {line[:60]!r}); rollgym plays "
                                "only tasks whose environment is files copied into the working folder")
    if workdir == "/":
        raise _fail(folder, "its Dockerfile sets no WORKDIR")
    return workdir, files, {p: m for p, m in modes.items() if p in files}


def read_task(folder: str | Path) -> HarborTask:
    """Read and check one Harbor task directory.

    Raises:
        ConfigError: one sentence on what is missing or what rollgym cannot play.
    """
    root = Path(folder)
    if not root.is_dir():
        raise ConfigError(f"{root} is not a folder; give a Harbor task directory (with task.toml).")
    _check_entries(root)
    for required in ("task.toml", "instruction.md", "tests/test.sh"):
        if not (root / required).is_file():
            raise _fail(root, f"{required} is missing")
    metadata = _toml(root)
    workdir, files, modes = _environment(root)
    tests = {k: _rewritten(v, workdir) for k, v in _files_below(root / "tests", root).items()}
    solve = root / "solution" / "solve.sh"
    solution = rewrite(solve.read_text(errors="replace"), workdir) if solve.is_file() else None
    instruction = rewrite((root / "instruction.md").read_text(errors="replace"), workdir)
    return HarborTask(root.name, str(root.resolve()), instruction, files, modes, tests, solution, workdir, metadata)


def _check_entries(root: Path) -> None:
    """Refuse a task folder holding a symbolic link (``instruction.md`` -> ``/proc/self/environ`` would put a
    host file in the prompt), anything but files and folders (a FIFO would hang the read), or more than
    :data:`MAX_TASK_BYTES`. Every entry is ``lstat``-ed and no link is followed, so all that is read later
    lies inside the folder."""
    total = 0
    for folder, folders, names in os.walk(root, followlinks=False):
        for name in sorted(folders + names):
            path = Path(folder, name)
            info = path.lstat()
            mode = info.st_mode
            if stat.S_ISLNK(mode):
                raise _fail(root, f"{path.relative_to(root)} is a symbolic link")
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise _fail(root, f"{path.relative_to(root)} is not a regular file or folder")
            if stat.S_ISREG(mode):
                total += info.st_size
                if total > MAX_TASK_BYTES:
                    raise _fail(root, f"it holds more than {MAX_TASK_BYTES >> 20} MiB")


def _toml(root: Path) -> dict[str, Any]:
    """task.toml's content (Python 3.10 without ``tomli``: only whether it is there, ``{}``)."""
    try:
        toml = importlib.import_module("tomllib")
    except ModuleNotFoundError:  # Python 3.10
        try:
            toml = importlib.import_module("tomli")
        except ModuleNotFoundError:
            return {}
    try:
        return dict(toml.loads((root / "task.toml").read_text()))
    except (ValueError, UnicodeDecodeError) as exc:  # TOMLDecodeError is a ValueError
        raise _fail(root, f"task.toml is not valid TOML ({exc})") from None


def _rewritten(data: bytes, workdir: str) -> bytes:
    try:
        return rewrite(data.decode("utf-8"), workdir).encode()
    except UnicodeDecodeError:
        return data


def find_tasks(folder: str | Path) -> list[Path]:
    """``folder`` if it is a task directory, else its sub-folders that hold a task.toml, sorted."""
    root = Path(folder)
    if (root / "task.toml").is_file():
        return [root]
    if not root.is_dir():
        raise ConfigError(f"{root} is not a folder; give a Harbor task directory or a folder of them.")
    found = sorted(p.parent for p in root.glob("*/task.toml"))
    if not found:
        raise ConfigError(f"{root} holds no Harbor task (no task.toml in it or in its sub-folders).")
    return found
