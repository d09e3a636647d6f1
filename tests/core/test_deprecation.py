"""The deprecation policy (docs/releasing.md): every deprecated name goes in the next minor release,
and every warning or doc that names the removal version names that one."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest
from packaging.version import Version

from rollgym.core.deprecation import REMOVED_IN, moved_to, renamed
from tests.conftest import require_module

ROOT = Path(__file__).resolve().parents[2]
# "goes in rollgym 0.3.0", "until rollgym 0.3.0", "removed in rollgym 0.3.0", "goes in 0.3.0" ...
NAMED = re.compile(r"(?:goes|go|removed|dropped|until|kept until)(?: in)? (?:rollgym )?(\d+\.\d+(?:\.\d+)?)\b")
VAGUE = re.compile(r"(?:for )?one (?:more )?minor version", re.I)


def project_version() -> Version:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    match = re.search(r'^version = "([^"]+)"', text, re.M)
    assert match, "pyproject.toml has no version"
    return Version(match.group(1))


def next_minor(v: Version) -> Version:
    return Version(f"{v.major}.{v.minor + 1}.0")


def texts():
    for path in [*ROOT.joinpath("rollgym").rglob("*.py"), *ROOT.joinpath("docs").glob("*.md"),
                 ROOT / "README.md", ROOT / "SECURITY.md"]:
        yield path, path.read_text(encoding="utf-8")


def test_the_removal_version_is_the_next_minor_release():
    assert Version(REMOVED_IN) == next_minor(project_version())


def test_every_named_removal_version_parses_and_is_the_next_minor_release():
    expected = next_minor(project_version())
    found, vague = [], []
    for path, text in texts():
        for line_no, line in enumerate(text.splitlines(), 1):
            where = f"{path.relative_to(ROOT)}:{line_no}"
            if re.search(r"deprecat|alias|moved|old (?:name|path)|warns", line, re.I) or "goes in" in line:
                found += [(where, m.group(1)) for m in NAMED.finditer(line)]
            if VAGUE.search(line):
                vague.append(where)
    assert len(found) >= 5, found  # the aliases of agents, worldmodels, mcts, web, tools, training and the docs
    wrong = [(where, v) for where, v in found if Version(v) != expected]
    assert not wrong, f"removal versions other than {expected}: {wrong}"
    assert not vague, f"say the version (rollgym {expected}) instead of 'one minor version': {vague}"


def test_the_warnings_name_the_version():
    with pytest.warns(DeprecationWarning, match=re.escape(f"rollgym {REMOVED_IN}")):
        moved_to("old.place", {"Score": "rollgym.core.task"})("Score")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        renamed("GRPOConfig", "distill_coef", "distill_reverse_kl")
    assert f"rollgym {REMOVED_IN}" in str(caught[0].message)


def test_the_moved_leaderboard_name_warns_with_the_version():
    require_module("sqlalchemy")  # the leaderboard extra: the bare install's core tests skip this
    from rollgym.commands import leaderboard

    with pytest.warns(DeprecationWarning, match=re.escape(f"rollgym {REMOVED_IN}")):
        assert leaderboard.add_local.__module__ == "rollgym.leaderboard.ingest"


@pytest.mark.parametrize(("old", "name", "new"), [
    ("rollgym.envs.tools.checker", "Expectation", "rollgym.verifiers.tools"),
    ("rollgym.envs.tools.checker", "grade", "rollgym.verifiers.tools"),
    ("rollgym.envs.web.tasks.rubric", "normalize_text", "rollgym.verifiers.web"),
    ("rollgym.envs.web.tasks.rubric", "Rubric", "rollgym.verifiers.rubric"),
    ("rollgym.envs.web.gen.answers", "matches", "rollgym.verifiers.web"),
    ("rollgym.benchmarks.bundle", "pack_bundle", "rollgym.bundles.format"),
    ("rollgym.benchmarks.bundle", "open_bundle", "rollgym.bundles.format"),
    ("rollgym.benchmarks.archive", "BundleLimits", "rollgym.bundles.archive"),
    ("rollgym.benchmarks.verify", "verify_bundle", "rollgym.leaderboard.verify"),
    ("rollgym.benchmarks.verify", "hidden_seed", "rollgym.leaderboard.verify"),
])
def test_the_moved_names_warn_and_serve_the_new_object(old, name, new):
    """One table of every name that moved (graders to ``rollgym.verifiers``, bundle code to ``rollgym.bundles`` and
    ``rollgym.leaderboard``): the old path warns with the new path and the version, and gives the same object."""
    import importlib

    with pytest.warns(DeprecationWarning, match=re.escape(f"{old}.{name} moved to {new}.{name}") + ".*0.3.0"):
        moved = getattr(importlib.import_module(old), name)
    assert moved is getattr(importlib.import_module(new), name)
