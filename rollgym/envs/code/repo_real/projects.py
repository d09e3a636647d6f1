"""The real projects of ``RepoRepairReal-v0``: the committed manifest, and the build step that fetches them.

:data:`PROJECTS_FILE` names each project's sdist, version, licence and sha256. :func:`build`
downloads the sdists with ``pip download --no-deps --no-binary :all:`` from the package
registry, checks each hash and unpacks the sdist under :func:`cache_root`
(``$ROLLGYM_CACHE/repo-real``, else ``$XDG_CACHE_HOME/rollgym/repo-real``, else
``~/.cache/rollgym/repo-real``). The projects' code is never committed to rollgym.

Example:
    >>> [p.name for p in load_projects()][:2]
    ['more-itertools', 'toolz']
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rollgym.core.errors import DataNotFoundError, RollgymError
from rollgym.core.io import file_sha256

PROJECTS_FILE = Path(__file__).with_name("projects.json")


@dataclass(frozen=True)
class Project:
    """One project of the manifest (see ``projects.json`` for the fields)."""

    name: str
    version: str
    licence: str
    sdist: str
    sha256: str
    root: str
    sources: tuple[str, ...]
    tests: tuple[str, ...]
    split: str

    @property
    def folder(self) -> str:
        """The unpacked sdist's folder name, ``<sdist without .tar.gz>``."""
        return self.sdist.removesuffix(".tar.gz")


def load_projects() -> list[Project]:
    """The projects of the committed manifest, in its order."""
    data = json.loads(PROJECTS_FILE.read_text())
    return [Project(p["name"], p["version"], p["licence"], p["sdist"], p["sha256"], p["root"], tuple(p["sources"]),
                    tuple(p["tests"]), p["split"]) for p in data["projects"]]


def cache_root() -> Path:
    """Where the unpacked projects live."""
    if os.environ.get("ROLLGYM_CACHE"):
        return Path(os.environ["ROLLGYM_CACHE"]).expanduser() / "repo-real"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "rollgym" / "repo-real"


def project_dir(project: Project, root: Path | None = None) -> Path:
    """The unpacked sdist of ``project``; one sentence saying how to build it when it is missing."""
    folder = (root or cache_root()) / project.folder
    if not (folder / ".verified").is_file():
        raise DataNotFoundError(f"The project {project.name} {project.version} is not built; run "
                                "`rollgym data build repo-real` (it downloads the sdists with pip).")
    return folder


def _unpack(archive: Path, into: Path) -> None:
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")


def build(root: Path | None = None, projects: list[Project] | None = None) -> list[Path]:
    """Download, verify and unpack every project that is not built yet; return their folders.

    Raises :class:`RollgymError` with one sentence when pip cannot fetch a project or a hash differs.
    """
    root = root or cache_root()
    root.mkdir(parents=True, exist_ok=True)
    folders = []
    for project in projects or load_projects():
        folder = root / project.folder
        if (folder / ".verified").is_file():
            folders.append(folder)
            continue
        with tempfile.TemporaryDirectory(dir=root) as tmp:
            spec = f"{project.name}=={project.version}"
            done = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary",
                                   ":all:", spec, "-d", tmp],
                                  capture_output=True, text=True, check=False)
            archive = Path(tmp) / project.sdist
            if done.returncode != 0 or not archive.is_file():
                last = (done.stderr.strip().splitlines() or ["no sdist came back"])[-1]
                raise RollgymError(f"pip could not download {spec} from the package registry ({last}).")
            if file_sha256(archive) != project.sha256:
                raise RollgymError(f"The sdist of {spec} does not match the manifest's sha256; refusing to use it.")
            shutil.rmtree(folder, ignore_errors=True)
            _unpack(archive, Path(tmp) / "unpacked")
            (Path(tmp) / "unpacked" / project.folder).rename(folder)
        (folder / ".verified").write_text(project.sha256 + "\n")
        folders.append(folder)
    return folders
