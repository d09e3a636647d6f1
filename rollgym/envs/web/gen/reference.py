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

import json
from collections import OrderedDict
from functools import cache
from typing import Any

from rollgym.envs.web.gen.driver import Driver
from rollgym.envs.web.gen.tasks import TEMPLATES, context
from rollgym.envs.web.observation import PageView
from rollgym.envs.web.tasks.base import Solution

_PLANS: OrderedDict[str, Solution] = OrderedDict()
_LAST: dict[str, tuple[str, int]] = {}
_MAX_PLANS = 4096
_RETRIES = 2


@cache
def driver(site_key: str) -> Driver:
    """The UI driver of one generated site."""
    return Driver(context(site_key).site)


def observation_text(observation: Any) -> str:
    """The text of an observation (the ``"text"`` of a screenshot-mode observation)."""
    if isinstance(observation, dict):
        return str(observation.get("text", ""))
    return str(observation)


def reference_policy(observation: Any, info: dict[str, Any]) -> str:
    """The next action of the template's reference solution for this episode."""
    meta = info.get("task_meta") or {}
    template = TEMPLATES.get(meta.get("template", ""))
    key = str(info.get("episode_id", ""))
    if template is None or not key:
        return 'answer("no reference solution for this task")'
    view = PageView.parse(observation_text(observation))
    try:
        if info.get("episode_step", 0) == 0 or key not in _PLANS:
            plan = template.mechanism.solve(driver(meta["site"]), template.spec.options, meta["params"], view)
            _PLANS[key] = plan
            while len(_PLANS) > _MAX_PLANS:
                _LAST.pop(_PLANS.popitem(last=False)[0], None)
            action = next(plan)
        elif view.error and "failed:" in view.error and _LAST.get(key, ("", _RETRIES))[1] < _RETRIES:
            # the browser did not complete the action (a timeout on a starved machine): repeat it
            action, tries = _LAST[key]
            _LAST[key] = (action, tries + 1)
            return action
        else:
            action = _PLANS[key].send(view)
        _LAST[key] = (action, 0)
        return action
    except (StopIteration, LookupError, IndexError) as exc:
        _PLANS.pop(key, None)
        return "answer(" + json.dumps(f"reference solution stopped: {type(exc).__name__}: {str(exc)[:120]}") + ")"
