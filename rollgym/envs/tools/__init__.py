"""The tool world: six apps over one seeded world of people, tools from typed functions, graded by DB diff.

Importing this package registers ``ToolWorld-v1`` and one id per scenario family (and their ``-v0``
predecessors, kept with their old tasks and scoring); the env, the apps and the templates are imported only when
an env is made, so ``import rollgym`` stays cheap.
"""

from typing import Any

from rollgym.core.registration import register_env
from rollgym.envs.tools import generated as _generated  # noqa: F401  (registers ToolGen-v0 and its scenario ids)

_COMPONENTS = ["rollgym.envs.tools.env", "rollgym.envs.tools.api", "rollgym.envs.tools.world",
               "rollgym.envs.tools.checker", "rollgym.envs.tools.tasks.base", "rollgym.envs.tools.tasks.source",
               "rollgym.envs.tools.tasks.contacts_email", "rollgym.envs.tools.tasks.calendar_payments",
               "rollgym.envs.tools.tasks.notes_shopping", "rollgym.envs.tools.tasks.cross_app",
               "rollgym.envs.tools.apps.contacts", "rollgym.envs.tools.apps.email",
               "rollgym.envs.tools.apps.calendar", "rollgym.envs.tools.apps.payments",
               "rollgym.envs.tools.apps.notes", "rollgym.envs.tools.apps.shopping",
               "rollgym.envs.tools.apps.supervisor", "rollgym.core.toolschema",
               "rollgym.verifiers.statediff", "rollgym.verifiers.rubric", "rollgym.verifiers.tools"]
_POLICIES: dict[str, Any] = {"oracle": "rollgym.envs.tools.policies:oracle_policy",
             "random_policy": "rollgym.envs.tools.policies:random_policy",
             "private_state": "rollgym.core.private:task_answer", "grader": "pure"}
_SCENARIOS = {"contacts": "Contacts", "email": "Email", "calendar": "Calendar", "payments": "Payments",
              "notes": "Notes", "shopping": "Shopping", "cross_app": "CrossApp"}
SCENARIO_IDS = {family: f"ToolWorld-{name}-v1" for family, name in _SCENARIOS.items()}
"""The current id of each scenario family."""

_OLD = " Superseded by -v1: constant answers such as '0' solve some tasks."
for _version, _note in ((1, ""), (0, _OLD)):
    register_env(f"ToolWorld-v{_version}", "rollgym.envs.tools.env:ToolWorldEnv", family="tools",
                 components=_COMPONENTS, kwargs={"version": _version},
                 description=f"Errands across six simulated apps (AppWorld-style), graded by database diff.{_note}",
                 superseded_by="ToolWorld-v1" if _version == 0 else None, **_POLICIES)
    for _family, _name in _SCENARIOS.items():
        register_env(f"ToolWorld-{_name}-v{_version}", "rollgym.envs.tools.env:ToolWorldEnv", family="tools",
                     components=_COMPONENTS, kwargs={"scenario": _family, "version": _version},
                     description=f"ToolWorld restricted to the {_family.replace('_', '-')} task templates.{_note}",
                     superseded_by=f"ToolWorld-{_name}-v1" if _version == 0 else None, **_POLICIES)

__all__ = ["SCENARIO_IDS"]
