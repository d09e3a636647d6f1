"""Reference policies for the search envs: a scripted oracle and a random policy.

The oracle plays like a careful agent that knows the *structure* of the
question (``info["task_meta"]["plan"]``: the named entities and the relations to
follow) but not its answer: it issues real ``search``/``open``/``find`` calls,
reads the returned text, and recognises facts with the corpus' sentence
templates (:func:`~rollgym.envs.search.corpus.fact_patterns`). Facts missing from
an entity's own article are looked for in the articles that search returns.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Generator
from typing import Any

import numpy as np

from rollgym.core.toolcalls import tool_response_bodies
from rollgym.envs.search.corpus import fact_patterns, subject_patterns
from rollgym.envs.search.world import RELATIONS

Calls = list[tuple[str, dict[str, Any]]]
Solver = Generator[Calls | str, list[dict[str, Any]], None]

SEARCH_WORDS = {
    "region": "towns", "born_in": "born birthplace", "employer": "joined hired", "mentor": "pupils taught",
    "headquarters": "headquarters", "founder": "founded founder", "author": "wrote works",
    "publisher": "published catalogue", "location": "hosted took place", "organiser": "organised",
    "joined": "joined hired",
}
_EPISODES: OrderedDict[str, Solver] = OrderedDict()
_MAX_EPISODES = 4096
MAX_CALLS = 8  # the envs' default max_calls_per_turn


def parse_responses(observation: str) -> list[dict[str, Any]]:
    """The JSON results of every ``<tool_response>`` block in an observation, in order."""
    out = []
    for body in tool_response_bodies(observation):
        try:
            value = json.loads(body)
        except json.JSONDecodeError:
            value = {"error": body}
        out.append(value if isinstance(value, dict) else {"value": value})
    return out


def _read_article(title: str) -> Generator[Calls, list[dict[str, Any]], str]:
    """Open every page of an article; returns its full text ("" when it does not exist)."""
    first = (yield [("open", {"doc_id": title, "page": 1})])[0]
    if "error" in first:
        return ""
    pages = [first["text"]]
    if first["pages"] > 1:
        rest = yield [("open", {"doc_id": first["doc_id"], "page": p}) for p in range(2, first["pages"] + 1)]
        pages += [r.get("text", "") for r in rest]
    return "\n".join(pages)


def _fact(subject: str, fact: str) -> Generator[Calls, list[dict[str, Any]], str | None]:
    """The value (object title or year) of ``fact`` about the entity titled ``subject``."""
    relation = "employer" if fact == "joined" else fact
    group = "o" if fact in RELATIONS else "y"
    # where the fact would be stated if the subject's own article leaves it out: articles of the object's type
    object_kind = RELATIONS[relation][1] if relation in RELATIONS else None
    calls: Calls = [("open", {"doc_id": subject, "page": 1})]
    if object_kind:
        query = f"{subject} {SEARCH_WORDS.get(relation, '')}"
        calls.append(("search", {"query": query, "k": 20, "type": object_kind}))
    replies = yield calls
    first = replies[0]
    text = first.get("text", "")
    others = [r for r in (replies[1].get("results", []) if object_kind else []) if r["title"] != subject]

    def forward() -> str | None:
        match = next((m for p in fact_patterns(fact, subject) if (m := p.search(text))), None)
        return match.group(group) if match else None

    def inverse(title: str, sentence: str) -> str | None:
        match = next((m for p in fact_patterns(relation, subject, inverse_title=title) if (m := p.search(sentence))),
                     None)
        if match is None:
            return None
        return match.group("y") if fact == "joined" else title

    value = forward()
    if value is not None:
        return value
    for hit in others:  # search snippets are the best-matching sentences; they often state the fact
        value = inverse(hit["title"], hit.get("snippet", ""))
        if value is not None:
            return value
    pending = [("open", {"doc_id": first["doc_id"], "page": p}) for p in range(2, first.get("pages", 1) + 1)]
    while pending or others:
        batch = others[: max(0, MAX_CALLS - len(pending))]
        others = others[len(batch) :]
        replies = yield pending + [("find", {"doc_id": r["doc_id"], "text": subject}) for r in batch]
        text += "\n" + "\n".join(r.get("text", "") for r in replies[: len(pending)])
        pending = []
        value = forward()
        if value is not None:
            return value
        for hit, reply in zip(batch, replies[len(replies) - len(batch) :]):
            for found in reply.get("matches", []):
                value = inverse(hit["title"], found["sentence"])
                if value is not None:
                    return value
    return None


def _facts(subjects: list[str], fact: str) -> Generator[Calls, list[dict[str, Any]], dict[str, str | None]]:
    """A dated attribute (never remote) of several entities at once: their articles are read in parallel."""
    texts: dict[str, str] = {}
    for start in range(0, len(subjects), MAX_CALLS):
        batch = subjects[start : start + MAX_CALLS]
        firsts = yield [("open", {"doc_id": name, "page": 1}) for name in batch]
        rest = [(name, ("open", {"doc_id": r["doc_id"], "page": p})) for name, r in zip(batch, firsts)
                if "error" not in r for p in range(2, r["pages"] + 1)]
        texts.update({name: r.get("text", "") for name, r in zip(batch, firsts)})
        for chunk in range(0, len(rest), MAX_CALLS):
            part = rest[chunk : chunk + MAX_CALLS]
            replies = yield [call for _, call in part]
            for (name, _), reply in zip(part, replies):
                texts[name] += "\n" + reply.get("text", "")
    values: dict[str, str | None] = {}
    for name in subjects:
        match = next((m for p in fact_patterns(fact, name) if (m := p.search(texts.get(name, "")))), None)
        values[name] = match.group("y") if match else None
    return values


def _resolve(expr: dict[str, Any]) -> Generator[Calls, list[dict[str, Any]], str | None]:
    if "name" in expr:
        return str(expr["name"])
    subject = yield from _resolve(expr["of"])
    if subject is None:
        return None
    return (yield from _fact(subject, expr.get("rel") or expr["attr"]))


def _solve(plan: dict[str, Any]) -> Solver:
    if plan["topology"] == "chain":
        value = yield from _resolve(plan["target"])
        yield f"<answer>{value or 'unknown'}</answer>"
        return
    candidates: set[str] | None = None
    for c in [c for c in plan["constraints"] if "rel" in c]:
        value = yield from _resolve(c["value"])
        if value is None:
            break
        text = yield from _read_article(value)
        found = {m.group("s") for p in subject_patterns(c["rel"], value) for m in p.finditer(text)}
        candidates = found if candidates is None else candidates & found
    remaining = sorted(candidates or [])
    for c in [c for c in plan["constraints"] if "attr" in c]:
        years = yield from _facts(remaining, c["attr"])
        remaining = [name for name in remaining if years[name] == str(c["value"])]
    yield f"<answer>{remaining[0] if len(remaining) == 1 else 'unknown'}</answer>"


def _format(calls: Calls) -> str:
    return "\n".join("<tool_call>" + json.dumps({"name": n, "arguments": a}) + "</tool_call>" for n, a in calls)


def oracle_policy(observation: str, info: dict[str, Any]) -> str:
    """The oracle's next action: tool calls that follow the question's plan, then ``<answer>``."""
    key = str(info.get("episode_id", ""))
    solver = _EPISODES.get(key)
    if solver is None or info.get("turn", 0) == 0:
        solver = _solve(info["task_meta"]["plan"])
        _EPISODES[key] = solver
        while len(_EPISODES) > _MAX_EPISODES:
            _EPISODES.popitem(last=False)
        step = next(solver)
    else:
        try:
            step = solver.send(parse_responses(observation))
        except StopIteration:
            step = "<answer>unknown</answer>"
    if isinstance(step, str):
        _EPISODES.pop(key, None)
        return step
    return _format(step)


def random_policy(observation: str, info: dict[str, Any], rng: np.random.Generator) -> str:
    """A random well-formed action: a search, open or find call with random arguments, or a random answer."""
    words = re.findall(r"[A-Za-z]{3,}", observation) or ["archive"]
    choice = int(rng.integers(4))
    if choice == 0:
        query = " ".join(str(w) for w in rng.choice(words, size=min(3, len(words))))
        return _format([("search", {"query": query, "k": int(rng.integers(1, 10))})])
    if choice == 1:
        return _format([("open", {"doc_id": f"d{int(rng.integers(0, 2000)):05d}", "page": int(rng.integers(1, 3))})])
    if choice == 2:
        return _format([("find", {"doc_id": f"d{int(rng.integers(0, 2000)):05d}", "text": str(rng.choice(words))})])
    return f"<answer>{rng.choice(words)}</answer>"
