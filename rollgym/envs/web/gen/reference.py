"""The reference policy of WebGen-v0: each template's scripted solution, worked through the site's pages.

Like :func:`rollgym.envs.web.reference.reference_policy`, it is an
``f(observation, info) -> action`` function that reads only the task's public
parameters (``info["task_meta"]``), keeps one solution generator per
``info["episode_id"]`` and feeds it the parsed page after each action. It knows the
site's theme (labels, navigation) as a regular visitor learns it, and reads every
answer from the pages, never from the task's hidden answer. It needs the page text,
so it plays the ``text`` and ``both`` observation modes.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from rollgym.envs.web.gen.driver import Driver
from rollgym.envs.web.gen.tasks import TEMPLATES, context
from rollgym.envs.web.observation import PageView
from rollgym.envs.web.reference import scripted_policy
from rollgym.envs.web.tasks.base import Solution


@cache
def driver(site_key: str) -> Driver:
    """The UI driver of one generated site."""
    return Driver(context(site_key).site)


def _start(meta: dict[str, Any], view: PageView) -> Solution | None:
    template = TEMPLATES.get(meta.get("template", ""))
    if template is None:
        return None
    return template.mechanism.solve(driver(meta["site"]), template.spec.options, meta["params"], view)


_reference = scripted_policy(_start)


def reference_policy(observation: Any, info: dict[str, Any]) -> str:
    """The next action of the template's reference solution for this episode."""
    return _reference(observation, info)
