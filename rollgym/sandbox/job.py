"""``Job``: one thing to run in the sandbox (Python code or a command), with its inputs."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import posixpath
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rollgym.core.errors import ConfigError
from rollgym.sandbox.limits import Limits


@dataclass(frozen=True)
class File:
    """An input file with explicit permissions, e.g. an executable script: ``File(b"#!/bin/sh\\n...", 0o755)``."""

    data: bytes
    mode: int = 0o644


InputFiles = Mapping[str, "bytes | str | File"]


@dataclass(frozen=True)
class Job:
    """One run: Python source (``code``) or a command (``argv``), or neither (only write and read files).

    Attributes:
        code: Python source, run as ``__main__`` in the sandbox's interpreter (forked from
            a started one, so there is no interpreter start-up); a final expression's
            value is printed, as in a notebook. The audit hook guards it unless
            ``audit_hook=False``.
        argv: A command, e.g. ``("bash", "-c", "ls")`` or ``("python", "-m", "pytest", "-q")``;
            ``argv[0]`` is looked up on the sandbox's ``PATH`` (the Python's ``bin`` folder first).
        files: Input files, path relative to the working folder -> ``bytes``, ``str`` (UTF-8) or :class:`File`.
        tree: A host folder whose regular files (symbolic links are skipped) are copied in first;
            ``files`` are written over it.
        stdin: What the code reads on standard input.
        env: Environment variables, over the defaults (``PATH``, ``HOME``, ``TMPDIR``, ``LANG``
            and one-thread settings for BLAS libraries).
        cwd: Working folder, relative to the sandbox's working folder.
        limits: Limits of this run; ``None`` uses the sandbox's.
        return_files: Paths or ``fnmatch`` patterns, relative to the working folder (``*`` also
            matches ``/``, so ``"*"`` is every file), of regular files to bring back in
            :attr:`RunResult.files` after the run, up to ``Limits.disk_mb`` in all. Symbolic
            links are never followed.
        audit_hook: For Python code, whether the in-process audit hook (a second wall) is installed.
        fresh: Empty the sandbox's writable folders (working folder, ``/tmp``, ``/dev/shm``) before
            this run and after its files are collected, so that a session reused for unrelated jobs
            starts each one as a new sandbox would and a job leaves nothing behind (processes and
            System V IPC objects never outlive a run; no job's process holds another job's data).
            A job whose folders cannot be emptied breaks the sandbox: its result is a
            ``sandbox_broken`` error and the sandbox is retired.
            Used by batch graders: a job in a warm, reused sandbox costs a fork instead of a
            sandbox start.
        prelude: *Trusted* Python source (never model output) that the sandbox's supervisor runs
            once and keeps; ``code`` then runs in a copy of the prelude's globals. A harness that
            every job of a batch shares is compiled and imported once, not once per job. It runs
            in the supervisor, without the audit hook or seccomp, so it must come from the
            program, not from what it grades.
        data: A JSON value handed to Python code as the global ``job_data``, parsed by the supervisor
            before the job's process starts (inputs without a file to write and parse per job).
        echo: For Python code, print the ``repr`` of a final expression statement's value (as a
            notebook cell does). ``False`` runs the code as a plain module, which saves parsing it
            twice (a harness call of a batch grader has nothing to print).
        open_files: For Python code, paths (relative to the working folder) that the job's process
            opens for writing, created or emptied, before the audit hook and the code start; the code
            finds their descriptors in the global ``job_files`` (path -> descriptor). A harness
            writes its results there without an audited ``open``, which costs a fresh process more
            than the write itself.
        return_modes: After the run, list every entry below the working folder with its ``lstat``
            mode in :attr:`RunResult.modes` (path -> ``st_mode``; symbolic links are listed, never
            followed). The sandbox's supervisor reads the tree with its own code, so a check of
            what untrusted code left behind starts no process where that code ran.
    """

    code: str | None = None
    argv: tuple[str, ...] | None = None
    files: InputFiles = field(default_factory=dict)
    tree: str | os.PathLike[str] | None = None
    stdin: bytes | str = b""
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str = "."
    limits: Limits | None = None
    return_files: tuple[str, ...] = ()
    audit_hook: bool = True
    fresh: bool = False
    prelude: str | None = None
    data: Any = None
    echo: bool = True
    open_files: tuple[str, ...] = ()
    return_modes: bool = False

    def __post_init__(self) -> None:
        if self.code is not None and self.argv is not None:
            raise ConfigError("A Job runs either Python code or a command (argv), not both.")
        if self.code is not None and not isinstance(self.code, str):
            raise ConfigError(f"Job.code must be a string of Python source, got {type(self.code).__name__}.")
        if self.data is not None and self.code is None:
            raise ConfigError("Job.data is handed to Python code as job_data; it needs Job.code.")
        if self.prelude is not None and (self.code is None or not isinstance(self.prelude, str)):
            raise ConfigError("Job.prelude must be a string of trusted Python source, and needs Job.code to run.")
        if self.argv is not None:
            if isinstance(self.argv, (str, bytes)) or not self.argv or not all(isinstance(a, str) for a in self.argv):
                raise ConfigError("Job.argv must be a non-empty sequence of strings, e.g. ('bash', '-c', 'ls').")
            object.__setattr__(self, "argv", tuple(self.argv))
        if isinstance(self.return_files, str):
            object.__setattr__(self, "return_files", (self.return_files,))
        if isinstance(self.open_files, str):
            object.__setattr__(self, "open_files", (self.open_files,))
        if self.open_files and self.code is None:
            raise ConfigError("Job.open_files are handed to Python code as job_files; they need Job.code.")
        for path in [*self.files, *self.return_files, *self.open_files]:
            clean_path(path)
        if self.cwd != ".":
            clean_path(self.cwd)
        for key, value in self.env.items():
            if not isinstance(key, str) or not isinstance(value, str) or "=" in key or "\0" in key + value:
                raise ConfigError(f"Job.env must map names to strings without '=' or NUL, got {key!r}.")

    @classmethod
    def python(cls, code: str, **options: Any) -> Job:
        """A job that runs Python source."""
        return cls(code=code, **options)

    @classmethod
    def command(cls, argv: Sequence[str], **options: Any) -> Job:
        """A job that runs a command."""
        return cls(argv=tuple(argv), **options)

    @property
    def kind(self) -> str:
        """``"python"``, ``"exec"`` or ``"none"``."""
        return "python" if self.code is not None else "exec" if self.argv is not None else "none"


def clean_path(path: str) -> str:
    """``path`` normalized; a :class:`ConfigError` if it is absolute or climbs out with ``..``."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise ConfigError(f"A sandbox path must be a non-empty string, got {path!r}.")
    norm = posixpath.normpath(path)
    if path.startswith("/") or norm == ".." or norm.startswith("../"):
        raise ConfigError(f"Sandbox path {path!r} must be relative to the working folder and stay inside it.")
    return norm


def _as_bytes(value: bytes | str | File) -> tuple[bytes, int]:
    if isinstance(value, File):
        return bytes(value.data), value.mode
    if isinstance(value, str):
        return value.encode("utf-8"), 0o644
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value), 0o644
    raise ConfigError(f"An input file must be bytes, str or File, got {type(value).__name__}.")


def tree_files(root: str | os.PathLike[str], limit: int) -> dict[str, File]:
    """The regular files below ``root`` (no symbolic links), as input files; at most ``limit`` bytes."""
    base = Path(root)
    if not base.is_dir():
        raise ConfigError(f"Job.tree {str(root)!r} is not a folder.")
    out: dict[str, File] = {}
    total = 0
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            info = path.lstat()
            if not stat.S_ISREG(info.st_mode):
                continue
            total += info.st_size
            if total > limit:
                raise ConfigError(f"Job.tree {str(root)!r} holds more than {limit} bytes; raise Limits.disk_mb.")
            out[path.relative_to(base).as_posix()] = File(path.read_bytes(), 0o755 if info.st_mode & 0o100 else 0o644)
    return out


def encode(job: Job, limits: Limits, env: Mapping[str, str], return_limit: int) -> tuple[dict[str, Any], bytes]:
    """The job as the supervisor reads it: a JSON header and one payload (code, stdin, files)."""
    inputs: dict[str, File] = tree_files(job.tree, limits.disk_mb << 20) if job.tree is not None else {}
    for path, value in job.files.items():
        data, mode = _as_bytes(value)
        inputs[clean_path(path)] = File(data, mode)
    code = (job.code or "").encode("utf-8", errors="replace")
    prelude = (job.prelude or "").encode("utf-8", errors="replace")
    stdin = job.stdin.encode("utf-8") if isinstance(job.stdin, str) else bytes(job.stdin)
    files = [[path, f.mode, len(f.data)] for path, f in inputs.items()]
    header = {
        "kind": job.kind,
        "argv": list(job.argv or ()),
        "env": dict(env),
        "cwd": clean_path(job.cwd) if job.cwd != "." else ".",
        "limits": limits.to_wire(),
        "files": files,
        "code_size": len(code),
        "stdin_size": len(stdin),
        "return_files": [p.strip() for p in job.return_files],
        "return_limit": return_limit,
        "audit_hook": bool(job.audit_hook),
        "echo": bool(job.echo),
        "open_files": [clean_path(p) for p in job.open_files],
        "fresh": bool(job.fresh),
        "return_modes": bool(job.return_modes),
        "prelude_size": len(prelude),
        "prelude_key": prelude_key(prelude) if prelude else "",
        "capture": {"limit": limits.max_output_bytes, "kill_at": output_kill_at(limits.max_output_bytes)},
    }
    if job.data is not None:
        try:
            json.dumps(job.data)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"Job.data must be a JSON value (dicts, lists, strings, numbers): {exc}.") from None
        header["data"] = job.data
    return header, b"".join([prelude, code, stdin, *(f.data for f in inputs.values())])


OUTPUT_KILL_FACTOR = 16
OUTPUT_KILL_MIN = 1 << 20


def output_kill_at(max_output_bytes: int) -> int:
    """Bytes of stdout and stderr past ``max_output_bytes`` (together) after which a run is killed."""
    return max(OUTPUT_KILL_MIN, OUTPUT_KILL_FACTOR * max_output_bytes)


@functools.lru_cache(maxsize=32)
def prelude_key(source: bytes) -> str:
    """The name a prelude is kept under in a sandbox: a digest of its source."""
    return hashlib.sha256(source).hexdigest()[:32]
