"""Partial rollouts (APRIL): over-provision, stop at the target, carry the unfinished over.

Synchronous RL waits for the slowest rollout of every batch: one long generation
idles the whole engine. APRIL (Active Partial Rollouts in RL, Zhou et al. 2025)
launches more groups than a training step needs, stops as soon as the target
number of groups is done, and keeps the unfinished rollouts, with the tokens they
already have, to continue in the next step under the new weights.

:class:`PartialRollouts` does that over rollgym's episode loop, across training
steps::

    with PartialRollouts(agent, "Countdown-v0", group_size=8, groups_per_step=16,
                         over_provision=1.5, chunk_tokens=64) as rollouts:
        for step in range(steps):
            groups = rollouts.step()          # exactly 16 finished groups
            trainer.step(groups)
            backend.policy_version = trainer.policy_version

How an episode is stopped and resumed:

- *Between turns*: every in-flight episode waits at a gate before its next action;
  the gate closes when the target is met, so multi-turn episodes park with their
  env, agent and tokens intact.
- *Inside a generation*, when ``chunk_tokens`` is set: the agent's backend is wrapped in
  :class:`~rollgym.agents.backends.resumable.ResumableBackend`, which samples at most
  ``chunk_tokens`` tokens per call and continues from the exact token ids sampled so far (never re-tokenized), waiting
  at the same gate between chunks. Continuing a prefix samples from the same
  distribution as one long call, so nothing about the rollout changes but when
  its tokens were drawn.

:meth:`PartialRollouts.step` returns only once every episode still in flight is
parked, so the weights can change safely while they wait. Nothing is lost: a
carried-over rollout keeps every token and its behaviour logprob, and every token
records the weights version that sampled it (``Turn.policy_version`` is the
oldest, ``Turn.output_versions`` lists each token's version when they differ,
``metrics["policy_versions"]`` all of them). ``max_staleness`` bounds how old a
returned rollout may be: when its group is complete, and again before a group
finished beyond the last target is handed out, a rollout whose oldest token is
more than that many versions behind is played again from the start
(``metrics["restarts"]``, same seeds; after ``max_restarts`` replays it is kept
with status ``aborted``). ``max_staleness=0`` is fully on-policy, at the cost of
replaying every carried rollout.

Groups come out whole (all ``group_size`` rollouts of a task, same env seed);
tasks are drawn in order from the run seed, as :func:`~rollgym.rollout.collect`
draws them, and a group finished beyond the target waits for the next step.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import threading
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar, cast

from rollgym.core.agent import Agent, BackedAgent
from rollgym.core.closing import Closeable
from rollgym.core.errors import ConfigError
from rollgym.rollout.collector import make_env
from rollgym.rollout.engine import EpisodePlayer, RunPlan, spawn_agent, stale_reason
from rollgym.rollout.episode import EpisodeLimits
from rollgym.rollout.store import EpisodeRecord, assemble_groups
from rollgym.rollout.types import RolloutGroup

if TYPE_CHECKING:
    from rollgym.rollout.curriculum import TaskChooser

T = TypeVar("T")

#: Upper bound on task indices a partial-rollout run may draw (tasks are drawn lazily).
_MAX_TASKS = 2**31 - 1


class Gate:
    """Where in-flight episodes park between training steps, and how the collector knows they all have.

    ``enter``/``leave`` bracket an episode's life; ``await wait()`` returns at once while
    the gate is open and otherwise parks the caller until it opens. ``await drained()``
    returns when no entered episode is running (every one is parked or has left).
    """

    def __init__(self) -> None:
        self._open = asyncio.Event()
        self._open.set()
        self._idle = asyncio.Event()
        self._idle.set()
        self._epoch = 0
        self.running = 0
        self.parked = 0

    def _update(self) -> None:
        if self.running == 0:
            self._idle.set()
        else:
            self._idle.clear()

    def enter(self) -> None:
        self.running += 1
        self._update()

    def leave(self) -> None:
        self.running -= 1
        self._update()

    def open(self) -> None:
        # Woken episodes count as running from now, before they get to run: a drain right
        # after a quick open-and-close must wait for them to park again.
        self._epoch += 1
        self.running += self.parked
        self.parked = 0
        self._update()
        self._open.set()

    def close(self) -> None:
        self._open.clear()

    async def wait(self) -> None:
        if self._open.is_set():
            return
        epoch = self._epoch
        self.running -= 1
        self.parked += 1
        self._update()
        try:
            await self._open.wait()
        finally:
            if self._epoch == epoch:  # not released by open() (cancelled while parked)
                self.parked -= 1
                self.running += 1
                self._update()

    async def drained(self) -> None:
        await self._idle.wait()


@dataclasses.dataclass
class _GroupState:
    records: dict[int, EpisodeRecord] = dataclasses.field(default_factory=dict)


class PartialRollouts(Closeable):
    """APRIL-style collection across training steps; see the module docstring.

    Args:
        agent: Any agent; with ``chunk_tokens``, one that generates through ``self.backend``
            (:class:`~rollgym.agents.chat.ChatAgent`).
        env_id: A registered id.
        group_size: Rollouts per task (G).
        groups_per_step: Finished groups each :meth:`step` returns.
        over_provision: Groups kept in flight, as a multiple of ``groups_per_step``
            (``ceil(groups_per_step * over_provision)``, counting carried-over ones).
        split, seed, env_kwargs: As for :func:`~rollgym.rollout.collect`.
        limits: Step and token caps per episode. Timeouts that would count the time an
            episode spends parked are refused: ``episode_timeout_s`` always, and
            ``step_timeout_s`` with ``chunk_tokens``.
        chunk_tokens: Pause inside generations too, every this many tokens (``None``: only
            between turns).
        max_staleness: Replay a finished rollout whose oldest token is more than this many
            weights versions behind; ``None`` keeps every rollout.
        policy_version: Returns the current weights version; defaults to
            ``agent.backend.policy_version``, else 0.
        max_restarts: Most replays of one rollout for staleness; after that it is kept,
            with status ``aborted``.
        task_chooser: Chooses each group's reset options when the group is launched (a
            :class:`~rollgym.rollout.curriculum.Curriculum` picks its difficulty level); it sees the
            groups each :meth:`step` returns, and the step's end closes its step.
    """

    def __init__(
        self,
        agent: Agent,
        env_id: str,
        *,
        group_size: int,
        groups_per_step: int,
        over_provision: float = 1.5,
        split: str = "train",
        seed: int = 0,
        env_kwargs: dict[str, Any] | None = None,
        limits: EpisodeLimits | None = None,
        chunk_tokens: int | None = None,
        max_staleness: int | None = None,
        policy_version: Callable[[], int] | None = None,
        max_restarts: int = 2,
        task_chooser: TaskChooser | None = None,
    ) -> None:
        self.limits = limits or EpisodeLimits()
        for name, value in (("group_size", group_size), ("groups_per_step", groups_per_step)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be an integer >= 1, got {value!r}.")
        if not isinstance(over_provision, (int, float)) or over_provision < 1:
            raise ConfigError(f"over_provision must be a number >= 1, got {over_provision!r}.")
        if max_staleness is not None and (not isinstance(max_staleness, int) or max_staleness < 0):
            raise ConfigError(f"max_staleness must be an integer >= 0 or None, got {max_staleness!r}.")
        if self.limits.episode_timeout_s is not None:
            raise ConfigError("Partial rollouts park episodes between steps, so episode_timeout_s would count "
                              "parked time; leave it unset and cap episodes with max_steps or max_total_tokens.")
        if chunk_tokens is not None and self.limits.step_timeout_s is not None:
            raise ConfigError("With chunk_tokens, generations park inside a step, so step_timeout_s would count "
                              "parked time; leave it unset or use chunk_tokens=None.")
        self.gate = Gate()
        template = spawn_agent(agent)
        if chunk_tokens is not None:
            backend = template.backend if isinstance(template, BackedAgent) else None
            if backend is None:
                raise ConfigError(f"chunk_tokens needs an agent that generates through .backend (a ChatAgent); "
                                  f"{type(agent).__name__} has none.")
            from rollgym.agents.backends.resumable import ResumableBackend  # only the chunked mode needs it

            cast(Any, template).backend = ResumableBackend(backend, chunk_tokens, self.gate.wait)
        self.template = template
        self.group_size = group_size
        self.groups_per_step = groups_per_step
        self.in_flight_target = math.ceil(groups_per_step * over_provision)
        self.max_staleness = max_staleness
        self.max_restarts = max_restarts
        if policy_version is None:
            backend = agent.backend if isinstance(agent, BackedAgent) else None
            policy_version = (lambda: int(getattr(backend, "policy_version", 0))) if backend is not None else (
                lambda: 0)
        self.policy_version = policy_version
        self.plan = RunPlan.prepare(agent, env_id, _MAX_TASKS, group_size, split, seed, None, env_kwargs,
                                    self.limits.max_steps, task_chooser=task_chooser, make_env=make_env)
        self._players: list[EpisodePlayer] = [EpisodePlayer(self.plan.env, template, self.plan.new_env, self.limits)]
        self._groups: dict[int, _GroupState] = {}
        self._ready: list[tuple[int, _GroupState]] = []
        self._restarts: dict[tuple[int, int], int] = {}
        self._next_task = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._changed = asyncio.Event()  # bound to the loop below on first use
        self._error: BaseException | None = None
        self.steps = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="rollgym-partial")
        self._thread.start()
        self._closed = False

    # -- public ---------------------------------------------------------------
    def cost(self) -> dict[str, int]:
        """What the partial rollouts cost so far, beyond the tokens themselves.

        ``resent_prefix_tokens``: prompt and already-sampled tokens sent again to continue a paused
        generation (``chunk_tokens``): an engine without a prefix cache prefills them again, so a fair
        comparison with synchronous collection charges them; ``chunk_calls``: engine calls made by
        chunked generation; ``steps``: :meth:`step` calls.
        """
        backend = self.template.backend if isinstance(self.template, BackedAgent) else None
        return {"steps": self.steps, "resent_prefix_tokens": int(getattr(backend, "resent_tokens", 0)),
                "chunk_calls": int(getattr(backend, "chunk_calls", 0))}

    @property
    def carried(self) -> int:
        """Episodes in flight now: started in an earlier step and not finished."""
        return sum(self.group_size - len(g.records) for g in self._groups.values())

    def step(self) -> list[RolloutGroup]:
        """Run until ``groups_per_step`` groups are finished; park the rest; return those groups."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("PartialRollouts.step() was called from its own event loop; use astep().")
        return self._submit(self._collect())

    async def astep(self) -> list[RolloutGroup]:
        """:meth:`step` for callers inside an event loop."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._collect(), self._loop))

    def close(self) -> None:
        """Cancel the parked episodes, close the envs, stop the loop."""
        if self._closed:
            return
        self._closed = True

        async def shutdown() -> None:
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

        self._submit(shutdown())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        for env in [player.env for player in self._players]:
            env.close()
        self._loop.close()

    # -- the loop ---------------------------------------------------------------
    def _submit(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._loop.is_closed():
            coro.close()
            raise RuntimeError("PartialRollouts is closed.")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    async def _collect(self) -> list[RolloutGroup]:
        if self.max_staleness is not None:  # groups finished during the last drain may be too old by now
            ready, self._ready = self._ready, []
            for i, state in ready:
                self._groups[i] = state
                self._complete(i)
        self.gate.open()
        while len(self._ready) < self.groups_per_step:
            if self._error is not None:
                raise self._error
            while len(self._groups) + len(self._ready) < self.in_flight_target:
                self._launch(self._next_task)
                self._next_task += 1
            self._changed.clear()
            if len(self._ready) < self.groups_per_step:
                await self._changed.wait()
        self.gate.close()
        await self.gate.drained()
        if self._error is not None:
            raise self._error
        out, self._ready = self._ready[: self.groups_per_step], self._ready[self.groups_per_step :]
        self.steps += 1
        groups = [assemble_groups(list(state.records.values()), self.group_size)[0] for _, state in out]
        self.plan.end_step(groups)
        return groups

    def _launch(self, i: int) -> None:
        self.plan.group_options(i)  # chosen at launch, under the chooser's state of this step
        self._groups[i] = _GroupState()
        for j in range(self.group_size):
            self._launch_episode(i, j)

    def _launch_episode(self, i: int, j: int) -> None:
        self.gate.enter()  # counted as running from now, so a drain cannot miss a just-launched episode
        task = self._loop.create_task(self._play(i, j))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _play(self, i: int, j: int) -> None:
        player = self._players.pop() if self._players else EpisodePlayer(
            self.plan.new_env(), spawn_agent(self.template), self.plan.new_env, self.limits)
        try:
            record = await player.aplay(self.plan.job(i, j), pause=self.gate.wait)
            if self._restarts.get((i, j)):
                record.trajectory.metrics["restarts"] = self._restarts[(i, j)]
            self._groups[i].records[j] = record
            self._complete(i)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # a collector bug: surface it from step(), do not hang
            self._error = exc
            self._changed.set()
        finally:
            self.gate.leave()
            self._players.append(player)

    def _complete(self, i: int) -> None:
        """Hand group ``i`` out once all its rollouts are in and none is too old; replay the stale ones."""
        state = self._groups[i]
        if len(state.records) < self.group_size:
            return
        if self.max_staleness is not None:
            current = self.policy_version()
            for j, record in list(state.records.items()):
                traj = record.trajectory
                reason = stale_reason(traj, current, self.max_staleness) if traj.usable else None
                if reason is None:
                    continue
                if self._restarts.get((i, j), 0) >= self.max_restarts:
                    traj.status, traj.reward = "aborted", None
                    traj.info = {**traj.info, "aborted": reason}
                    continue
                self._restarts[(i, j)] = self._restarts.get((i, j), 0) + 1
                del state.records[j]
                self._launch_episode(i, j)
            if len(state.records) < self.group_size:
                return
        del self._groups[i]
        self._ready.append((i, state))
        self._changed.set()
