"""Reference policies for the web envs: the scripted solution of each template, and a random clicker.

:func:`reference_policy` is the ``oracle`` of every web env id. It is an
``f(observation, info) -> action`` function like every rollgym oracle: it
reads the task's public parameters from ``info["task_meta"]`` and keeps the
template's solution generator per ``info["episode_id"]``, feeding it the
parsed page after each action. It never reads the hidden answer; information
tasks are answered from what the pages show.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from rollgym.envs.web.observation import PageView
from rollgym.envs.web.tasks import TEMPLATES
from rollgym.envs.web.tasks.base import Solution

_MAX_PLANS = 4096
_RETRIES = 2


def observation_text(observation: Any) -> str:
    """The text of an observation (the ``"text"`` of a screenshot-mode observation)."""
    if isinstance(observation, dict):
        return str(observation.get("text", ""))
    return str(observation)


def scripted_policy(
    start: Callable[[dict[str, Any], PageView], Solution | None],
) -> Callable[[Any, dict[str, Any]], str]:
    """An ``f(observation, info) -> action`` oracle that plays ``start(task_meta, first_page)``'s solution.

    One solution generator per ``info["episode_id"]`` (restarted at step 0; the oldest dropped beyond
    4,096 live episodes), fed the parsed page after each action. An action the browser failed to
    complete (a timeout on a starved machine) is repeated up to twice. ``start`` returns ``None`` for
    a task it has no solution for; a solution that stops early answers with the reason.
    """
    plans: OrderedDict[str, Solution] = OrderedDict()
    last: dict[str, tuple[str, int]] = {}

    def policy(observation: Any, info: dict[str, Any]) -> str:
        meta = info.get("task_meta") or {}
        key = str(info.get("episode_id", ""))
        view = PageView.parse(observation_text(observation))
        try:
            if info.get("episode_step", 0) == 0 or key not in plans:
                plan = start(meta, view) if key else None
                if plan is None:
                    return 'answer("no reference solution for this task")'
                plans[key] = plan
                while len(plans) > _MAX_PLANS:
                    last.pop(plans.popitem(last=False)[0], None)
                action = next(plan)
            elif view.error and "failed:" in view.error and last.get(key, ("", _RETRIES))[1] < _RETRIES:
                action, tries = last[key]
                last[key] = (action, tries + 1)
                return action
            else:
                action = plans[key].send(view)
            last[key] = (action, 0)
            return action
        except (StopIteration, LookupError, IndexError) as exc:
            plans.pop(key, None)
            return "answer(" + json.dumps(f"reference solution stopped: {type(exc).__name__}: {str(exc)[:120]}") + ")"

    return policy


def _start(meta: dict[str, Any], view: PageView) -> Solution | None:
    template = TEMPLATES.get(meta.get("template", ""))
    return None if template is None else template.solve(meta["params"], view)


_reference = scripted_policy(_start)


def reference_policy(observation: Any, info: dict[str, Any]) -> str:
    """The next action of the template's reference solution for this episode."""
    return _reference(observation, info)


def random_action(observation: Any, info: dict[str, Any], rng: np.random.Generator) -> str:
    """A random well-formed action on an element of the current page (never ``answer``).

    A screenshot-mode observation (a dict) is read by its ``"text"``.
    """
    elements = PageView.parse(observation_text(observation)).elements
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
