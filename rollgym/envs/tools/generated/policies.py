"""Reference policies for ToolGen: the oracle (a template's reference solution, played through text) and a
direct runner; the random policy is ToolWorld's, which reads the tool schemas from ``info["tools"]``.

The oracle reads only ``info["task_meta"]`` (template name and public parameters) and the tool results in the
observations, as an agent would; it never touches the base databases or the expectation.
"""

from __future__ import annotations

import json
import re
from collections import Counter, OrderedDict
from collections.abc import Generator, Sequence
from typing import Any

import numpy as np

from rollgym.core.task import Task
from rollgym.core.toolcalls import ToolCall
from rollgym.envs.tools.api import Session
from rollgym.envs.tools.checker import is_degenerate
from rollgym.envs.tools.generated import catalog
from rollgym.envs.tools.generated.env import evaluate_session, new_session, world_tools
from rollgym.envs.tools.generated.tools import call

_RESPONSE = re.compile(r'<tool_response name="[^"]*">\n(.*?)\n</tool_response>', re.DOTALL)
_RUNNING: OrderedDict[str, Generator[Any, Any, Any]] = OrderedDict()
_MAX_RUNNING = 4096


def _hermes(name: str, arguments: dict[str, Any]) -> str:
    return ToolCall(name, arguments).to_hermes()


def oracle_policy(observation: str, info: dict[str, Any]) -> str:
    """The next action of the reference solution for this episode (one tool call per action)."""
    meta = info.get("task_meta") or {}
    key = str(info.get("episode_id") or info.get("task_id"))
    if key not in _RUNNING or info.get("turn", 0) == 0:
        _RUNNING[key] = catalog.template(meta["template"]).solve(dict(meta["params"]))
        while len(_RUNNING) > _MAX_RUNNING:
            _RUNNING.popitem(last=False)
        sent: Any = None
    else:
        found = _RESPONSE.findall(observation)
        sent = json.loads(found[-1]) if found else {}
    try:
        name, arguments = _RUNNING[key].send(sent)
    except StopIteration as stop:
        _RUNNING.pop(key, None)
        return _hermes("complete_task", {} if stop.value is None else {"answer": str(stop.value)})
    return _hermes(name, arguments)


def run_reference(task: Any, session: Session) -> str | None:
    """Run a task's reference solution directly against a session (JSON round trip, no text parsing)."""
    tools = world_tools(task)
    solution = catalog.template(task.meta["template"]).solve(dict(task.meta["params"]))
    sent: Any = None
    try:
        while True:
            name, arguments = solution.send(sent)
            sent = json.loads(json.dumps(call(session, tools, name, arguments)))
    except StopIteration as stop:
        return None if stop.value is None else str(stop.value)


def solve_every_template(app_ids: Sequence[str], per_app: int | None = None) -> tuple[Counter[str], list[str]]:
    """Draw an instance of every template of each app (or ``per_app`` of them), run its reference solution and
    grade it: returns the solved count per kind and the failures (a template with no instance in 60 draws, or
    one its reference does not solve), in words."""
    solved: Counter[str] = Counter()
    failures: list[str] = []
    for app_id in app_ids:
        app = catalog.app(app_id)
        names = list(catalog.templates(app_id))
        if per_app is not None:
            names = names[:: max(1, len(names) // per_app)]
        for name in names:
            template = catalog.template(name)
            rng = np.random.default_rng(0)
            params = None
            for _ in range(60):
                params = template.sample({app_id: app}, rng)
                if params is not None:
                    params = json.loads(json.dumps(params))
                    if not is_degenerate(template.expect({app_id: app}, params)):
                        break
                    params = None
            if params is None:
                failures.append(f"{name} found no instance in 60 draws")
                continue
            task = Task(name, "ToolGen-v0", "", None, {"template": name, "params": params, "world": [app_id]})
            session = new_session(task)
            score = evaluate_session(task, session, run_reference(task, session))
            if score.correct:
                solved[template.kind] += 1
            else:
                failures.append(f"{name} {params}: {score.details.get('reasons')}")
    return solved, failures
