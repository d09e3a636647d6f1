"""``SearchParallel-v0``: comparison questions whose look-ups are independent, so they can be made in one round."""

from __future__ import annotations

import json
from typing import Any

from rollgym.core.config import check_int
from rollgym.core.difficulty import Difficulty, Level
from rollgym.core.env import StepResult
from rollgym.core.extraction import extract_tag
from rollgym.core.task import Task
from rollgym.core.toolcalls import ToolCall, format_tool_response, parse_tool_calls
from rollgym.envs.search.comparison import ComparisonTaskSource
from rollgym.envs.search.env import SearchEnv
from rollgym.envs.search.world import DEFAULT_SIZE

_MAX_OBSERVATION = 60_000
LEVELS = (("two", 2), ("three", 3), ("five", 5), ("eight", 8))


def call_key(call: ToolCall) -> str:
    """What makes two calls the same call: the name and the arguments, key order aside."""
    return call.name + "\x00" + json.dumps(call.arguments, sort_keys=True, ensure_ascii=False, default=str)


class ParallelSearchEnv(SearchEnv):
    """Answer "which of A, B and C came first?" by looking each one up, all in one round if you like.

    ## Description
    The world, corpus and tools of ``Search-v1``. Each question names 2 to 8 entities of one kind and asks
    which of them comes first or last by a dated attribute (born, founded, published, held); see
    :mod:`rollgym.envs.search.comparison`. The look-ups are independent, so an agent that issues them in
    parallel (several calls in one action) needs ``task_meta["reference_rounds"]`` tool rounds, one that
    issues one call per action ``task_meta["sequential_rounds"]``.

    ## Action Space
    Text (``TextSpace``): one or more ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks (or a
    JSON list of calls), all run in this round, in order; or ``<answer>...</answer>``, which ends the episode
    (its tool calls are not run). At most ``max_calls_per_turn`` distinct calls run per round: the rest are
    not run and come back as one-sentence errors. A call identical to an earlier one of the same round (same
    name and arguments) is not run again and counts once.

    ## Observation Space
    Text: the question, then one ``<tool_response name="...">`` block per call of the action, in order.

    ## Starting State
    The cached world ``(world_size, world_seed)`` and a comparison question drawn by index.
    ``reset(options={"difficulty": k})`` draws it from level ``k``: 2, 3, 5 or 8 entities (``two`` to ``eight``).

    ## Rewards
    0.0 per tool round. On the answer, exact match (1.0 or 0.0) against the gold name and its aliases. With
    ``efficiency_weight`` w > 0, a *correct* answer earns ``(1 - w) + w * min(1, budget / rounds)`` (TRACE-like:
    ``budget = budget_scale * reference_rounds``, lowered during training to tighten it); a wrong answer earns
    0.0 whatever its rounds, so fewer rounds pay more only at equal accuracy and a correct answer never scores
    below a wrong one. Calls per round cost nothing: only rounds count.

    ## Episode End
    Terminated by an action with ``<answer>``. Truncated (reward 0.0) after ``max_turns`` actions.

    ## Information
    As ``Search-v1`` (``turn``, ``rounds``, ``calls``, ``errors``, ``evidence_coverage``, ``episode_id``, the
    score fields and ``verified`` at the end), plus ``tool_calls`` (distinct calls run; ``calls`` is the same
    number), ``duplicate_calls`` (repeats within a round, not run) and ``skipped_calls`` (beyond the cap, not
    run). ``task_meta`` adds ``entities``, ``reference_rounds`` and ``sequential_rounds``.

    ## Arguments
    ``min_entities`` (3) and ``max_entities`` (5), from 2 to 8; ``world_size`` (2000), ``world_seed`` (0),
    ``split``, ``max_turns`` (20), ``max_calls_per_turn`` (8), ``efficiency_weight`` (0.0: off),
    ``budget_scale`` (1.0), ``render_mode``.

    ## Version History
    * v0: initial version.
    """

    default_env_id = "SearchParallel-v0"

    def __init__(self, min_entities: int = 3, max_entities: int = 5, world_size: int = DEFAULT_SIZE,
                 world_seed: int = 0, split: str = "train", max_turns: int = 20, max_calls_per_turn: int = 8,
                 efficiency_weight: float = 0.0, budget_scale: float = 1.0, render_mode: str | None = None) -> None:
        check_int("min_entities", min_entities)
        check_int("max_entities", max_entities)
        self._entities = (min_entities, max_entities)
        self.duplicate_calls = self.skipped_calls = 0
        super().__init__(world_size=world_size, world_seed=world_seed, split=split, max_turns=max_turns,
                         max_calls_per_turn=max_calls_per_turn, reward="em", efficiency_weight=efficiency_weight,
                         budget_scale=budget_scale, render_mode=render_mode)

    def _make_source(self, env_id: str) -> ComparisonTaskSource:  # type: ignore[override]
        _specs, world_size, world_seed = self._source_args
        low, high = self._entities
        return ComparisonTaskSource(world_size, world_seed, low, high, env_id=env_id)

    @property
    def difficulty(self) -> Difficulty:
        """Levels by the number of entities compared: 2, 3, 5 and 8 (the default 3-5 mix is none of them)."""
        levels = tuple(Level(name, {"entities": k}, f"{k} entities to compare") for name, k in LEVELS)
        return Difficulty(levels, default=None, grows="independent look-ups per question (entities compared)")

    def _level_source(self, env_id: str, level: Level) -> ComparisonTaskSource:  # type: ignore[override]
        _specs, world_size, world_seed = self._source_args
        k = int(level.knobs["entities"])
        return ComparisonTaskSource(world_size, world_seed, k, k, env_id=env_id)

    def _start(self, task: Task) -> str:
        prompt = super()._start(task)
        self.duplicate_calls = self.skipped_calls = 0
        return prompt

    def _advance(self, action: str) -> StepResult:
        if extract_tag(action, "answer") is not None:
            return super()._advance(action)  # scores with rounds; a wrong answer is 0.0 at any rounds
        assert self.session is not None and self.task is not None
        self.turn += 1
        parsed = parse_tool_calls(action)
        parts = [format_tool_response("error", {"error": f"malformed tool call: {e.message}"}) for e in parsed.errors]
        self.errors += len(parsed.errors)
        if not parsed.found:
            parts.append('No tool call or answer found. Call tools with <tool_call>{"name": "search", "arguments": '
                         '{"query": "..."}}</tool_call> blocks (several per reply run together), or answer with '
                         "<answer>...</answer>.")
        if parsed.calls:
            self.rounds += 1
        seen: dict[str, int] = {}
        for number, call in enumerate(parsed.calls, start=1):
            key = call_key(call)
            result: dict[str, Any]
            if key in seen:
                self.duplicate_calls += 1
                result = {"error": f"call {number} repeats call {seen[key]} of this round; it was not run again."}
            elif len(seen) >= self.max_calls_per_turn:
                self.skipped_calls += 1
                result = {"error": f"call {number} was not run: at most {self.max_calls_per_turn} calls per round; "
                                   "send it in the next round."}
            else:
                seen[key] = number
                result = self._run_call(call)
                if "error" in result:
                    self.errors += 1
            parts.append(format_tool_response(call.name[:60], result))
        return self._end_turn(parts, "round")

    def _step_info(self) -> dict[str, Any]:
        info = super()._step_info()
        return {**info, "tool_calls": self.calls, "duplicate_calls": self.duplicate_calls,
                "skipped_calls": self.skipped_calls}
