"""ToolWorld-v0 keeps its tasks and its scores: 200 v0 episodes (reference solutions, some with unrelated damage,
a wrong extra number in the answer, or mail read on the side) give the task ids and verdicts that the grader before
the shared state-diff grader gave (rollgym at commit ee8d808, pinned in ``data/v0_scores.json``).

Regenerate the pin only from a checkout that still has the old grader:
``PYTHONPATH=<old checkout> python tests/envs/tools/test_v0_scores.py > tests/envs/tools/data/v0_scores.json``.
"""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

PIN = Path(__file__).with_name("data") / "v0_scores.json"
N = 200


def v0_episodes(n: int = N) -> list[list[Any]]:
    """``[task_id, mode, solved]`` for the first ``n`` v0 test tasks, with whichever rollgym is imported."""
    sys.path.insert(0, str(Path(__file__).parent))
    from helpers import DAMAGES, damage, fresh  # type: ignore[import-not-found]

    from rollgym.envs.tools.api import call_tool
    from rollgym.envs.tools.env import evaluate_session
    from rollgym.envs.tools.policies import run_reference
    from rollgym.envs.tools.tasks import ToolTaskSource

    new = "version" in inspect.signature(evaluate_session).parameters
    source = ToolTaskSource(version=0, env_id="ToolWorld-v0") if new else ToolTaskSource()
    out = []
    for index in range(n):
        task = source.task(index, "test")
        rng = np.random.default_rng(index)
        session = fresh(task)
        answer = run_reference(task.meta["template"], task.meta["params"], session)
        mode = int(rng.integers(4))
        if mode == 1:
            damage(session, task, DAMAGES[int(rng.integers(len(DAMAGES)))])
        elif mode == 2:
            answer = (answer or "") + " 7"
        elif mode == 3:
            found = call_tool(session, "email_search", {"page_size": 5})
            if found.get("results"):
                call_tool(session, "email_read", {"email_id": found["results"][0]["email_id"]})
        score = evaluate_session(task, session, answer, version=0) if new else evaluate_session(task, session, answer)
        out.append([task.id, mode, bool(score.correct if new else score.success)])
    return out


def test_v0_tasks_and_scores_are_unchanged():
    pinned = json.loads(PIN.read_text())
    now = v0_episodes(len(pinned))
    assert [e[0] for e in now] == [e[0] for e in pinned]  # the same tasks
    assert now == pinned  # and the same verdicts
    assert 0 < sum(e[2] for e in pinned) < len(pinned)  # both outcomes occur


if __name__ == "__main__":
    print(json.dumps(v0_episodes()))
