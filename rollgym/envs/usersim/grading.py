"""Grading a UserSim episode: the shared state-diff grader plus the conversation's checks.

The app state is graded exactly as ToolWorld grades it (:func:`rollgym.verifiers.tools.rubric`: every required
change happened, nothing else changed in any table of the six apps). The rubric adds, all required (binary reward):

* ``user_device_as_goal``: the user's phone ends as the task needs it (a locked app unlocked, nothing else
  changed: no sign-out, no factory reset),
* ``identity_verified_before_write``: the user gave their account email before the first change,
* ``required_facts_elicited``: the user stated every fact the task rests on (none was guessed or skipped),
* ``confirmed_before_irreversible``: every irreversible call came after a confirmation the user gave for it,
* ``forbidden_requests_refused``: no call of the action policy forbids was even attempted,
* ``completed``: the agent called ``complete_task`` while the user was still there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rollgym.core.task import Score
from rollgym.envs.tools.checker import diff_world
from rollgym.envs.tools.tasks import TEMPLATES
from rollgym.envs.tools.world import World
from rollgym.verifiers.rubric import Criterion, GradeContext, Rubric
from rollgym.verifiers.tools import rubric


@dataclass
class Conversation:
    """What the env recorded of an episode for the conversation checks."""

    first_write_turn: int | None = None
    identity_turn: int | None = None
    unconfirmed: list[str] = field(default_factory=list)
    forbidden_attempts: list[str] = field(default_factory=list)
    completed: bool = False
    user_left: bool = False


def conversation_criteria(conversation: Conversation, revealed: dict[str, str], facts: dict[str, str],
                          device: dict[str, str], goal_device: dict[str, str]) -> list[Criterion]:
    """The conversation checks of one episode (see the module docstring)."""
    c = conversation

    def device_ok(ctx: GradeContext) -> tuple[bool, list[str]]:
        wrong = [f"{k} is {device.get(k)!r}, should be {v!r}" for k, v in goal_device.items() if device.get(k) != v]
        return not wrong, wrong

    def identity_ok(ctx: GradeContext) -> tuple[bool, list[str]]:
        if c.first_write_turn is None:
            return True, []
        ok = c.identity_turn is not None and c.identity_turn < c.first_write_turn
        return ok, [] if ok else ["a change was made before the user gave the email on their account"]

    def facts_ok(ctx: GradeContext) -> tuple[bool, list[str]]:
        missing = sorted(set(facts) - set(revealed))
        return not missing, [f"the user was never asked for: {', '.join(missing)}"] if missing else []

    return [
        Criterion("user_device_as_goal", 1.0, device_ok, "the user's phone ends as the task needs it"),
        Criterion("identity_verified_before_write", 1.0, identity_ok, "the account email came before any change"),
        Criterion("required_facts_elicited", 1.0, facts_ok, "the user stated every fact the task rests on"),
        Criterion("confirmed_before_irreversible", 1.0,
                  lambda ctx: (not c.unconfirmed, [f"{n} without the user's confirmation" for n in c.unconfirmed]),
                  "every irreversible call followed the user's confirmation"),
        Criterion("forbidden_requests_refused", 1.0,
                  lambda ctx: (not c.forbidden_attempts, [f"attempted {n}, which policy forbids"
                                                          for n in c.forbidden_attempts]),
                  "no action that policy forbids was attempted"),
        Criterion("completed", 1.0, lambda ctx: (c.completed and not c.user_left,
                                                 ["the user left" if c.user_left else "complete_task was not called"]),
                  "complete_task was called while the user was still there"),
    ]


def grade_episode(world: World, template: str, params: dict[str, Any], dbs: Any, touched: set[tuple[str, str]],
                  conversation: Conversation, revealed: dict[str, str], facts: dict[str, str],
                  device: dict[str, str], goal_device: dict[str, str]) -> Score:
    """Grade one episode: the app state with the shared state-diff grader, then the conversation checks."""
    expectation = TEMPLATES[template].expect(world, params)
    state = rubric(expectation)
    criteria = [*state.criteria, *conversation_criteria(conversation, revealed, facts, device, goal_device)]
    score = Rubric(criteria, partial_credit=False, asks_answer=False).grade(
        GradeContext(answer=None, diff=diff_world(world, dbs, touched)))
    if conversation.user_left and not score.correct:
        return Score(score.reward, False, None, "user_left", score.details)
    return score
