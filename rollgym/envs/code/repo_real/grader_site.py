"""The grader's own package folder: pytest, the packages the projects' tests import, and nothing else.

RepoRepairReal grades in a sandbox whose installed packages are hidden (see
:class:`~rollgym.sandbox.Sandbox`'s ``packages``): jobs import from this folder only. Without it, a
project that is also installed in rollgym's environment (``six``, ``idna``, ``more-itertools``) had
its unmutated copy in the grader's ``site-packages``, and six lines in the package's ``__init__``
that execute that copy passed every test with the bug in place.

The folder holds the files of :data:`ROOTS` and of everything they require (markers evaluated for
this Python, no extras), copied from this environment's installation, under
``<cache>/grader-site-<key>`` (the key hashes the Python version and each distribution's name and
version; the packages are in its ``site-packages`` folder). It refuses, in one sentence, a requirement
that is one of the projects under test.

Example:
    >>> sorted(p.name for p in grader_packages().iterdir())[:2]  # doctest: +SKIP
    ['_pytest', 'exceptiongroup']
"""

from __future__ import annotations

import hashlib
import importlib.metadata as metadata
import os
import re
import shutil
import sys
import tempfile
import threading
from pathlib import Path

from rollgym.core.errors import RollgymError
from rollgym.envs.code.repo_real.projects import cache_root, load_projects

ROOTS = ("pytest", "hypothesis", "pytz")  # pytest; hypothesis and hypothesis.extra.pytz for idna's and iso8601's tests
_lock = threading.Lock()
_built: dict[str, Path] = {}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirements(dist: metadata.Distribution) -> list[str]:
    """The names ``dist`` requires on this Python, without extras."""
    from packaging.requirements import InvalidRequirement, Requirement

    names = []
    for line in dist.requires or []:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            names.append(req.name)
    return names


def grader_distributions() -> list[metadata.Distribution]:
    """:data:`ROOTS` and what they require, installed here; one sentence if pytest is missing or a
    requirement is a project under test."""
    projects = {_normal(p.name) for p in load_projects()}
    found: dict[str, metadata.Distribution] = {}
    todo = list(ROOTS)
    while todo:
        name = _normal(todo.pop())
        if name in found:
            continue
        if name in projects:
            raise RollgymError(f"The grader's packages would include {name}, a project under test; RepoRepairReal "
                               "cannot grade with this pytest installation.")
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            if name == "pytest":
                raise RollgymError("RepoRepairReal grades with pytest, which is not installed; "
                                   "pip install 'rollgym[code]'.") from None
            continue  # an optional test dependency: the tests that need it fail as they would anywhere
        found[name] = dist
        todo += _requirements(dist)
    return [found[name] for name in sorted(found)]


def grader_packages(root: Path | None = None) -> Path:
    """The folder of the grader's packages, built on first use (a copy of their installed files)."""
    dists = grader_distributions()
    names = "|".join(f"{_normal(d.metadata['Name'])}=={d.version}" for d in dists)
    key_text = f"site-packages|{sys.version_info[:2]}|{names}"
    key = hashlib.sha256(key_text.encode()).hexdigest()[:16]
    base = root or cache_root()
    folder = base / f"grader-site-{key}"
    with _lock:
        if str(folder) in _built or (folder / ".complete").is_file():
            _built[str(folder)] = folder
            return folder / "site-packages"
        base.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".grader-site-", dir=base))
        try:
            packages = work / "site-packages"  # by that name: hypothesis skips "site-packages" paths when it
            for dist in dists:                  # reads local modules for constants (3 s a run otherwise)
                for file in dist.files or ():
                    source = Path(str(dist.locate_file(file)))
                    rel = Path(str(file))
                    if rel.is_absolute() or ".." in rel.parts or rel.suffix == ".pyc" or not source.is_file():
                        continue  # scripts in bin/, caches
                    target = packages / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(source, target)
            import compileall

            # compiled once here: the sandbox sees the folder read-only and would compile on every run
            compileall.compile_dir(str(packages), quiet=2)
            for path in [work, *work.rglob("*")]:  # readable by the sandbox's unprivileged user
                os.chmod(path, 0o755 if path.is_dir() else 0o644)
            (work / ".complete").write_text(key_text + "\n")
            try:
                work.rename(folder)
            except OSError:  # another process built it first
                if not (folder / ".complete").is_file():
                    raise
        finally:
            shutil.rmtree(work, ignore_errors=True)
        _built[str(folder)] = folder
        return folder / "site-packages"
