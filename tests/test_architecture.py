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
