"""``RepoRepairRealSource``: tasks made of validated mutants of real projects, loaded without revalidation.

The committed mutant manifests list each validated mutant (project, mutation, failing
test ids, first failure message): ``mutants.jsonl`` for ``RepoRepairReal-v0`` (901 mutants,
frozen) and ``mutants-v1.jsonl`` for ``RepoRepairReal-v1`` (v0's mutants and the ones the
cheaper validator added; a task index of v0 does not name the same task in v1).
``mutants.baselines.json`` lists each project's test failures before any mutation (deselected
when grading). A task of ``bugs`` = k combines k validated mutants of one project at least
three lines apart; its hidden tests are the test files that hold a failing test; the agent
sees the project's sources and its other tests.

Splits: mutants of the manifest's ``seen`` projects go to ``train``, ``validation`` or
``test`` by a hash of their content; ``test_unseen`` holds only the held-out projects.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from rollgym.core.errors import ConfigError
from rollgym.core.seeding import content_digest, split_of_key
from rollgym.core.task import Task
from rollgym.envs.code.repo_real.mutate import Mutation, apply_all
from rollgym.envs.code.repo_real.projects import Project, load_projects, project_dir

FAMILY = "code-reporepair-real"
DEFAULT_ENV_ID = "RepoRepairReal-v0"
LATEST_ENV_ID = "RepoRepairReal-v1"
MUTANTS_FILE = Path(__file__).with_name("mutants.jsonl")
#: The mutant manifest of each version of the id; a version's file never changes once released.
MUTANTS_FILES = {"v0": MUTANTS_FILE, "v1": Path(__file__).with_name("mutants-v1.jsonl")}
BASELINES_FILE = Path(__file__).with_name("mutants.baselines.json")
SPLITS = ("train", "validation", "test", "test_unseen")
MAX_BUGS = 3


def mutants_file(env_id: str = DEFAULT_ENV_ID) -> Path:
    """The mutant manifest of ``env_id``'s version (``RepoRepairReal-v1`` -> ``mutants-v1.jsonl``; v0's otherwise)."""
    return MUTANTS_FILES.get(env_id.rsplit("-", 1)[-1], MUTANTS_FILE)


@cache
def load_mutants(env_id: str = DEFAULT_ENV_ID) -> tuple[dict[str, Any], ...]:
    """The validated mutants of ``env_id``'s committed manifest, in its order."""
    return tuple(json.loads(line) for line in mutants_file(env_id).read_text().splitlines() if line.strip())


@cache
def load_baselines() -> dict[str, list[str]]:
    """Each project's failing test ids before mutation."""
    return dict(json.loads(BASELINES_FILE.read_text()))


def split_of_mutant(row: dict[str, Any], projects: dict[str, Project]) -> str:
    """The split of a validated mutant: ``test_unseen`` for a held-out project, else by its content."""
    if projects[row["project"]].split == "test_unseen":
        return "test_unseen"
    m = row["mutation"]
    return split_of_key(f"{row['project']}|{m['path']}|{m['line']}|{m['col']}|{m['new']}")


@cache
def mutants_by_split(env_id: str = DEFAULT_ENV_ID) -> dict[str, tuple[dict[str, Any], ...]]:
    """The validated mutants of each split of ``env_id``."""
    projects = {p.name: p for p in load_projects()}
    out: dict[str, list[dict[str, Any]]] = {s: [] for s in SPLITS}
    for row in load_mutants(env_id):
        out[split_of_mutant(row, projects)].append(row)
    return {s: tuple(rows) for s, rows in out.items()}


def distance(row: dict[str, Any]) -> str:
    """``near`` when a failing test's file is named after the mutated module, else ``far``."""
    path = row["mutation"]["path"]
    stem = Path(path).stem if Path(path).stem != "__init__" else Path(path).parent.name
    return "near" if any(stem in t.split("::")[0] for t in row["failing"]) else "far"


def _humanize(test_id: str) -> str:
    name = test_id.split("::")[-1].split("[")[0]
    return name.removeprefix("test_").removeprefix("test").replace("_", " ").strip() or "its main use"


def issue_text(project: Project, rows: list[dict[str, Any]]) -> str:
    """The issue: what misbehaves (feature words and error), never the tests' code or where the bug is."""
    lines = [f"Issue: {project.name} {project.version} misbehaves after a recent change."]
    for row in rows:
        features = sorted({_humanize(t) for t in row["failing"]})[:3]
        message = row["message"].split(" - ")[0].replace("assert ", "")[:160] or "a wrong result"
        lines.append(f"- Behaviour around {', '.join(repr(f) for f in features)} is broken ({message}).")
    lines.append(
        f"\nThere {'is one bug' if len(rows) == 1 else f'are {len(rows)} bugs'} in the package's source. Fix the "
        "source so that the project's own test suite passes again. Do not change any test file or add a conftest.py: "
        "that scores 0. Hidden tests from the project's suite decide the reward.")
    return "\n".join(lines)


class RepoRepairRealSource:
    """The task source of ``RepoRepairReal-v0``; a task is a pure function of ``bugs``, split and index.

    Example:
        >>> source = RepoRepairRealSource()
        >>> source.size("train") > 1000
        True
    """

    family = FAMILY
    extra_splits = ("test_unseen",)

    def __init__(self, bugs: int = 1, env_id: str = DEFAULT_ENV_ID) -> None:
        if isinstance(bugs, bool) or not isinstance(bugs, int) or not 1 <= bugs <= MAX_BUGS:
            raise ConfigError(f"bugs must be an integer from 1 to {MAX_BUGS}, got {bugs!r}.")
        self.bugs = bugs
        self.env_id = env_id

    def size(self, split: str) -> int | None:
        """The number of tasks in ``split`` (one per validated mutant; combined tasks reuse them)."""
        return len(mutants_by_split(self.env_id).get(split, ()))

    def _rows(self, index: int, split: str) -> list[dict[str, Any]]:
        rows = mutants_by_split(self.env_id)[split]
        first = rows[index]
        chosen = [first]
        same = [r for r in rows if r["project"] == first["project"]]
        step = 1 + index % 7
        k = same.index(first)
        for j in range(1, len(same)):
            candidate = same[(k + j * step) % len(same)]
            mutations = [Mutation.from_dict(r["mutation"]) for r in chosen]
            if len(chosen) == self.bugs:
                break
            if not any(Mutation.from_dict(candidate["mutation"]).overlaps(m) for m in mutations):
                chosen.append(candidate)
        return chosen

    def task(self, index: int, split: str = "train") -> Task:
        """Task ``index`` of ``split``; the project must be built (``rollgym data build repo-real``)."""
        if split not in SPLITS:
            raise ConfigError(f"Unknown split {split!r}; use one of {', '.join(SPLITS)}.")
        size = self.size(split) or 0
        if not 0 <= index < size:
            raise ConfigError(f"task_index must be below {size} in split {split!r}, got {index!r}.")
        rows = self._rows(index, split)
        project = next(p for p in load_projects() if p.name == rows[0]["project"])
        root = project_dir(project)
        from rollgym.envs.code.repo_real.validate import test_files

        tests = test_files(root, list(project.tests))
        hidden = sorted({t.split("::")[0] for r in rows for t in r["failing"]} & set(tests))
        mutations = [Mutation.from_dict(r["mutation"]) for r in rows]
        sources = {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*.py"))
                   if str(p.relative_to(root)).startswith(project.root.strip(".").strip("/") or "")}
        originals = {m.path: sources[m.path] for m in mutations}
        sources = apply_all(sources, mutations)
        files = {p: c for p, c in sources.items() if p not in hidden and not p.rsplit("/", 1)[-1].startswith("conftest")
                 and not p.startswith(("docs/", "doc/"))}
        for support in ("pyproject.toml", "setup.cfg", "tox.ini", "pytest.ini"):
            if (root / support).is_file() and support != "pytest.ini":
                files[support] = (root / support).read_text()
        key = "|".join(f"{project.name}:{m.path}:{m.line}:{m.col}:{m.new}" for m in mutations)
        return Task(
            id=f"{self.env_id}:{split}:{self.bugs}:{index}:{content_digest(key)}",
            env_id=self.env_id,
            prompt=issue_text(project, rows),
            answer={
                "files": files,
                "project": project.name,
                "hidden": hidden,
                "run": sorted({f for r in rows for f in r["tests_run"]} | set(hidden)),
                "deselect": load_baselines().get(project.name, []),
                "failing": sorted({t for r in rows for t in r["failing"]}),
                "fix": [{"path": path, "content": text} for path, text in sorted(originals.items())],
            },
            meta={
                "project": project.name,
                "version": project.version,
                "licence": project.licence,
                "difficulty": {"bugs": len(rows), "distance": max(distance(r) for r in rows)},
                "config": {"bugs": self.bugs},
                "mutations": [m.kind for m in mutations],
                "n_files": len(files),
            },
        )


def catalogue() -> dict[str, Any]:
    """Counts for ``rollgym list --stats``: projects, and validated mutants of the latest id per split and project."""
    by_split = mutants_by_split(LATEST_ENV_ID)
    projects = load_projects()
    per_project: dict[str, int] = {}
    for row in load_mutants(LATEST_ENV_ID):
        per_project[row["project"]] = per_project.get(row["project"], 0) + 1
    return {"repo_real_projects": len(projects),
            "repo_real_projects_unseen": [p.name for p in projects if p.split == "test_unseen"],
            **{f"repo_real_tasks_{s}": len(rows) for s, rows in by_split.items()},
            **{f"repo_real_mutants_{name}": n for name, n in sorted(per_project.items())},
            "repo_real_validated_mutants": sum(len(rows) for rows in by_split.values()),
            "repo_real_v0_validated_mutants": len(load_mutants(DEFAULT_ENV_ID))}
