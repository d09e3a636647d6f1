"""Imports inside rollgym run one way: no module reaches itself through its imports.

import-linter's ``acyclic`` contract checks the siblings of every package; this also covers what it does
not see, a package's ``__init__`` and one of its own modules importing each other. Imports under
``if TYPE_CHECKING:`` and inside functions count.
"""

from __future__ import annotations

from tests.conftest import require_module


def test_no_module_of_rollgym_reaches_itself_through_its_imports() -> None:
    require_module("grimp")
    import grimp

    graph = grimp.build_graph("rollgym", cache_dir=None, exclude_type_checking_imports=False)
    circles = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back:
                circles.append(" -> ".join((importer, *back)))
    assert not circles, "import circles:\n" + "\n".join(circles)


def _picture() -> str:
    from pathlib import Path

    text = (Path(__file__).parent.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## One picture", 1)[1]
    return section.split("```", 2)[1]


def test_every_path_in_the_architecture_picture_exists() -> None:
    import re
    from pathlib import Path

    root = Path(__file__).parent.parent
    paths = re.findall(r"rollgym/[\w/.<>-]+", _picture())
    assert len(paths) > 15
    missing = [p for p in paths if "<" not in p and not (root / p.rstrip("/")).exists()]
    assert not missing, f"the picture in docs/architecture.md names paths that do not exist: {missing}"


def test_both_tool_engines_are_the_one_app_model() -> None:
    """What the picture says of the tool apps: one App model, one episode class, one grader, one template."""
    from rollgym.envs.tools import checker
    from rollgym.envs.tools.api import App
    from rollgym.envs.tools.env import ToolWorldEnv
    from rollgym.envs.tools.episode import ToolEpisodeEnv
    from rollgym.envs.tools.generated import catalog
    from rollgym.envs.tools.generated.env import ToolGenEnv
    from rollgym.envs.tools.generated.grading import diff_apps
    from rollgym.envs.tools.generated.templates import GenTemplate
    from rollgym.envs.tools.tasks.base import TaskTemplate, Template
    from rollgym.envs.tools.world import APPS, base_world

    assert issubclass(ToolWorldEnv, ToolEpisodeEnv) and issubclass(ToolGenEnv, ToolEpisodeEnv)
    assert issubclass(TaskTemplate, Template) and issubclass(GenTemplate, Template)
    assert [app.name for app in APPS] == ["contacts", "email", "calendar", "payments", "notes", "shopping"]
    assert all(isinstance(app, App) and app.tools for app in APPS)
    world = base_world(0)
    assert sorted(world.dbs) == sorted(app.name for app in APPS)
    app_id = catalog.app_ids("train")[0]
    built = catalog.app(app_id)
    assert isinstance(built.model, App) and built.model.tools == catalog.tools(app_id)
    # one diff for both: an untouched world diffs to nothing, a deleted row shows up under <app>.<table>
    dbs = {app_id: built.copy()}
    assert diff_apps([app_id], dbs).empty
    table = built.schema.record.table
    dbs[app_id].execute(f'DELETE FROM "{table}" WHERE id = (SELECT MIN(id) FROM "{table}")')
    assert list(diff_apps([app_id], dbs).summary()) == [f"{app_id}.{table}"]
    assert checker.diff_world(world, world.copy()).empty


def _block(heading: str) -> str:
    from pathlib import Path

    text = (Path(__file__).parent.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert f"## {heading}" in text, f"docs/architecture.md has no '## {heading}' section"
    return text.split(f"## {heading}", 1)[1].split("```", 2)[1]


def packages_of_rollgym() -> list[str]:
    """Every package the picture must name: a folder with ``__init__.py`` at most two levels under rollgym/,
    and every ``rollgym/envs/<family>``."""
    from pathlib import Path

    root = Path(__file__).parent.parent
    found = {init.parent.relative_to(root).as_posix() for init in (root / "rollgym").rglob("__init__.py")
             if len(init.parent.relative_to(root / "rollgym").parts) in (1, 2) and "__pycache__" not in init.parts}
    found |= {p.relative_to(root).as_posix() for p in (root / "rollgym" / "envs").iterdir()
              if p.is_dir() and p.name != "__pycache__" and (p / "__init__.py").exists()}
    return sorted(found)


def test_every_package_is_named_in_the_architecture_picture() -> None:
    import re

    named = {p.rstrip("/") for p in re.findall(r"rollgym/[\w/.<>-]+", _picture())}
    packages = packages_of_rollgym()
    assert "rollgym/envs/tools" in packages and "rollgym/agents/backends" in packages
    missing = [p for p in packages if not any(n == p or n.startswith(p + "/") for n in named)]
    assert not missing, f"docs/architecture.md's picture does not name the packages {missing}: draw them there"


def _arrows_in_the_code() -> set[tuple[str, str]]:
    require_module("grimp")
    import grimp

    graph = grimp.build_graph("rollgym", cache_dir=None, exclude_type_checking_imports=True)
    arrows = set()
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            a, b = importer.split(".")[1:2], imported.split(".")[1:2]
            if a and b and a != b and b != ["core"]:
                arrows.add((a[0], b[0]))
    return arrows


def test_the_arrows_between_packages_are_the_ones_the_code_has() -> None:
    import re

    drawn = set()
    for line in _block("Imports between packages").splitlines():
        match = re.match(r"\s*([\w]+) -> ([\w, ]+?)(\s{2,}.*)?$", line)
        if match:
            drawn |= {(match.group(1), b.strip()) for b in match.group(2).split(",")}
    assert len(drawn) > 10
    real = _arrows_in_the_code()
    undrawn = sorted(f"{a} -> {b}" for a, b in real - drawn)
    stale = sorted(f"{a} -> {b}" for a, b in drawn - real)
    assert not undrawn and not stale, (
        f"docs/architecture.md's 'Imports between packages' is out of date: add {undrawn}, remove {stale}")
