"""Reference policies of ``SearchParallel-v0``: a parallel oracle and a sequential one, equally accurate.

Both read the question's plan (``info["task_meta"]["plan"]``: the entities, the attribute and the order,
never the answer), open each entity's article page by page with real ``open`` calls, recognise the year
with the corpus' sentence templates, and answer with the earliest or latest. The parallel oracle opens the
next page of every article still missing its year in one round (HyperEyes' "search wider"); the sequential
one makes one call per round (searching "longer"). They make the same calls, so they are equally accurate,
and differ only in rounds: ``reference_rounds`` against ``sequential_rounds`` of ``task_meta``.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Generator
from typing import Any

from rollgym.envs.search.corpus import fact_patterns
from rollgym.envs.search.policies import parse_responses

Calls = list[tuple[str, dict[str, Any]]]
Solver = Generator[Calls | str, list[dict[str, Any]], None]
Policy = Callable[[str, dict[str, Any]], str]
PARALLEL_CALLS = 8  # the env's default max_calls_per_turn
_MAX_EPISODES = 4096


def solve_comparison(plan: dict[str, Any], per_round: int) -> Solver:
    """Yield rounds of at most ``per_round`` ``open`` calls (receiving their results), then the ``<answer>``."""
    attr, names = str(plan["attr"]), [str(n) for n in plan["entities"]]
    years: dict[str, int] = {}
    page = dict.fromkeys(names, 1)
    doc_ids: dict[str, str] = {}
    pending = list(names)
    while pending:
        batch, pending = pending[:per_round], pending[per_round:]
        replies = yield [("open", {"doc_id": doc_ids.get(n, n), "page": page[n]}) for n in batch]
        for name, reply in zip(batch, replies):
            if "error" in reply or not isinstance(reply.get("text"), str):
                continue  # no such article: this entity cannot win
            doc_ids[name] = str(reply.get("doc_id", name))
            match = next((m for p in fact_patterns(attr, name) if (m := p.search(reply["text"]))), None)
            if match is not None:
                years[name] = int(match.group("y"))
            elif page[name] < int(reply.get("pages", 1)):
                page[name] += 1
                pending.append(name)
    if not years:
        yield "<answer>unknown</answer>"
        return
    pick = min if plan.get("order") == "first" else max
    yield f"<answer>{pick(years, key=lambda n: years[n])}</answer>"


def _format(calls: Calls) -> str:
    return "\n".join("<tool_call>" + json.dumps({"name": n, "arguments": a}) + "</tool_call>" for n, a in calls)


def comparison_oracle(per_round: int) -> Policy:
    """A policy playing :func:`solve_comparison` with ``per_round`` calls per action, one solver per episode."""
    episodes: OrderedDict[str, Solver] = OrderedDict()

    def policy(observation: str, info: dict[str, Any]) -> str:
        key = str(info.get("episode_id", ""))
        solver = episodes.get(key)
        try:
            if solver is None or info.get("turn", 0) == 0:
                solver = solve_comparison(info["task_meta"]["plan"], per_round)
                episodes[key] = solver
                while len(episodes) > _MAX_EPISODES:
                    episodes.popitem(last=False)
                step = next(solver)
            else:
                step = solver.send(parse_responses(observation))
        except (StopIteration, KeyError, TypeError):
            step = "<answer>unknown</answer>"
        if isinstance(step, str):
            episodes.pop(key, None)
            return step
        return _format(step)

    return policy


_parallel = comparison_oracle(PARALLEL_CALLS)
_sequential = comparison_oracle(1)


def parallel_oracle(observation: str, info: dict[str, Any]) -> str:
    """The parallel oracle's next action: every pending look-up of this round at once (up to 8), then the answer."""
    return _parallel(observation, info)


def sequential_oracle(observation: str, info: dict[str, Any]) -> str:
    """The sequential oracle's next action: one look-up per action, then the answer."""
    return _sequential(observation, info)
