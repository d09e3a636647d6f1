"""Reliability metrics for the tool world: task and scenario goal completion, pass^k, per-template breakdowns.

* **TGC** (task goal completion): the share of episodes that succeeded.
* **SGC** (scenario goal completion): a scenario (one template in one base world) counts only when every
  task of it succeeded in that run, as in AppWorld.
* **pass^k** (τ-bench): for a task run ``n`` times with ``c`` successes, ``C(c, k) / C(n, k)`` is the chance
  that ``k`` runs drawn without replacement all succeed; averaged over tasks.

The functions here are pure: they read :class:`EpisodeResult` rows. Playing episodes goes through the
episode engine: :func:`rollgym.benchmarks.reliability.play_episodes` plays them and
:func:`rollgym.benchmarks.reliability.summarize` scores the groups it returns (``rollgym.envs`` may not
import the engine, so ``play_episodes`` left this module).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from math import comb
from typing import Any


@dataclass(frozen=True)
class EpisodeResult:
    """What the metrics read of one episode: its task, the task's template and scenario, success, run.

    :func:`rollgym.benchmarks.reliability.outcomes` builds one from each engine
    :class:`~rollgym.rollout.types.Trajectory` (the episode itself).
    """

    task_id: str
    template: str
    scenario: str
    success: bool
    run: int = 0


def task_goal_completion(results: Sequence[EpisodeResult]) -> float:
    """The share of successful episodes (0.0 for none)."""
    return sum(r.success for r in results) / len(results) if results else 0.0


def scenario_goal_completion(results: Sequence[EpisodeResult]) -> float:
    """The share of (scenario, run) pairs in which every task succeeded."""
    groups: dict[tuple[str, int], list[bool]] = defaultdict(list)
    for r in results:
        groups[(r.scenario, r.run)].append(r.success)
    return sum(all(v) for v in groups.values()) / len(groups) if groups else 0.0


def pass_hat_k(results: Sequence[EpisodeResult], k: int) -> float:
    """τ-bench's pass^k over tasks with at least ``k`` runs."""
    if k < 1:
        raise ValueError("k must be at least 1")
    runs: dict[str, list[bool]] = defaultdict(list)
    for r in results:
        runs[r.task_id].append(r.success)
    scores = [comb(sum(v), k) / comb(len(v), k) for v in runs.values() if len(v) >= k]
    return sum(scores) / len(scores) if scores else 0.0


def per_template(results: Iterable[EpisodeResult]) -> dict[str, dict[str, float]]:
    """TGC and episode count of each template."""
    groups: dict[str, list[EpisodeResult]] = defaultdict(list)
    for r in results:
        groups[r.template].append(r)
    return {name: {"tgc": task_goal_completion(rs), "episodes": len(rs)} for name, rs in sorted(groups.items())}


def summarize(results: Sequence[EpisodeResult], ks: Iterable[int] = (1, 2, 4)) -> dict[str, Any]:
    """All metrics in one JSON-ready dict."""
    return {"episodes": len(results), "tgc": task_goal_completion(results), "sgc": scenario_goal_completion(results),
            "pass^k": {str(k): pass_hat_k(results, k) for k in ks}, "per_template": per_template(results)}

