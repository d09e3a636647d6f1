"""Reference policies for ToolGen: the oracle (a template's reference solution, played through text) and a
direct runner; the random policy is ToolWorld's, which reads the tool schemas from ``info["tools"]``.

The oracle reads only ``info["task_meta"]`` (template name and public parameters) and the tool results in the
observations, as an agent would; it never touches the base databases or the expectation.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from rollgym.core.task import Task
from rollgym.envs.tools.api import Session
from rollgym.envs.tools.generated import catalog
from rollgym.envs.tools.generated.env import evaluate_session, new_session, world_tools
from rollgym.envs.tools.generated.tools import call
from rollgym.envs.tools.policies import drive_reference, reference_oracle
from rollgym.verifiers.tools import is_degenerate

_oracle = reference_oracle(lambda meta: catalog.template(meta["template"]).solve(dict(meta["params"])))


def oracle_policy(observation: str, info: dict[str, Any]) -> str:
    """The next action of the reference solution for this episode (one tool call per action)."""
    return _oracle(observation, info)


def run_reference(task: Any, session: Session) -> str | None:
    """Run a task's reference solution directly against a session (JSON round trip, no text parsing)."""
    tools = world_tools(task)
    return drive_reference(catalog.template(task.meta["template"]).solve(dict(task.meta["params"])),
                           lambda name, arguments: call(session, tools, name, arguments))


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
