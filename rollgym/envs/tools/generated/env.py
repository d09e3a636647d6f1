"""``ToolGen-v0``: multi-turn tool use over generated SQLite apps, with held-out apps in ``test_unseen``."""

from __future__ import annotations

from typing import Any

from rollgym.core.difficulty import Difficulty, Level
from rollgym.core.errors import ConfigError
from rollgym.core.task import Score, Task
from rollgym.envs.tools.api import REGISTRY, Session, ToolSpec
from rollgym.envs.tools.apps import supervisor as _supervisor  # noqa: F401  (registers complete_task)
from rollgym.envs.tools.episode import ToolEpisodeEnv, check_limits
from rollgym.envs.tools.generated import catalog
from rollgym.envs.tools.generated.grading import diff_apps, grade
from rollgym.envs.tools.generated.source import ToolGenTaskSource, expectation_of, kind_group, toolgen_difficulty
from rollgym.envs.tools.generated.source import kinds as all_kinds
from rollgym.envs.tools.generated.store import NOW
from rollgym.envs.tools.generated.templates import GROUPS
from rollgym.envs.tools.generated.tools import call
from rollgym.envs.tools.scope import solution_tools

OPERATOR = "operator@toolgen.example"
SYSTEM_PROMPT = (
    "You operate a few business apps (a library, a clinic, a hotel, ...) through their tools. Call tools by "
    "writing one or more blocks like\n"
    '<tool_call>{"name": "maple_bakery_order_search", "arguments": {"query": "BO-1042"}}</tool_call>\n'
    "Results come back in <tool_response> blocks. Only change what the task asks for. When you are done, call "
    "complete_task, with an answer if the task asks a question."
)


def world_tools(task: Task) -> dict[str, ToolSpec]:
    """The tools of every app of a task's world, plus ``complete_task``."""
    out: dict[str, ToolSpec] = {}
    for app_id in task.meta["world"]:
        out.update(catalog.tools(app_id))
    out["complete_task"] = REGISTRY["complete_task"]
    return out


TOOL_SCHEMAS = ("full", "compact")
"""How ``info["tools"]`` renders the tool schemas (the ``tool_schemas`` argument)."""


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's OpenAI schema without descriptions or defaults: its name, and each parameter's type and enum,
    and the required list (about half the characters, for models with a small context)."""
    function = schema["function"]
    parameters = function.get("parameters") or {}
    properties = {name: {k: v for k, v in spec.items() if k in ("type", "enum", "items")}
                  for name, spec in (parameters.get("properties") or {}).items()}
    compact = {"type": "object", "properties": properties, "required": list(parameters.get("required") or [])}
    return {"type": "function", "function": {"name": function["name"], "parameters": compact}}


def new_session(task: Task) -> Session:
    """A fresh episode state for ``task``: a copy of every app of its world."""
    return Session(OPERATOR, NOW, {a: catalog.app(a).copy() for a in task.meta["world"]})


def evaluate_session(task: Task, session: Session, answer: str | None = None) -> Score:
    """Grade ``session`` against ``task`` (the session's own answer by default) over every app of its world."""
    given = session.answer if answer is None else answer
    return grade(expectation_of(task), diff_apps(task.meta["world"], session.dbs, session.touched), given)


class ToolGenEnv(ToolEpisodeEnv):
    """Do tasks in generated business apps: CRUD, searches, aggregates and domain actions with preconditions.

    ## Description
    256 apps generated from seeded schemas over 32 business domains (library loans, clinic appointments,
    hotel stays, freight shipments, ...). Each app has a party (members, patients, guests), often a catalogue
    (books, treatments, room types), a record that links them with a status workflow, and sometimes payments
    or comments; 10-25 typed tools each (4,815 in all) and 29-53 templates each (10,495 over 16 kinds: lookups
    that ask for a value, a name or a list, updates, creations, deletions, domain actions with preconditions,
    chains), plus 4 cross-app kinds that follow one person through 2-4 apps. A task's world holds its apps and
    ``distractors`` other apps; the agent acts as their operator. The clock is frozen at 2025-06-04 09:30.

    ## Action Space
    Text (``TextSpace``) holding one or more Hermes ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
    blocks, or a JSON list of OpenAI-style calls. The schemas of the world's tools are in ``info["tools"]``
    (they change with the task).

    ## Observation Space
    Text. The first observation names the apps and the request; later ones are ``<tool_response name="...">``
    blocks with each call's JSON result or ``{"error": {"type", "message"}}``.

    ## Starting State
    Fresh copies of the cached base databases of the world's apps (SQLite backup into memory).
    ``reset(options={"difficulty": k})`` draws from one level of scenario groups, easiest first: ``lookup``,
    ``edit``, ``multi-step`` (chain and action), ``cross_app`` (over the env's groups; the one-group ids have
    no levels).

    ## Rewards
    0.0 per step; on ``complete_task``, 1.0 when every required change happened, no row of any table of any app
    of the world changed beyond them, and a question's answer is exactly right; else 0.0. Graded by the shared
    state-diff grader (:mod:`rollgym.verifiers.statediff`) with the gate ``apps_unchanged_beyond_task``.

    ## Episode End
    Terminated when the agent calls ``complete_task``; truncated (reward 0.0, ``error="not_completed"``) after
    ``max_turns`` actions or ``max_calls`` tool calls. Malformed calls, unknown tools and bad arguments give an
    error observation and the episode goes on.

    ## Information
    The common keys, ``tools``, ``turn``, ``rounds`` (turns that ran at least one tool call: several calls in
    one action are one round), ``calls`` and ``tool_calls`` (calls run, the same number) and ``episode_id``;
    ``task_meta`` holds the template, its
    kind and group, the task's apps, the world and the public parameters; at the end the score's fields
    ``reward``, ``correct``, ``parsed``, ``error`` and ``details`` (each criterion's verdict, ``reasons`` and the
    rows changed per table).

    ## Arguments
    ``split`` (``train``, ``validation``, ``test`` or ``test_unseen``; the last holds only apps of six held-out
    domains), ``groups`` (scenario groups: lookup, edit, action, chain, cross_app; default all), ``apps`` (only
    these app ids), ``distractors`` (1), ``max_turns`` (30), ``max_calls`` (150), ``max_calls_per_turn`` (16),
    ``render_mode``, ``tool_schemas`` (``full`` or ``compact``), ``tool_scope`` (``auto``: at the easiest
    level ``info["tools"]`` lists only the tools the task's reference solution calls and ``complete_task``, as
    compact schemas, the world's tools otherwise; ``all``; ``task``; see :mod:`rollgym.envs.tools.scope`).

    ## Version History
    * v0: initial version.
    * v1: 1,024 apps (32 variants of each of the 32 domains; the 256 apps of v0 unchanged among them), 832 seen
      and 192 in ``test_unseen`` (the same six held-out domains); see :class:`ToolGen1kEnv`. v0 is unchanged.
    """

    default_env_id = "ToolGen-v0"
    generation = 0
    """The app pool (:data:`~rollgym.envs.tools.generated.catalog.GENERATIONS`)."""
    system_prompt = SYSTEM_PROMPT

    def __init__(self, split: str = "train", groups: list[str] | tuple[str, ...] | None = None,
                 apps: list[str] | tuple[str, ...] | None = None, distractors: int = 1, max_turns: int = 30,
                 max_calls: int = 150, max_calls_per_turn: int = 16, render_mode: str | None = None,
                 kinds: list[str] | tuple[str, ...] | None = None, tool_schemas: str = "full",
                 tool_scope: str = "auto") -> None:
        check_limits(max_turns=max_turns, max_calls=max_calls, max_calls_per_turn=max_calls_per_turn)
        if split not in catalog.SPLITS:
            raise ConfigError(f"Unknown split {split!r}; use one of {', '.join(catalog.SPLITS)}.")
        if tool_schemas not in TOOL_SCHEMAS:
            raise ConfigError(f"tool_schemas must be one of {', '.join(TOOL_SCHEMAS)}, got {tool_schemas!r}.")
        self.tool_schemas = tool_schemas
        self._source_args = (groups, apps, distractors, kinds)
        super().__init__(split, render_mode, max_turns, max_calls, max_calls_per_turn, tool_scope)
        source = self.source
        assert isinstance(source, ToolGenTaskSource)
        source.pool(split)  # an app outside the split is a mistake to report now, not at reset
        self._registry: dict[str, ToolSpec] = {}

    def _make_source(self, env_id: str) -> ToolGenTaskSource:
        groups, apps, distractors, kinds = self._source_args
        return ToolGenTaskSource(env_id, groups, apps, distractors, kinds, self.generation)

    @property
    def difficulty(self) -> Difficulty | None:
        """Levels by scenario group: ``lookup`` < ``edit`` < ``multi-step`` (chain and action) < ``cross_app``
        (``None`` for the one-group ids)."""
        groups, _, _, kinds = self._source_args
        if kinds is not None:  # only the groups that hold one of the kinds
            groups = [g for g in (groups or GROUPS) if any(kind_group(k) == g for k in kinds if k in all_kinds())]
        return toolgen_difficulty(groups)

    def _level_source(self, env_id: str, level: Level) -> ToolGenTaskSource:
        _, apps, distractors, kinds = self._source_args
        return ToolGenTaskSource(env_id, level.knobs["groups"], apps, distractors, kinds, self.generation)

    def _start(self, task: Task) -> str:
        if not isinstance(task.meta.get("template"), str) or not isinstance(task.meta.get("world"), list):
            raise ConfigError("A ToolGen task needs meta['template'] and meta['world']; pass a task made by this "
                              "env's source (ToolGenTaskSource) or use options={'task_index': i}.")
        prompt = self._begin(task)
        self._registry = world_tools(task)
        self._set_tools([spec.schema if self.tool_schemas == "full" else compact_schema(spec.schema)
                         for spec in self._registry.values()])
        self._apply_scope(task)
        return prompt

    def _reference_tools(self, task: Task) -> list[str] | None:
        registry = self._registry
        try:
            solution = catalog.template(task.meta["template"]).solve(dict(task.meta["params"]))
        except (KeyError, TypeError, ValueError):  # a hand-made task without a reference: show every tool
            return None
        return solution_tools(solution, new_session(task), lambda s, name, args: call(s, registry, name, args))

    def _new_session(self, task: Task) -> Session:
        return new_session(task)

    def _call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        assert self.session is not None
        return call(self.session, self._registry, name, arguments)

    def evaluate(self) -> Score:
        """Grade the current state against the task (also usable before ``complete_task``)."""
        assert self.session is not None and self.task is not None
        return evaluate_session(self.task, self.session)


class ToolGen1kEnv(ToolGenEnv):
    """``ToolGen-v1``: :class:`ToolGenEnv` over 1,024 generated apps.

    ## Description
    The same generator, tools, templates, grader and arguments as ``ToolGen-v0``, over a pool four times
    wider: 32 variants of each of the 32 domains, each a distinct schema (by structural digest; the 256 apps
    of v0 are among them under the same ids). ``train``, ``validation`` and ``test`` draw from the 832 apps of
    26 domains and are disjoint by content; ``test_unseen`` draws from the 192 apps of the six held-out
    domains. Apps are built only when a task's world needs one, so ``reset`` stays a copy of cached
    databases. ``rollgym list --stats`` shows the pool and the distinct tasks per split found by a census.

    ## Version History
    * v1: initial version (the 1,024-app pool of :class:`ToolGenEnv`'s v1).
    """

    default_env_id = "ToolGen-v1"
    generation = 1
