"""The episode of every tool env: a session over copies of the apps' databases, turns of tool calls, grading.

:class:`ToolEpisodeEnv` is what ToolWorld and ToolGen share: checking the call limits,
opening and closing a :class:`~rollgym.envs.tools.api.Session`, running a turn's tool
calls (:func:`~rollgym.envs.tools.api.run_turn`), grading on ``complete_task`` or at
the turn or call limit, and the ``info`` keys. A subclass says how a task's session
is made (:meth:`~ToolEpisodeEnv._new_session`), how a call runs (:meth:`~ToolEpisodeEnv._call`)
and how the state is graded (:meth:`~ToolEpisodeEnv.evaluate`).
"""

from __future__ import annotations

import json
from typing import Any

from rollgym.core.env import StepResult, TextEnv
from rollgym.core.errors import ConfigError
from rollgym.core.task import Score, Task
from rollgym.envs.tools.api import Session, run_turn
from rollgym.envs.tools.scope import check_tool_scope, scope_is_task, scoped_schemas

MAX_OBSERVATION = 400_000
"""The longest observation, in characters (longer tool output is cut with a note)."""


def new_episode_id(env: TextEnv, task: Task) -> str:
    """An id for the episode ``env`` begins on ``task``: unique among live episodes (the instance's address),
    yet the same after ``reset(seed=s)`` of one instance (drawn from the env's seeded generator)."""
    return f"{task.id}#{id(env):x}-{int(env.np_random.integers(2**31))}"


def check_limits(**limits: Any) -> None:
    """Raise a clear ConfigError unless every limit is a positive integer."""
    for name, value in limits.items():
        if not isinstance(value, int) or value < 1:
            raise ConfigError(f"{name} must be a positive integer, got {value!r}.")


class ToolEpisodeEnv(TextEnv):
    """The episode loop of a tool env; subclasses make the session, run the calls and grade."""

    def __init__(self, split: str, render_mode: str | None, max_turns: int, max_calls: int,
                 max_calls_per_turn: int, tool_scope: str = "auto") -> None:
        self.tool_scope = check_tool_scope(tool_scope)
        self._all_tools: list[dict[str, Any]] = []
        self._max_observation = MAX_OBSERVATION
        super().__init__(split=split, render_mode=render_mode, max_observation_length=self._max_observation)
        self.max_turns, self.max_calls, self.max_calls_per_turn = max_turns, max_calls, max_calls_per_turn
        self.session: Session | None = None
        self._tools: list[dict[str, Any]] = []
        self._tools_json: str | None = None
        self.turn = 0
        self.attempts = 0
        self.rounds = 0  # turns that ran at least one tool call (a turn's calls are one round)
        self.episode_id = ""

    @property
    def tools(self) -> list[dict[str, Any]]:
        """OpenAI function schemas of the tools shown to the agent: every tool, or with ``tool_scope`` only the
        episode's task's (:mod:`rollgym.envs.tools.scope`). Do not mutate; every ``info`` gets its own copy."""
        return self._tools

    def _set_tools(self, schemas: list[dict[str, Any]]) -> None:
        self._all_tools = schemas
        self._show(schemas)

    def _show(self, schemas: list[dict[str, Any]]) -> None:
        self._tools = schemas
        self._tools_json = json.dumps(schemas)

    def _reference_tools(self, task: Task) -> list[str] | None:
        """The tools ``task``'s reference solution calls, in order (``None``: unknown, show every tool)."""
        return None

    def _apply_scope(self, task: Task) -> None:
        """Show the tools of this episode's scope: ``task``'s own (compact) or every tool."""
        narrow = scope_is_task(self.tool_scope, self._episode_difficulty)
        self._show(scoped_schemas(self._all_tools, self._reference_tools(task)) if narrow else self._all_tools)

    def _new_session(self, task: Task) -> Session:
        """A fresh episode state for ``task``."""
        raise NotImplementedError

    def _call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Run one tool call of the agent in the current session."""
        raise NotImplementedError

    def evaluate(self) -> Score:
        """Grade the current state against the task (also usable before ``complete_task``)."""
        raise NotImplementedError

    def _terminal_info(self, score: Score) -> dict[str, Any]:
        """Keys a subclass adds to the terminal ``info`` besides the score's fields."""
        return {}

    def _begin(self, task: Task) -> str:
        self._close_session()
        self.session = self._new_session(task)
        self.turn = self.attempts = self.rounds = 0
        self.episode_id = new_episode_id(self, task)
        return task.prompt

    def _close_session(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None

    def _advance(self, action: str) -> StepResult:
        assert self.session is not None and self.task is not None
        self.turn += 1
        session = self.session
        before = self.attempts
        observation, self.attempts = run_turn(
            action, session, self._call, attempts=self.attempts, max_calls_per_turn=self.max_calls_per_turn,
            max_calls=self.max_calls, max_observation=self._max_observation)
        self.rounds += int(self.attempts > before)
        info: dict[str, Any] = {"turn": self.turn, "rounds": self.rounds, "calls": self.attempts,
                                "tool_calls": self.attempts, "episode_id": self.episode_id}
        if session.completed:
            score = self.evaluate()
            info.update(score.to_info(), **self._terminal_info(score), answer=session.answer)
            return observation, score.reward, True, False, info
        if self.turn >= self.max_turns or self.attempts >= self.max_calls:
            graded = self.evaluate()
            # the state is graded and reported, but an episode that never called complete_task is not solved
            score = Score(0.0, False, None, "not_completed", {**graded.details, "completed": False})
            info.update(score.to_info(), **self._terminal_info(score), answer=None,
                        truncated_by="turn or call limit")
            return observation, 0.0, False, True, info
        return observation, 0.0, False, False, info

    def _common_info(self) -> dict[str, Any]:
        info = super()._common_info()
        # fresh nested objects on every call: callers keep infos, and the env checker rejects shared ones
        info["task_meta"] = json.loads(json.dumps(info["task_meta"]))
        if self._tools_json is not None:
            info["tools"] = json.loads(self._tools_json)
        return {**info, "turn": self.turn, "rounds": self.rounds, "tool_calls": self.attempts,
                "episode_id": self.episode_id}

    def close(self) -> None:
        self._close_session()
        super().close()
