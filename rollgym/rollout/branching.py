"""Branching rollouts: fork an episode at a turn or inside a reply, and grow trees where the policy is unsure.

Tree rollouts (ECHO, TreeRL, TreePO) share a prefix between rollouts: a branch starts
from its parent's exact tokens and the env's state at the fork point, and samples only
what follows. This module gives the pieces:

- :func:`clone_env`: an independent copy of an env in the middle of an episode. Python
  state is deep-copied; SQLite databases (ToolWorld, ToolGen) are copied with SQLite's
  backup API; what is shared on purpose stays shared (task sources, the search index,
  the process-wide sandbox pools and code runners, which keep no per-episode state).
  Envs whose state lives outside the process cannot be copied and raise
  :class:`NotForkable` with one sentence: a live browser page (the web envs), a live
  sandbox session with its processes and files (``Terminal-v0``), and anything else that
  holds a lock, a thread, a socket or an open file.
- :class:`Branch`: an episode played one turn at a time (the collector's episode
  bookkeeping, :mod:`rollgym.rollout.episode`) that :meth:`Branch.fork` copies at a turn
  boundary: env, agent (:meth:`ChatAgent.fork <rollgym.agents.chat.ChatAgent.fork>` copies
  the conversation and the token context) and the record so far. ``prefix_ids`` forks
  *inside* the next reply: the branch keeps those tokens and samples the rest.
- :func:`select_forks` and :func:`fork_candidates`: where to fork, ECHO-style: the
  positions whose next-token distribution had the highest entropy (the transformers
  backend reports it exactly, over the whole vocabulary; for backends that do not, the
  sampled token's surprisal ``-logprob`` stands in, a one-sample estimate of the entropy),
  at least ``min_gap`` tokens apart so that one run of uncertain tokens cannot take the
  whole budget (ECHO's "rollout collapse").
- :func:`agrow_tree`: roots, then forks at the selected points, until a token budget is spent.
- ReSum-style branches: ``Branch.fork(injected_ids=...)`` continues a reply after tokens the
  policy did not sample (a summarization phrase injected at a fork point); they are masked.
  Context-level ReSum (summarize when the context outgrows a window, branch at the summary
  points, masked and injected contrastive branches) is :mod:`rollgym.agents.resum` and
  :mod:`rollgym.rollout.resum`; suppressing a phrase inside a reply would need a logit bias the
  backends do not take.
- ECHO's adaptive branch width and confidence pruning: ``agrow_tree(..., echo=EchoOptions(...))``
  (:mod:`rollgym.rollout.echo`).

Branch trajectories record ``parent_id``, ``fork_turn``, ``fork_token`` and
``shared_tokens`` (see :class:`~rollgym.rollout.types.Trajectory`). **Loss-mask choice:**
the shared prefix is trained once, in the trajectory that sampled it: a branch's
``loss_mask`` (and ``logprobs``) are 0 over its first ``shared_tokens`` completion tokens,
so a GRPO loss over a tree's trajectories never counts a shared token twice; the tokens
stay in ``completion_ids`` so that each row is still the whole sequence the model saw.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import math
import sqlite3
import types
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from rollgym.core.errors import RollgymError
from rollgym.rollout.echo import EchoOptions, Pruner, branch_width, sequence_confidence
from rollgym.rollout.episode import EpisodeLimits, EpisodeRecorder, reset_kwargs
from rollgym.rollout.types import Trajectory


@runtime_checkable
class ForksItself(Protocol):
    """Has ``fork(seed)``: its own mid-episode copy (the fork half of
    :class:`~rollgym.core.agent.ForkingAgent`, which also asks for ``name`` and ``turns``)."""

    def fork(self, seed: int | None = None) -> Any: ...


@runtime_checkable
class KeepsTurns(Protocol):
    """Keeps its episode's turn records (``turns``: token ids, logprobs, entropies), which a branch shares."""

    turns: list[Any]


@runtime_checkable
class DrawsFromRng(Protocol):
    """Samples from its own NumPy generator ``rng``; a deep-copied branch of it is reseeded."""

    rng: Any


@runtime_checkable
class SummarizingTurns(Protocol):
    """Summarizes its context and starts over (ReSum, :class:`~rollgym.agents.resum.SummarizingAgent`):
    ``summary_turns`` are the indices of its summary turns."""

    summary_turns: list[int]


@runtime_checkable
class ChoosesSummaries(Protocol):
    """Can be told whether to summarize at its next reply (``summarize_next``: ``True``, ``False`` or ``None``)."""

    summarize_next: bool | None


def agent_turns(agent: Any) -> list[Any]:
    """The agent's own turn records (empty for an agent that keeps none)."""
    return list(agent.turns or []) if isinstance(agent, KeepsTurns) else []


def summary_turns(agent: Any) -> list[int]:
    """The indices of the agent's summary turns (empty for an agent that never summarizes)."""
    return list(agent.summary_turns) if isinstance(agent, SummarizingTurns) else []

__all__ = [
    "Branch", "ForkPoint", "NotForkable", "agrow_tree", "clone_env", "fork_candidates", "grow_tree",
    "select_forks", "token_scores",
]


class NotForkable(RollgymError, TypeError):
    """An env's state cannot be copied, so an episode on it cannot branch; the message says why."""


#: Objects every copy keeps sharing: process-wide services that keep no per-episode state, and read-only data.
SHARED_CLASSES: frozenset[str] = frozenset({
    "rollgym.sandbox.sandbox.Sandbox",  # a pool of fresh sandboxes; each run starts clean
    "rollgym.envs.code.runner.CodeRunner",  # the same, for code tests
    "rollgym.envs.search.index.SearchIndex",  # the BM25 index and its corpus (read-only)
    "rollgym.envs.search.corpus.Corpus",
})

#: Objects whose state lives outside the process, with the reason a copy is impossible.
LIVE_CLASSES: dict[str, str] = {
    "rollgym.sandbox.sandbox.Session": "it holds a live sandbox session whose processes and files cannot be copied",
}
LIVE_MODULES: dict[str, str] = {
    "rollgym.envs.web": "it drives a live browser page whose state cannot be copied",
}
_LIVE_TYPES: tuple[type, ...] = (type(__import__("threading").Lock()), type(__import__("threading").RLock()),
                                 __import__("threading").Thread, __import__("io").IOBase,
                                 __import__("socket").socket, __import__("subprocess").Popen)
_ATOMIC: tuple[type, ...] = (str, bytes, int, float, bool, complex, type(None), np.ndarray, np.generic, range)
_SHARED_KINDS: tuple[type, ...] = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType)


def _qualname(obj: Any) -> str:
    kind = type(obj)
    return f"{kind.__module__}.{kind.__qualname__}"


def _is_task_source(obj: Any) -> bool:
    """A task source (``task(index, split)`` and ``size(split)``): read-only, so shared."""
    return callable(getattr(type(obj), "task", None)) and callable(getattr(type(obj), "size", None))


def _copy_database(conn: sqlite3.Connection) -> sqlite3.Connection:
    copied = sqlite3.connect(":memory:", check_same_thread=False)
    copied.row_factory = conn.row_factory
    conn.backup(copied)
    return copied


def _children(obj: Any) -> list[tuple[str, Any]]:
    if isinstance(obj, dict):
        return [(f"[{k!r}]", v) for k, v in obj.items()]
    if isinstance(obj, (list, tuple, deque)):
        return [(f"[{i}]", v) for i, v in enumerate(obj)]
    if isinstance(obj, (set, frozenset)):
        return [("{}", v) for v in obj]
    if isinstance(obj, types.MethodType):
        return [(".__self__", obj.__self__)]
    out = [(f".{k}", v) for k, v in getattr(obj, "__dict__", {}).items()]
    for kind in type(obj).__mro__:
        for name in getattr(kind, "__slots__", ()):
            if isinstance(name, str) and name not in ("__dict__", "__weakref__") and hasattr(obj, name):
                out.append((f".{name}", getattr(obj, name)))
    return out


def _copy_plan(env: Any) -> dict[int, Any]:
    """The ``copy.deepcopy`` memo that shares what must be shared and copies databases; raises :class:`NotForkable`."""
    base = getattr(env, "unwrapped", env)
    name = getattr(getattr(base, "spec", None), "id", None) or type(base).__name__
    for kind in type(base).__mro__:
        for module, reason in LIVE_MODULES.items():
            if kind.__module__.startswith(module):
                raise NotForkable(f"{name} cannot be forked: {reason}.")
    memo: dict[int, Any] = {}
    seen: set[int] = set()
    stack: list[tuple[str, Any]] = [("env", env)]
    while stack:
        path, obj = stack.pop()
        if isinstance(obj, _ATOMIC) or id(obj) in seen:
            continue
        seen.add(id(obj))
        qualname = _qualname(obj)
        if qualname in LIVE_CLASSES:
            raise NotForkable(f"{name} cannot be forked: {LIVE_CLASSES[qualname]} ({path}).")
        if isinstance(obj, sqlite3.Connection):
            memo[id(obj)] = _copy_database(obj)
        elif isinstance(obj, _SHARED_KINDS) or qualname in SHARED_CLASSES or (obj is not base and _is_task_source(obj)):
            memo[id(obj)] = obj
        elif isinstance(obj, _LIVE_TYPES):
            raise NotForkable(f"{name} cannot be forked: it holds a live {type(obj).__name__} at {path}, whose state "
                              "cannot be copied.")
        else:
            stack.extend((path + key, value) for key, value in _children(obj))
    memo[id(memo)] = [obj for obj in memo.values()]  # keep-alive list, as deepcopy itself keeps
    return memo


def clone_env(env: Any) -> Any:
    """An independent copy of ``env`` (its wrappers included) in the state it is in now.

    Stepping either one leaves the other as it was. Raises :class:`NotForkable` for an env
    whose state cannot be copied (see the module docstring).

    Example:
        >>> import rollgym
        >>> env = rollgym.make("Countdown-v0")
        >>> _ = env.reset(seed=0)
        >>> twin = clone_env(env)
        >>> env.step("<answer>1</answer>")[1] == twin.step("<answer>1</answer>")[1]
        True
    """
    memo = _copy_plan(env)
    try:
        return copy.deepcopy(env, memo)
    except Exception as exc:  # an object the plan did not foresee
        base = getattr(env, "unwrapped", env)
        name = getattr(getattr(base, "spec", None), "id", None) or type(base).__name__
        raise NotForkable(f"{name} cannot be forked: copying its state failed ({type(exc).__name__}: {exc}).") from exc


def fork_agent(agent: Any, seed: int | None) -> Any:
    """A copy of ``agent`` mid-episode: its own ``fork(seed)`` when it has one, else a deep copy reseeded."""
    if isinstance(agent, ForksItself):
        return agent.fork(seed)
    child = copy.deepcopy(agent)
    if seed is not None and isinstance(child, DrawsFromRng):
        child.rng = np.random.default_rng(seed)
    return child


@dataclass(frozen=True)
class ForkPoint:
    """Where a branch leaves its parent: before turn ``turn``'s reply, keeping its first ``token`` tokens."""

    turn: int
    token: int = 0


class Branch:
    """An episode played a turn at a time, that can be forked at a turn boundary (see the module docstring).

    Build the root with :meth:`start`; :meth:`aplay` plays to the end; :meth:`fork` copies it.
    """

    def __init__(self, env: Any, agent: Any, episode: EpisodeRecorder, *, seed: int | None, env_id: str,
                 traj_id: str, group_id: str, parent_id: str | None = None, fork_point: ForkPoint | None = None
                 ) -> None:
        self.env, self.agent, self.episode = env, agent, episode
        self.seed, self.env_id = seed, env_id
        self.traj_id, self.group_id = traj_id, group_id
        self.parent_id, self.fork_point = parent_id, fork_point
        self._prefix: tuple[list[int], list[float], list[float]] | None = None
        self.injected = 0
        self.pruned = False
        self.shared_turns = 0  # the agent's turn records this branch shares with its parent

    @classmethod
    def start(cls, env: Any, agent: Any, *, seed: int | None, agent_seed: int | None = None, env_id: str = "",
              traj_id: str = "root", group_id: str = "", limits: EpisodeLimits | None = None,
              options: dict[str, Any] | None = None) -> Branch:
        """Reset ``env`` and ``agent`` and return the root branch, before its first reply."""
        ep = EpisodeRecorder(agent, limits or EpisodeLimits())
        try:
            ep.begin(env, *env.reset(seed=seed, **reset_kwargs(options)))
        except Exception as exc:
            ep.fail("reset", exc)
        if not ep.done:
            try:
                agent.reset(seed=agent_seed)
            except Exception as exc:
                ep.fail("agent_reset", exc)
        return cls(env, agent, ep, seed=seed, env_id=env_id, traj_id=traj_id, group_id=group_id)

    @property
    def done(self) -> bool:
        """Whether the episode has ended (or cannot continue)."""
        return self.episode.done

    @property
    def turn(self) -> int:
        """How many replies the episode has so far."""
        return len(self.episode.turns)

    def fork(self, *, agent_seed: int | None, traj_id: str, prefix_ids: Sequence[int] = (),
             prefix_logprobs: Sequence[float] = (), prefix_entropies: Sequence[float] = (),
             injected_ids: Sequence[int] = ()) -> Branch:
        """A copy of this episode, before its next reply, that continues on its own.

        ``agent_seed`` seeds the branch's sampling. ``prefix_ids`` are the first tokens of the
        branch's next reply (a fork inside a reply), with the logprobs and entropies they were
        sampled with; they need an agent that works in tokens (:class:`~rollgym.agents.chat.ChatAgent`).
        ``injected_ids`` follow them: tokens the policy did not sample (ReSum's injected summarization
        phrase), masked like the shared prefix and counted in ``metrics["injected_tokens"]``.
        Raises :class:`NotForkable` when the env cannot be copied.
        """
        if self.done:
            raise RollgymError("A finished episode cannot be forked; fork it before its last step.")
        env = clone_env(self.env)
        agent = fork_agent(self.agent, agent_seed)
        ep = EpisodeRecorder(agent, self.episode.limits)
        for key, value in vars(self.episode).items():
            if key not in ("agent", "can", "limits", "task", "started"):
                setattr(ep, key, copy.deepcopy(value))
        ep.task = self.episode.task
        child = Branch(env, agent, ep, seed=self.seed, env_id=self.env_id, traj_id=traj_id, group_id=self.group_id,
                       parent_id=self.traj_id, fork_point=ForkPoint(self.turn, len(prefix_ids)))
        child.shared_turns = len(agent_turns(agent)) or self.turn
        if prefix_ids or injected_ids:
            if not ep.can.awaits or "prefix_ids" not in inspect.signature(agent.aact).parameters:
                raise NotForkable(f"{type(agent).__name__} cannot continue a reply from a token prefix; fork at a "
                                  "turn instead, or use a ChatAgent with a tokenizer.")
            logprobs = list(prefix_logprobs) + [0.0] * len(injected_ids) if prefix_logprobs or not prefix_ids else []
            entropies = list(prefix_entropies) if not injected_ids else []
            child._prefix = (list(prefix_ids) + list(injected_ids), logprobs, entropies)
            child.injected = len(injected_ids)
        return child

    async def aact(self) -> None:
        """The agent's next reply (not yet sent to the env)."""
        ep, agent = self.episode, self.agent
        if ep.done or ep.check_caps():
            ep.done = True
            return
        try:
            if self._prefix is not None:
                ids, logprobs, entropies = self._prefix
                self._prefix = None
                if len(logprobs) == len(ids):
                    agent.set_prefix_scores(logprobs, entropies)
                action = await agent.aact(ep.observation, ep.info, prefix_ids=ids)
            elif ep.can.awaits:
                action = await agent.aact(ep.observation, ep.info)
            else:
                action = agent.act(ep.observation, ep.info)
            ep.acted(action)
        except Exception as exc:
            ep.fail("act", exc)

    def step(self) -> None:
        """Send the last reply to the env."""
        ep = self.episode
        if ep.done:
            return
        try:
            ep.stepped(self.env.step(ep.messages[-1]["content"]))
        except Exception as exc:
            ep.fail("step", exc)
            return
        ep.give_reward()

    async def aplay(self, *, snapshots: list[Branch] | None = None,
                    should_stop: Callable[[Branch], bool] | None = None) -> Trajectory:
        """Play to the end; with ``snapshots``, append a frozen copy of the episode before each reply.

        ``should_stop`` is asked after each reply (ECHO's online pruning, :class:`~rollgym.rollout.echo.Pruner`):
        ``True`` marks the branch pruned and, if the episode is still going, ends it there
        (``info["truncated_by"] == "pruned"``).
        """
        while not self.done:
            if snapshots is not None and not self.episode.check_caps():
                snapshots.append(self.fork(agent_seed=None, traj_id=f"{self.traj_id}@{self.turn}"))
            await self.aact()
            self.step()
            if should_stop is not None and self.episode.failure is None and should_stop(self):
                self.pruned = True
                if not self.done:
                    self.episode.done = True
                    self.episode.info = {**self.episode.info, "truncated_by": "pruned"}
        return self.trajectory()

    def own_start(self) -> int:
        """Index, among the agent's sampled tokens, of the first one this branch sampled itself."""
        point = self.fork_point
        if point is None:
            return 0
        turns = agent_turns(self.agent)
        return sum(len(getattr(t, "output_ids", ())) for t in turns[:self.shared_turns]) + point.token + self.injected

    def trajectory(self, sample_idx: int = 0) -> Trajectory:
        """The episode as a :class:`Trajectory`, the shared prefix masked (see the module docstring)."""
        traj = self.episode.trajectory(traj_id=self.traj_id, group_id=self.group_id, sample_idx=sample_idx,
                                       env_id=self.env_id, seed=self.seed, source="policy")
        if self.pruned:
            traj.metrics["pruned"] = True
        if self.parent_id is None or self.fork_point is None:
            return traj
        traj.parent_id, traj.fork_turn, traj.fork_token = self.parent_id, self.fork_point.turn, self.fork_point.token
        point = self.fork_point
        if traj.metrics.get("per_turn_rows"):  # the row is the last turn alone: only a prefix kept in it is shared
            shared = point.token if self.shared_turns == len(traj.turns) - 1 else 0
            # a trainer's per-turn rows skip the shared turns and mask the kept prefix (rollgym.train.grpo)
            traj.metrics["shared_turns"] = self.shared_turns
            traj.metrics["shared_prefix"] = point.token + self.injected
        else:  # the earlier turns' sampled and env tokens, then the kept part of the forked reply
            shared = sum(len(t.output_ids) + len(t.obs_ids) for t in traj.turns[:point.turn]) + point.token
        shared = min(shared, len(traj.completion_ids))
        traj.shared_tokens = shared
        masked = min(shared + self.injected, len(traj.completion_ids))
        traj.loss_mask = [0] * masked + traj.loss_mask[masked:]
        traj.logprobs = [0.0] * masked + traj.logprobs[masked:]
        if self.injected:
            traj.metrics["injected_tokens"] = self.injected
        return traj


def token_scores(turn: Any) -> list[float]:
    """The uncertainty at each sampled token of a turn: its entropy, or ``-logprob`` when no entropy was reported."""
    ids = list(getattr(turn, "output_ids", ()))
    entropies = list(getattr(turn, "output_entropies", ()))
    if len(entropies) == len(ids):
        return [float(e) for e in entropies]
    logprobs = list(getattr(turn, "output_logprobs", ()))
    if len(logprobs) == len(ids):
        return [-float(lp) for lp in logprobs]
    return [0.0] * len(ids)


def fork_candidates(turns: Sequence[Any], *, level: str = "token") -> list[tuple[ForkPoint, float]]:
    """Every place a branch could leave an episode, with its uncertainty.

    ``level="token"``: each sampled token ``j`` of each turn ``t`` (fork keeping ``j`` tokens and
    redrawing token ``j``), scored by that position's entropy. ``level="turn"``: each turn, scored by
    the mean entropy of its tokens (fork redrawing the whole reply).
    """
    if level not in ("token", "turn"):
        raise RollgymError(f"level must be 'token' or 'turn', got {level!r}.")
    out: list[tuple[ForkPoint, float]] = []
    for t, turn in enumerate(turns):
        scores = token_scores(turn)
        if level == "turn":
            if scores:
                out.append((ForkPoint(t, 0), sum(scores) / len(scores)))
        else:
            out += [(ForkPoint(t, j), s) for j, s in enumerate(scores)]
    return out


def select_forks(candidates: Sequence[tuple[ForkPoint, float]], k: int, *, min_gap: int = 1,
                 rule: str = "entropy", rng: np.random.Generator | None = None) -> list[ForkPoint]:
    """The ``k`` fork points to branch at: the highest-scoring ones (``rule="entropy"``) or random ones.

    Points in one turn are kept at least ``min_gap`` tokens apart; ties go to the earlier point.
    ``rule="random"`` draws uniformly with ``rng`` under the same spacing (the control arm).

    Example:
        >>> c = [(ForkPoint(0, j), s) for j, s in enumerate([0.1, 2.0, 1.9, 0.3, 1.5])]
        >>> select_forks(c, 2, min_gap=2)
        [ForkPoint(turn=0, token=1), ForkPoint(turn=0, token=4)]
    """
    if rule not in ("entropy", "random"):
        raise RollgymError(f"rule must be 'entropy' or 'random', got {rule!r}.")
    order = list(range(len(candidates)))
    if rule == "entropy":
        order.sort(key=lambda i: (-candidates[i][1] if math.isfinite(candidates[i][1]) else math.inf, i))
    else:
        (rng or np.random.default_rng()).shuffle(order)
    chosen: list[ForkPoint] = []
    for i in order:
        if len(chosen) >= k:
            break
        point = candidates[i][0]
        if all(p.turn != point.turn or abs(p.token - point.token) >= min_gap for p in chosen):
            chosen.append(point)
    return sorted(chosen, key=lambda p: (p.turn, p.token))


def sampled_tokens(traj: Trajectory) -> int:
    """Tokens the policy sampled for this trajectory alone (its shared prefix excluded)."""
    return int(sum(traj.loss_mask))


async def agrow_tree(env: Any, agent: Any, *, seed: int | None, roots: int, token_budget: int,
                     forks_per_round: int = 1, rule: str = "entropy", level: str = "token", min_gap: int = 1,
                     agent_seed: int = 0, group_id: str = "", env_id: str = "", limits: EpisodeLimits | None = None,
                     options: dict[str, Any] | None = None, max_trajectories: int = 64,
                     rng: np.random.Generator | None = None,
                     on_root: Callable[[Trajectory], None] | None = None,
                     echo: EchoOptions | None = None) -> list[Trajectory]:
    """Tree rollouts of one task: ``roots`` independent episodes, then forks until ``token_budget`` is spent.

    Each round forks every finished trajectory that has not been forked yet at its
    ``forks_per_round`` best points (:func:`select_forks` by ``rule`` over :func:`fork_candidates`
    at ``level``), plays the new branches concurrently (their generations batch), and stops once
    the policy has sampled ``token_budget`` tokens in all (the shared prefixes are not counted
    again) or ``max_trajectories`` exist. Trajectories come back in creation order, roots first;
    branches carry ``parent_id`` and their fork point.

    ``echo`` turns on ECHO's controls (:mod:`rollgym.rollout.echo`): adaptive branch width (a fork
    point gets :func:`~rollgym.rollout.echo.branch_width` children) and online confidence pruning
    (pruned trajectories carry ``metrics["pruned"]``; :func:`~rollgym.rollout.echo.tree_stats` counts
    them). With either on, a round whose newest branches offer no fork point (pruned, or none left after
    their own fork point) refills from the unpruned trajectories' unused points, so the budget that pruning
    frees is spent on the kept lines. ``None`` (the default) grows exactly the tree it grew before these
    options existed.
    """
    rng = rng or np.random.default_rng(agent_seed)
    pruner = Pruner(echo) if echo is not None and echo.prune_below is not None else None
    base = Branch.start(env, agent, seed=seed, agent_seed=agent_seed, env_id=env_id, traj_id=f"{group_id}-r",
                        group_id=group_id, limits=limits, options=options)
    made = [0]

    def name(prefix: str) -> str:
        made[0] += 1
        return f"{group_id}-{prefix}{made[0] - 1}"

    async def play(branch: Branch) -> tuple[Trajectory, list[Branch], list[Any]]:
        snapshots: list[Branch] = []
        stop: Callable[[Branch], bool] | None = None
        if pruner is not None:
            pruner.adopt(branch.traj_id, branch.parent_id)

            def stop(b: Branch) -> bool:
                return pruner.check(b.traj_id, agent_turns(b.agent), skip=b.own_start())
        traj = await branch.aplay(snapshots=snapshots, should_stop=stop)
        turns = agent_turns(branch.agent)  # the agent's own records carry the entropies
        turns = turns if turns and len(turns) == len(traj.turns) else list(traj.turns)
        summaries = set(summary_turns(branch.agent))  # ReSum's summaries are not episode turns
        if summaries:  # and a reply after one is not forked inside (its snapshot is from before the summary)
            turns = [_NoCandidates() if i - 1 in summaries else t for i, t in enumerate(turns) if i not in summaries]
        return traj, snapshots, turns

    if base.done:
        return [base.trajectory()]
    starts = [base.fork(agent_seed=(agent_seed * 1_000_003 + i) % 2**63, traj_id=name("r")) for i in range(roots)]
    for b in starts:  # roots are independent episodes, not branches
        b.parent_id, b.fork_point = None, None
    done = list(await asyncio.gather(*(play(b) for b in starts)))
    spent = sum(sampled_tokens(t) for t, _, _ in done)
    frontier = list(range(len(done)))
    used: dict[int, set[ForkPoint]] = {}  # with ECHO's options: points already forked, so a refill picks new ones
    active = echo is not None and (echo.adaptive_width or echo.prune_below is not None)

    def children(frontier: list[int]) -> list[Branch]:
        new: list[Branch] = []
        if pruner is not None:  # a pruned trajectory is not forked again
            frontier = [i for i in frontier if not done[i][0].metrics.get("pruned")]
        per_index = {i: [(p, score) for p, score in fork_candidates(done[i][2], level=level)
                         if _own(done[i][0], p) and p not in used.get(i, ())] for i in frontier}
        widths = _widths(echo, per_index, done)
        for index in frontier:
            traj, snapshots, turns = done[index]
            candidates = per_index[index]
            for point in select_forks(candidates, forks_per_round, min_gap=min_gap, rule=rule, rng=rng):
                if active:
                    used.setdefault(index, set()).add(point)
                for _ in range(widths(point, candidates)):
                    if point.turn >= len(snapshots) or len(done) + len(new) >= max_trajectories:
                        continue
                    turn, keep = turns[point.turn], point.token
                    child = snapshots[point.turn].fork(
                        agent_seed=int(rng.integers(2**62)), traj_id=name("b"),
                        prefix_ids=list(turn.output_ids[:keep]), prefix_logprobs=list(turn.output_logprobs[:keep]),
                        prefix_entropies=list(getattr(turn, "output_entropies", [])[:keep]))
                    child.parent_id = traj.traj_id
                    new.append(child)
        return new

    while spent < token_budget and frontier and len(done) < max_trajectories:
        new = children(frontier)
        if not new and active:  # the newest branches were pruned or spent: refill from the kept ones
            new = children(list(range(len(done))))
        if not new:
            break
        results = await asyncio.gather(*(play(b) for b in new))
        frontier = list(range(len(done), len(done) + len(results)))
        done += results
        spent += sum(sampled_tokens(t) for t, _, _ in results)
    out = [t for t, _, _ in done]
    for i, t in enumerate(out):
        t.sample_idx = i
    return out


class _NoCandidates:
    """A turn that offers no fork point."""

    output_ids: tuple[int, ...] = ()
    output_logprobs: tuple[float, ...] = ()


def _widths(echo: EchoOptions | None, per_index: dict[int, list[tuple[ForkPoint, float]]],
            done: list[tuple[Trajectory, list[Branch], list[Any]]]
            ) -> Callable[[ForkPoint, list[tuple[ForkPoint, float]]], int]:
    """The number of children of a fork point this round: 1, or ECHO's adaptive width."""
    if echo is None or not echo.adaptive_width:
        return lambda point, candidates: 1
    scores = [s for cands in per_index.values() for _, s in cands if math.isfinite(s)]
    reference = sum(scores) / len(scores) if scores else 1.0
    confidences = [c for _, _, turns in done if (c := sequence_confidence(turns)) is not None]
    group = sum(confidences) / len(confidences) if confidences else 0.5

    def width(point: ForkPoint, candidates: list[tuple[ForkPoint, float]]) -> int:
        score = next((s for p, s in candidates if p == point), reference)
        return branch_width(score, reference, group, base=echo.base_width, max_width=echo.max_width)
    return width


def _own(traj: Trajectory, point: ForkPoint) -> bool:
    """Whether ``point`` lies in what ``traj`` sampled itself, after its own fork point (a branch is not re-forked
    inside the prefix it shares with its parent: its parent already was)."""
    if traj.fork_turn is None:
        return True
    if point.turn != traj.fork_turn:
        return point.turn > traj.fork_turn
    return point.token > (traj.fork_token or 0)


def grow_tree(env: Any, agent: Any, **kwargs: Any) -> list[Trajectory]:
    """Synchronous :func:`agrow_tree` (for scripts; inside an event loop, await :func:`agrow_tree`)."""
    return asyncio.run(agrow_tree(env, agent, **kwargs))
