"""``Search-v0`` and ``SearchQA-v0``: multi-hop question answering with search tools over a fictional encyclopaedia."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from rollgym.core.config import check_choice, configure, field_names
from rollgym.core.difficulty import Difficulty, Level
from rollgym.core.env import StepResult, TextEnv
from rollgym.core.errors import ConfigError
from rollgym.core.extraction import extract_tag
from rollgym.core.task import Task
from rollgym.core.toolcalls import ToolCall, format_tool_response, parse_tool_calls
from rollgym.envs.search.config import SearchConfig
from rollgym.envs.search.index import get_index
from rollgym.envs.search.questions import QuestionSpec
from rollgym.envs.search.scoring import answer_in_passages, returned_passages, score_answer
from rollgym.envs.search.source import DIFFICULTIES, QA_MIX, SearchTaskSource, search_difficulty
from rollgym.envs.search.tools import SearchSession, tool_schemas

SYSTEM_PROMPT = (
    "You answer questions about a fictional world by searching its encyclopaedia. Tools: search(query, k) "
    "ranks articles by keywords; open(doc_id, page) reads one page of an article (doc_id or exact title); "
    "find(doc_id, text) lists the sentences of an article that contain some text. Call tools with one or more "
    "blocks like\n"
    '<tool_call>{"name": "search", "arguments": {"query": "Ana Vel born"}}</tool_call>\n'
    "Several calls in one reply run together. Links in articles look like [[Title]]. When you know the answer, "
    "reply with <answer>...</answer> holding only the name or year."
)
_MAX_OBSERVATION = 60_000


class SearchEnv(TextEnv):
    """Answer multi-hop questions by searching and reading a generated encyclopaedia.

    ## Description
    A seeded knowledge graph of fictional people, cities, regions, organisations, works and events is
    rendered into an encyclopaedia of articles (one per entity: infobox, lead, prose sections, links) that
    no model can know from memory. Each task is a question whose unique answer the generator proved from the
    graph, with an evidence path. Difficulty has two knobs: topology and hops (chains of relations,
    intersections of constraints, trees of both) and dispersion (0: every fact in a lead paragraph; 1: some
    past an article's first page; 2: some stated only in another entity's article), plus a distractor floor.

    ## Action Space
    Text (``TextSpace``). Either tool calls, ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (several
    per action run in order as one round; schemas in ``info["tools"]``), or the final answer,
    ``<answer>...</answer>``. An action with an answer ends the episode; its tool calls are not run.

    ## Observation Space
    Text. The first observation is the question; later ones are ``<tool_response name="...">`` blocks with
    JSON results, or ``{"error": ...}`` for a malformed call, an unknown tool, or bad arguments.

    ## Starting State
    The cached world ``(world_size, world_seed)`` (built once per process) and a question drawn by index.
    ``reset(options={"difficulty": k})`` draws it from preset ``k`` instead (0 ``easy`` to 3 ``expert``, or
    the name), keeping ``min_distractors``; SearchQA's mix is no level, so its default is none of them.

    ## Rewards
    0.0 per tool round. On the answer: exact match (1.0 or 0.0) against the normalised gold and its aliases;
    with ``reward="f1"``, token F1 instead, for an answer no longer than the gold (a hedge listing several
    candidates earns 0). With ``efficiency_weight`` w > 0 the reward is multiplied by
    ``(1 - w) + w * min(1, budget / rounds)``, where budget = ``budget_scale * task_meta["reference_rounds"]``;
    lower ``budget_scale`` (``env.unwrapped.budget_scale = 0.5``) to tighten it during training.

    ## Episode End
    Terminated by an action with ``<answer>``. Truncated (reward 0.0) after ``max_turns`` actions without one.

    ## Information
    The common keys, ``tools``, ``episode_id``, ``turn``, ``rounds`` (actions with tool calls), ``calls``,
    ``errors`` (failed calls), ``evidence_coverage`` (share of the evidence articles opened or searched with
    ``find``); at the end the score fields ``correct``, ``parsed``, ``error`` and ``details``
    (``exact_match``, ``f1``, ``f1_credit``, ``efficiency``, ``verification``) and ``verified``, a bool for
    verification-aware voting (T^3RL): ``True`` when the normalised answer appears, as whole words, in a passage a
    tool returned during the episode (a search snippet, an opened page, a ``find`` sentence). It is evidence
    that the answer was read, not that it is right, and never changes the reward; ``details["verification"]``
    says where (``method``, ``passages``, ``found_in``). ``task_meta`` holds ``topology``, ``hops``,
    ``dispersion``, ``documents``, ``distractors``, ``constraints``, ``answer_kind``, ``reference_rounds`` and the
    question's ``plan`` (its structure and named entities, never the answer).

    ## Arguments
    ``difficulty`` (``easy``, ``medium``, ``hard``, ``expert``) presets the knobs, which can be set one by one:
    ``topology`` (``chain``, ``intersection``, ``tree``), ``hops``, ``dispersion`` (0, 1, 2 or ``None``),
    ``constraints`` (2 or 3), ``min_distractors``; ``mix=True`` draws from the single- to multi-hop mix of
    SearchQA. Also ``world_size`` (2000), ``world_seed`` (0), ``split``, ``max_turns`` (20),
    ``max_calls_per_turn`` (8), ``reward`` (``em`` or ``f1``), ``efficiency_weight`` (0.0), ``budget_scale``
    (1.0), ``render_mode``. The options from ``world_size`` on (not ``split`` or ``render_mode``) are the fields
    of :class:`~rollgym.envs.search.config.SearchConfig`: give them one by one, or as ``config=SearchConfig(...)``.

    ## Version History
    * v1: with ``reward="f1"``, an answer longer than the gold earns no partial credit (a hedge that
      lists candidates scored 0.5-0.6 under v0). Exact-match scoring is unchanged.
    * v0: initial version.

    Both ids gained ``info["verified"]`` and ``details["verification"]`` later; tasks and rewards did not change.
    """

    default_env_id = "Search-v1"
    system_prompt = SYSTEM_PROMPT

    #: The options taken as keywords (or as one ``config=SearchConfig(...)``) beside the question's.
    config_options: ClassVar[frozenset[str]] = field_names(SearchConfig)

    def __init__(
        self,
        difficulty: str | None = "medium",
        topology: str | None = None,
        hops: int | None = None,
        dispersion: int | str | None = "preset",
        constraints: int | None = None,
        min_distractors: int = 0,
        mix: bool = False,
        *,
        config: SearchConfig | None = None,
        split: str = "train",
        render_mode: str | None = None,
        **options: Any,
    ) -> None:
        specs = self._specs(difficulty, topology, hops, dispersion, constraints, min_distractors, mix)
        self.config = config = configure(type(self).__name__, SearchConfig, config, options)
        self._source_args = (specs, config.world_size, config.world_seed)
        super().__init__(split=split, render_mode=render_mode, max_observation_length=_MAX_OBSERVATION)
        self.max_turns, self.max_calls_per_turn = config.max_turns, config.max_calls_per_turn
        self.reward_mode = config.reward
        self.hedge_guard = config.hedge_guard
        self.efficiency_weight = config.efficiency_weight
        self.budget_scale = config.budget_scale  # training may lower it as it goes (see Rewards)
        self.index = get_index(config.world_size, config.world_seed)
        self._tools_json = json.dumps(tool_schemas())
        self.session: SearchSession | None = None
        self.passages: list[tuple[str, str]] = []  # (doc_id, text) of every passage a tool returned this episode
        self.turn = self.rounds = self.calls = self.errors = 0
        self.episode_id = ""

    @staticmethod
    def _specs(difficulty: str | None, topology: str | None, hops: int | None, dispersion: int | str | None,
               constraints: int | None, min_distractors: int, mix: bool) -> list[tuple[QuestionSpec, float]]:
        if mix:
            return list(QA_MIX)
        check_choice("difficulty", difficulty, tuple(DIFFICULTIES), allow_none=True)
        base = DIFFICULTIES[difficulty or "medium"]
        topology = topology or base.topology
        if hops is None:
            hops = base.hops if topology == base.topology else {"chain": 2, "intersection": 1, "tree": 2}.get(
                topology, 1)
        spec = QuestionSpec(
            topology=topology, hops=hops,
            dispersion=base.dispersion if dispersion == "preset" else dispersion,  # type: ignore[arg-type]
            constraints=constraints or base.constraints, min_distractors=min_distractors,
        )
        return [(spec, 1.0)]

    @property
    def tools(self) -> list[dict[str, Any]]:
        """OpenAI function schemas of ``search``, ``open`` and ``find`` (a fresh copy)."""
        return json.loads(self._tools_json)  # type: ignore[no-any-return]

    def _make_source(self, env_id: str) -> SearchTaskSource:
        specs, world_size, world_seed = self._source_args
        return SearchTaskSource(specs, world_size, world_seed, env_id=env_id)

    @property
    def difficulty(self) -> Difficulty:
        """The presets ``easy``, ``medium``, ``hard`` and ``expert`` as levels 0-3 (the ``difficulty`` argument's)."""
        return search_difficulty(self._source_args[0])

    def _level_source(self, env_id: str, level: Level) -> SearchTaskSource:
        specs, world_size, world_seed = self._source_args
        distractors = specs[0][0].min_distractors if len(specs) == 1 else 0
        spec = QuestionSpec(**level.knobs, min_distractors=distractors)
        return SearchTaskSource([(spec, 1.0)], world_size, world_seed, env_id=env_id)

    def _start(self, task: Task) -> str:
        if not isinstance(task.answer, dict) or "text" not in task.answer or "reference_rounds" not in task.meta:
            raise ConfigError("A search task needs the answer dict and meta of SearchTaskSource; use "
                              "options={'task_index': i} or a task made by this env's source.")
        self.session = SearchSession(self.index.corpus, self.index)
        self.passages = []
        self.turn = self.rounds = self.calls = self.errors = 0
        self.episode_id = f"{task.id}#{id(self):x}-{int(self.np_random.integers(2**31))}"
        return task.prompt

    def _advance(self, action: str) -> StepResult:
        assert self.session is not None and self.task is not None
        self.turn += 1
        if extract_tag(action, "answer") is not None:
            budget = self.budget_scale * float(self.task.meta["reference_rounds"])
            score = score_answer(self.task.answer, action, reward=self.reward_mode, rounds=self.rounds,
                                 budget=budget, efficiency_weight=self.efficiency_weight,
                                 hedge_guard=self.hedge_guard)
            info = {**self._step_info(), **score.to_info()}
            evidence = answer_in_passages(score.parsed, self.passages)
            info["details"] = {**info["details"], "verification": evidence}
            info["verified"] = bool(evidence["found_in"])
            return "", score.reward, True, False, info
        parsed = parse_tool_calls(action)
        parts = [format_tool_response("error", {"error": f"malformed tool call: {e.message}"}) for e in parsed.errors]
        self.errors += len(parsed.errors)
        if not parsed.found:
            parts.append('No tool call or answer found. Call a tool with <tool_call>{"name": "search", "arguments": '
                         '{"query": "..."}}</tool_call>, or answer with <answer>...</answer>.')
        if parsed.calls:
            self.rounds += 1
        for number, call in enumerate(parsed.calls):
            if number >= self.max_calls_per_turn:
                result: dict[str, Any] = {"error": f"skipped: at most {self.max_calls_per_turn} calls per turn."}
            else:
                result = self._run_call(call)
            if "error" in result:
                self.errors += 1
            parts.append(format_tool_response(call.name[:60], result))
        return self._end_turn(parts, "turn")

    def _run_call(self, call: ToolCall) -> dict[str, Any]:
        """Run one tool call, counting it and keeping the passages it returned (for the evidence check)."""
        assert self.session is not None  # _advance runs only after reset opened the session
        self.calls += 1
        result = self.session.call(call.name, call.arguments)
        self.passages.extend(returned_passages(result))
        return result

    def _end_turn(self, parts: list[str], unit: str) -> StepResult:
        """The step result of a turn that did not answer: its tool responses joined, cut to the observation space."""
        observation = "\n".join(parts)
        if len(observation) > _MAX_OBSERVATION:  # stay inside the observation space; say so rather than cut silently
            note = f"\n[output cut: make fewer calls per {unit}]"
            observation = observation[: _MAX_OBSERVATION - len(note)] + note
        if self.turn >= self.max_turns:
            return observation, 0.0, False, True, {**self._step_info(), "truncated_by": "max_turns"}
        return observation, 0.0, False, False, self._step_info()

    def evidence_coverage(self) -> float:
        """The share of the evidence articles the agent has opened or searched with ``find``."""
        if self.task is None or self.session is None:
            return 0.0
        evidence = {e["doc_id"] for e in self.task.answer.get("evidence", [])}
        return round(len(evidence & self.session.read) / len(evidence), 4) if evidence else 1.0

    def _step_info(self) -> dict[str, Any]:
        return {"turn": self.turn, "rounds": self.rounds, "calls": self.calls, "errors": self.errors,
                "evidence_coverage": self.evidence_coverage(), "episode_id": self.episode_id}

    def _common_info(self) -> dict[str, Any]:
        info = super()._common_info()
        info["tools"] = json.loads(self._tools_json)  # fresh objects: the env checker rejects shared ones
        return {**info, **self._step_info()}


class SearchQAEnv(SearchEnv):
    """``SearchQA-v0``: :class:`SearchEnv` over a fixed mix of single-hop to multi-hop questions.

    ## Description
    The same world, tools and scoring as ``Search-v0``; each task's spec is drawn from a mix: chains of 1
    (35%), 2 (25%) and 3 (15%) hops, intersections (10%) and trees of 2 (10%) and 3 (5%) hops, at any
    dispersion. See :class:`SearchEnv` for the spaces, rewards, episode end and information.

    ## Action Space
    As ``Search-v0``.

    ## Observation Space
    As ``Search-v0``.

    ## Starting State
    As ``Search-v0``.

    ## Rewards
    As ``Search-v0``.

    ## Episode End
    As ``Search-v0``.

    ## Information
    As ``Search-v0``.

    ## Arguments
    ``world_size``, ``world_seed``, ``split``, ``max_turns``, ``max_calls_per_turn``, ``reward``,
    ``efficiency_weight``, ``budget_scale``, ``render_mode``.

    ## Version History
    * v1: with ``reward="f1"``, an answer longer than the gold earns no partial credit. Exact match unchanged.
    * v0: initial version.
    """

    default_env_id = "SearchQA-v1"

    config_options: ClassVar[frozenset[str]] = field_names(SearchConfig)  # no question options here

    def __init__(self, *, config: SearchConfig | None = None, split: str = "train", render_mode: str | None = None,
                 **options: Any) -> None:
        super().__init__(mix=True, config=configure(type(self).__name__, SearchConfig, config, options), split=split,
                         render_mode=render_mode)
