"""Reference policies for the web envs: the scripted solution of each template, and a random clicker.

:func:`reference_policy` is the ``oracle`` of every web env id. It is an
``f(observation, info) -> action`` function like every rollgym oracle: it
reads the task's public parameters from ``info["task_meta"]`` and keeps the
template's solution generator per ``info["episode_id"]``, feeding it the
parsed page after each action. It never reads the hidden answer; information
tasks are answered from what the pages show.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np

from rollgym.envs.web.observation import PageView
from rollgym.envs.web.tasks import TEMPLATES
from rollgym.envs.web.tasks.base import Solution

_PLANS: OrderedDict[str, Solution] = OrderedDict()
_LAST: dict[str, tuple[str, int]] = {}
_MAX_PLANS = 4096
_RETRIES = 2


def reference_policy(observation: str, info: dict[str, Any]) -> str:
    """The next action of the template's reference solution for this episode."""
    meta = info.get("task_meta") or {}
    template = TEMPLATES.get(meta.get("template", ""))
    key = str(info.get("episode_id", ""))
    if template is None or not key:
        return 'answer("no reference solution for this task")'
    view = PageView.parse(observation)
    try:
        if info.get("episode_step", 0) == 0 or key not in _PLANS:
            plan = template.solve(meta["params"], view)
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
    except (StopIteration, LookupError) as exc:
        _PLANS.pop(key, None)
        return f'answer("reference solution stopped: {type(exc).__name__}")'


def random_action(observation: Any, info: dict[str, Any], rng: np.random.Generator) -> str:
    """A random well-formed action on an element of the current page (never ``answer``).

    A screenshot-mode observation (a dict) is read by its ``"text"``.
    """
    text = str(observation.get("text", "")) if isinstance(observation, dict) else str(observation)
    elements = PageView.parse(text).elements
    if not elements or rng.random() < 0.1:
        return "go_back()" if rng.random() < 0.5 else f'scroll("{"down" if rng.random() < 0.5 else "up"}")'
    el = elements[int(rng.integers(len(elements)))]
    if el.role == "textbox":
        return f'fill({el.id}, "{["kettle", "2", "hello", "2026-03-10"][int(rng.integers(4))]}")'
    if el.role in {"checkbox", "radio"}:
        return f"check({el.id})"
    if el.role == "select":
        return f"click({el.id})"
    return f"click({el.id})"
