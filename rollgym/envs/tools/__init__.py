"""The tool world: six apps over one seeded world of people, tools from typed functions, graded by DB diff.

Importing this package registers ``ToolWorld-v0`` and one id per scenario family; the env, the apps and the
templates are imported only when an env is made, so ``import rollgym`` stays cheap.
"""

from typing import Any

from rollgym.core.registration import register_env

_COMPONENTS = ["rollgym.envs.tools.env", "rollgym.envs.tools.api", "rollgym.envs.tools.world",
               "rollgym.envs.tools.checker", "rollgym.envs.tools.tasks.base", "rollgym.envs.tools.tasks.source",
               "rollgym.envs.tools.tasks.contacts_email", "rollgym.envs.tools.tasks.calendar_payments",
               "rollgym.envs.tools.tasks.notes_shopping", "rollgym.envs.tools.tasks.cross_app",
               "rollgym.envs.tools.apps.contacts", "rollgym.envs.tools.apps.email",
               "rollgym.envs.tools.apps.calendar", "rollgym.envs.tools.apps.payments",
               "rollgym.envs.tools.apps.notes", "rollgym.envs.tools.apps.shopping",
               "rollgym.envs.tools.apps.supervisor", "rollgym.core.toolschema"]
_POLICIES: dict[str, Any] = {"oracle": "rollgym.envs.tools.policies:oracle_policy",
             "random_policy": "rollgym.envs.tools.policies:random_policy"}
SCENARIO_IDS = {"contacts": "ToolWorld-Contacts-v0", "email": "ToolWorld-Email-v0",
                "calendar": "ToolWorld-Calendar-v0", "payments": "ToolWorld-Payments-v0",
                "notes": "ToolWorld-Notes-v0", "shopping": "ToolWorld-Shopping-v0",
                "cross_app": "ToolWorld-CrossApp-v0"}

register_env("ToolWorld-v0", "rollgym.envs.tools.env:ToolWorldEnv", family="tools", components=_COMPONENTS,
             description="Errands across six simulated apps (AppWorld-style), graded by database diff.",
             **_POLICIES)
for _family, _env_id in SCENARIO_IDS.items():
    register_env(_env_id, "rollgym.envs.tools.env:ToolWorldEnv", family="tools", components=_COMPONENTS,
                 kwargs={"scenario": _family},
                 description=f"ToolWorld restricted to the {_family.replace('_', '-')} task templates.", **_POLICIES)

__all__ = ["SCENARIO_IDS"]
