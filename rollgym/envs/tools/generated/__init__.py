"""ToolGen: tool use over 256 (v0) or 1,024 (v1) generated SQLite apps, with ``test_unseen`` apps from held-out domains.

An app generator turns a seeded schema (entities, typed fields with constraints, relations, a record
workflow with preconditions) into a SQLite app with typed tools and task templates, graded by the shared
state-diff grader over every app of the episode's world. Importing this package registers ``ToolGen-v0``,
``ToolGen-v1`` (the 1,024-app pool) and one id per scenario group; the apps, tools and templates are built only
when an env is made, so ``import rollgym`` stays cheap. :func:`stats` counts apps, tools and templates.

Modules: ``domains`` (the vocabulary), ``schema`` (drawing a schema), ``store`` (the SQLite database),
``tools`` (typed tools), ``templates`` (their base), ``lookups``, ``edits``, ``actions``, ``chains``,
``kinds`` and ``crossapp`` (task templates), ``catalog`` (the app pool and its
splits), ``source`` (tasks), ``grading``, ``env`` and ``policies``.
"""

from __future__ import annotations

from typing import Any

from rollgym.core.registration import register_env

_HERE = "rollgym.envs.tools.generated"
_COMPONENTS = [f"{_HERE}.{m}" for m in ("domains", "schema", "store", "tools", "templates", "lookups", "edits",
                                        "actions", "chains", "kinds", "crossapp", "catalog", "source", "grading",
                                        "env")] + [
    "rollgym.envs.tools.api", "rollgym.envs.tools.checker", "rollgym.envs.tools.apps.supervisor",
    "rollgym.envs.tools.tasks.base", "rollgym.envs.tools.world", "rollgym.core.toolschema",
    "rollgym.core.seeding", "rollgym.verifiers.statediff", "rollgym.verifiers.rubric", "rollgym.verifiers.tools"]
_POLICIES: dict[str, Any] = {"oracle": f"{_HERE}.policies:oracle_policy",
                             "random_policy": "rollgym.envs.tools.policies:random_policy",
                             "private_state": "rollgym.core.private:task_answer", "grader": "pure"}
_GROUPS = {"lookup": "Lookup", "edit": "Edit", "action": "Action", "chain": "Chain", "cross_app": "CrossApp"}
SCENARIO_IDS = {group: f"ToolGen-{name}-v0" for group, name in _GROUPS.items()}
"""The id of each scenario group."""

register_env("ToolGen-v0", f"{_HERE}.env:ToolGenEnv", family="tools", components=_COMPONENTS,
             description="Tasks in 256 generated SQLite apps (CRUD, aggregates, actions with preconditions, "
                         "chains over 2-4 apps); split test_unseen holds apps of held-out domains.", **_POLICIES)
register_env("ToolGen-v1", f"{_HERE}.env:ToolGen1kEnv", family="tools", components=_COMPONENTS,
             description="Tasks in 1,024 generated SQLite apps (32 variants of 32 domains; ToolGen-v0's 256 "
                         "among them); split test_unseen holds the 192 apps of six held-out domains.", **_POLICIES)
_WHAT = {"lookup": "questions answered with a value, a name or a list", "edit": "updates, creations and deletions",
         "action": "domain actions with preconditions", "chain": "multi-step chains inside one app",
         "cross_app": "chains that follow one person through 2-4 apps"}
for _group, _id in SCENARIO_IDS.items():
    register_env(_id, f"{_HERE}.env:ToolGenEnv", family="tools", components=_COMPONENTS,
                 kwargs={"groups": [_group]}, description=f"ToolGen restricted to {_WHAT[_group]}.", **_POLICIES)


def stats() -> dict[str, Any]:
    """Counts of the generated apps, tools and templates, and of the hand-written ToolWorld (see
    :func:`rollgym.envs.tools.generated.catalog.stats`), with ``ToolGen-v1``'s distinct tasks per split from the
    stored census (``v1_tasks_<split>``, see :mod:`rollgym.envs.tools.generated.census`)."""
    from rollgym.envs.tools.generated.catalog import stats as count
    from rollgym.envs.tools.generated.census import totals

    return {**count(), **{f"v1_tasks_{split}": n for split, n in totals().items()}}


__all__ = ["SCENARIO_IDS", "stats"]
