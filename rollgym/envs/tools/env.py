"""``ToolWorld-v1``: multi-turn tool use over six simulated apps, graded from the database diff."""

from __future__ import annotations

from typing import Any

from rollgym.core.difficulty import Difficulty, Level
from rollgym.core.errors import ConfigError
from rollgym.core.task import Score, Task
from rollgym.envs.tools import apps as _apps  # noqa: F401  (the app modules register their tools)
from rollgym.envs.tools.api import Session, call_tool, tool_schemas
from rollgym.envs.tools.checker import diff_world
from rollgym.envs.tools.episode import ToolEpisodeEnv, check_limits
from rollgym.envs.tools.scope import solution_tools
from rollgym.envs.tools.tasks import TEMPLATES, ToolTaskSource, task_world
from rollgym.envs.tools.tasks.base import VERSIONS
from rollgym.envs.tools.tasks.source import toolworld_difficulty
from rollgym.verifiers.tools import grade, legacy_verdict

SYSTEM_PROMPT = (
    "You are an assistant that acts for one user inside a world of apps (contacts, email, calendar, payments, "
    "notes, shopping). Call tools by writing one or more blocks like\n"
    '<tool_call>{"name": "email_search", "arguments": {"query": "invoice"}}</tool_call>\n'
    "Results come back in <tool_response> blocks. Only change what the task asks for. When you are done, call "
    "complete_task, with an answer if the task asks a question."
)


def new_session(task: Task) -> Session:
    """A fresh episode state for ``task``: a copy of its base world, acting as its user."""
    world = task_world(task)
    return Session(world.me.email, world.now, world.copy())


def evaluate_session(task: Task, session: Session, answer: str | None = None, version: int = 1) -> Score:
    """Grade ``session`` against ``task`` with the shared state-diff grader (the session's own answer by default).

    The score's ``details`` hold each criterion's verdict (``required_changes``, ``answer`` for questions, the
    gate ``apps_unchanged_beyond_task``), the reasons of failed ones and the rows changed per table.
    ``version=0`` grades as ToolWorld-v0 did.
    """
    world = task_world(task)
    expectation = TEMPLATES[task.meta["template"]].expect(world, task.meta["params"])
    given = session.answer if answer is None else answer
    return grade(expectation, diff_world(world, session.dbs, session.touched), given, version)


class ToolWorldEnv(ToolEpisodeEnv):
    """Do a user's errands with the APIs of six apps that share one world of people.

    ## Description
    An AppWorld-style world: contacts, email, calendar, payments (wallet, transfers, requests), notes and
    shopping (catalogue, cart, orders, refunds), each with its own SQLite database, generated from a seed. The
    agent acts for one user and cannot see or change other users' private records. The clock is frozen per task.

    ## Action Space
    Text (``TextSpace``) holding one or more Hermes ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
    blocks, or a JSON list of OpenAI-style calls. The schemas are in ``info["tools"]``.

    ## Observation Space
    Text. The first observation is the user's request; later ones are ``<tool_response name="...">`` blocks with
    each call's JSON result or ``{"error": {"type", "message"}}``.

    ## Starting State
    A fresh copy of one of a few cached base worlds (SQLite backup into memory, well under a millisecond).
    ``reset(options={"difficulty": k})`` draws the task from the templates of level ``k`` only, by the
    reference solution's tool calls: ``calls-2``, ``calls-3``, ``calls-4-5``, ``calls-6+`` (the levels the
    env's templates fill; ``ToolWorld-CrossApp`` has none).

    ## Rewards
    0.0 per step; on ``complete_task``, 1.0 when every required change happened, no row of any table of the six
    apps changed beyond what the task asks or tolerates (reading marks mail read, a checked transfer moves
    balances, a checked order moves stock), and a question's answer is exactly right, else 0.0. Graded by the
    shared state-diff grader (:mod:`rollgym.verifiers.statediff`).

    ## Episode End
    Terminated when the agent calls ``complete_task``; truncated (reward 0.0) after ``max_turns`` actions or
    ``max_calls`` tool calls. Malformed calls, unknown tools and wrong argument types give an error observation
    and the episode goes on.

    ## Information
    The common keys, ``tools``, ``turn``, ``rounds`` (turns that ran at least one tool call: several calls in
    one action are one round), ``calls`` and ``tool_calls`` (calls run, the same number) and ``episode_id``;
    at the end the score's fields
    ``reward`` (float), ``correct`` (bool: solved), ``parsed`` (the answer given to ``complete_task``),
    ``error`` (``None``, ``"wrong"``, ``"no_answer"``, ``"side_effects"`` or ``"not_completed"``) and
    ``details`` (``criteria``: each criterion's verdict, ``reasons``, ``diff``: rows added, changed and deleted
    per table), plus ``answer``. ``verdict`` (``success``, ``goal``, ``collateral``, ``answer``, ``failures``)
    is a deprecated alias kept until rollgym 0.3.0.

    ## Arguments
    ``templates`` (names, default all of the version), ``scenario`` (a template family: contacts, email,
    calendar, payments, notes, shopping, cross_app), ``split``, ``max_turns`` (30), ``max_calls`` (150),
    ``max_calls_per_turn`` (16), ``version`` (1; 0 reproduces ToolWorld-v0's tasks and scoring),
    ``render_mode``, ``tool_scope`` (``auto``: at the easiest level ``info["tools"]`` lists only the tools the
    task's reference solution calls and ``complete_task``, as compact schemas, every tool otherwise; ``all``;
    ``task``; see :mod:`rollgym.envs.tools.scope`).

    ## Version History
    * v1: a constant answer can no longer solve a task: instances that ``complete_task(answer=c)`` with no
      other call would pass, for ``c`` in ``"0"``, ``""``, ``"yes"``, ``"none"``, ``"[]"``, ``"true"``, small
      numbers and the like, are redrawn (a total of 0.00), and the four counting questions ask for the items
      instead (``calendar_day_events``, ``contacts_with_relationship``, ``email_unread_subjects``,
      ``notes_in_folder`` replace the ``*_count_*`` templates). Grading moved to the shared state-diff grader:
      the terminal info carries the core score fields; marking mail unread and a note's edit stamp without an
      asked-for edit now count as collateral damage.
    * v0: initial version (still registered, with its tasks and scoring; a constant "0" solved 6 of 150 test
      tasks).
    """

    default_env_id = "ToolWorld-v1"
    system_prompt = SYSTEM_PROMPT

    def __init__(
        self,
        templates: list[str] | tuple[str, ...] | None = None,
        scenario: str | None = None,
        split: str = "train",
        max_turns: int = 30,
        max_calls: int = 150,
        max_calls_per_turn: int = 16,
        version: int = 1,
        render_mode: str | None = None,
        tool_scope: str = "auto",
    ) -> None:
        if version not in VERSIONS:
            raise ConfigError(f"version must be one of {list(VERSIONS)}, got {version!r}.")
        check_limits(max_turns=max_turns, max_calls=max_calls, max_calls_per_turn=max_calls_per_turn)
        if scenario is not None:
            families = sorted({t.scenario for t in TEMPLATES.values()})
            if scenario not in families:
                raise ConfigError(f"Unknown scenario {scenario!r}; use one of {', '.join(families)}.")
            available = [n for n in sorted(TEMPLATES) if version in TEMPLATES[n].versions]
            chosen = [n for n in (templates or available) if n in TEMPLATES and TEMPLATES[n].scenario == scenario]
            templates = chosen
        self.version = version
        self._templates = templates
        super().__init__(split, render_mode, max_turns, max_calls, max_calls_per_turn, tool_scope)
        self._set_tools(tool_schemas())

    def _make_source(self, env_id: str) -> ToolTaskSource:
        return ToolTaskSource(self._templates, env_id=env_id, version=self.version)

    @property
    def difficulty(self) -> Difficulty | None:
        """Levels by the reference solution's tool calls (2, 3, 4-5, 6+), over this env's templates."""
        source = self.source
        assert isinstance(source, ToolTaskSource)
        return toolworld_difficulty(source.templates)

    def _level_source(self, env_id: str, level: Level) -> ToolTaskSource:
        return ToolTaskSource(level.knobs["templates"], env_id=env_id, version=self.version)

    def _start(self, task: Task) -> str:
        if task.meta.get("template") not in TEMPLATES or not isinstance(task.meta.get("world"), int):
            raise ConfigError("A ToolWorld task needs meta['template'] and meta['world']; pass a task made by "
                              "this env's source (ToolTaskSource) or use options={'task_index': i}.")
        prompt = self._begin(task)
        self._apply_scope(task)
        return prompt

    def _new_session(self, task: Task) -> Session:
        return new_session(task)

    def _reference_tools(self, task: Task) -> list[str] | None:
        solution = TEMPLATES[task.meta["template"]].solve(dict(task.meta["params"]))
        return solution_tools(solution, new_session(task), call_tool)

    def _call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        assert self.session is not None
        return call_tool(self.session, name, arguments)

    def _terminal_info(self, score: Score) -> dict[str, Any]:
        return {"verdict": legacy_verdict(score)}

    def evaluate(self) -> Score:
        """Grade the current state against the task (also usable before ``complete_task``)."""
        assert self.session is not None and self.task is not None
        return evaluate_session(self.task, self.session, version=self.version)
