"""ReSum trees: the summary points of summarize-and-continue episodes as branch points.

A :class:`~rollgym.agents.resum.SummarizingAgent` summarizes its conversation and starts over
when its context outgrows a window. :func:`agrow_resum_tree` plays ``roots`` such episodes and
then forks each one just before each of its summaries (the snapshot before that reply, so the
branch redraws the summary and everything after it). With ``contrast``, it adds ReSum's
contrastive branches: at a summary point, one branch that does *not* summarize there (the
summary masked; it keeps its whole context for that reply); on a root that never summarized,
one branch that summarizes at its middle reply (a summary injected). Every branch records
``metrics["resum_branch"]`` (``"redraw"``, ``"masked"`` or ``"injected"``); every trajectory of a
summarizing agent records ``metrics["summaries"]``.

Token records stay exact: a summarizing episode is one row per turn, the branch's shared turns
are marked (``metrics["shared_turns"]``) so that :mod:`rollgym.train.grpo` trains them once, in the
parent (see :mod:`rollgym.rollout.branching`).
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np

from rollgym.rollout.branching import Branch, ChoosesSummaries, summary_turns
from rollgym.rollout.episode import EpisodeLimits
from rollgym.rollout.types import Trajectory

__all__ = ["agrow_resum_tree", "grow_resum_tree", "summary_points"]


def summary_points(agent: Any) -> list[int]:
    """The episode turns (replies) that a summary preceded, from the agent's ``summary_turns`` records."""
    records = sorted(summary_turns(agent))
    return [index - before for before, index in enumerate(records)]


async def _play(branch: Branch) -> tuple[Trajectory, list[Branch], Any]:
    snapshots: list[Branch] = []
    traj = await branch.aplay(snapshots=snapshots)
    return traj, snapshots, branch.agent


def _label(traj: Trajectory, agent: Any, kind: str | None) -> Trajectory:
    traj.metrics["summaries"] = len(summary_turns(agent))
    if kind is not None:
        traj.metrics["resum_branch"] = kind
    return traj


async def agrow_resum_tree(env: Any, agent: Any, *, seed: int | None, roots: int, redraws: int = 1,
                           contrast: bool = True, agent_seed: int = 0, group_id: str = "", env_id: str = "",
                           limits: EpisodeLimits | None = None, options: dict[str, Any] | None = None,
                           max_trajectories: int = 64) -> list[Trajectory]:
    """A ReSum tree of one task (see the module docstring): roots first, then their branches in creation order.

    ``agent`` should be a :class:`~rollgym.agents.resum.SummarizingAgent`; with any other agent there are no
    summary points and, with ``contrast``, the injected branches need an agent with ``summarize_next``.
    """
    rng = np.random.default_rng(agent_seed)
    base = Branch.start(env, agent, seed=seed, agent_seed=agent_seed, env_id=env_id, traj_id=f"{group_id}-r",
                        group_id=group_id, limits=limits, options=options)
    if base.done:
        return [base.trajectory()]
    starts = [base.fork(agent_seed=(agent_seed * 1_000_003 + i) % 2**63, traj_id=f"{group_id}-r{i}")
              for i in range(roots)]
    for b in starts:  # roots are independent episodes, not branches
        b.parent_id, b.fork_point = None, None
    played = list(await asyncio.gather(*(_play(b) for b in starts)))
    out = [_label(t, a, None) for t, _, a in played]
    new: list[tuple[Branch, str]] = []

    def branch(snapshot: Branch, parent: Trajectory, kind: str, summarize: bool | None) -> None:
        if len(out) + len(new) >= max_trajectories:
            return
        child = snapshot.fork(agent_seed=int(rng.integers(2**62)), traj_id=f"{group_id}-b{len(new)}")
        child.parent_id = parent.traj_id
        if summarize is not None and isinstance(child.agent, ChoosesSummaries):
            child.agent.summarize_next = summarize
        new.append((child, kind))

    for traj, snapshots, played_agent in played:
        points = [k for k in summary_points(played_agent) if k < len(snapshots)]
        for k in points:
            for _ in range(redraws):
                branch(snapshots[k], traj, "redraw", None)
            if contrast:
                branch(snapshots[k], traj, "masked", False)
        if contrast and not points and len(snapshots) > 1 and isinstance(played_agent, ChoosesSummaries):
            branch(snapshots[len(snapshots) // 2], traj, "injected", True)
    results = await asyncio.gather(*(_play(b) for b, _ in new))
    out += [_label(t, a, kind) for (t, _, a), (_, kind) in zip(results, new)]
    for i, t in enumerate(out):
        t.sample_idx = i
    return out


def grow_resum_tree(env: Any, agent: Any, **kwargs: Any) -> list[Trajectory]:
    """Synchronous :func:`agrow_resum_tree` (inside an event loop, await that one)."""
    return asyncio.run(agrow_resum_tree(env, agent, **kwargs))
