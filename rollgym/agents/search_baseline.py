"""A scripted retrieve-and-read baseline for the search envs (``Search-v1``, ``SearchQA-v1``).

It does what a simple pipeline would: search with the question's own words,
open the first page of the top documents, and pick the candidate answer (a
linked name ``[[...]]``, or a year when the question asks for one) whose
sentence shares the most words with the question. It reads one round deep, so
it handles single-hop questions whose fact sits near the top of an article and
falls apart as hops and evidence dispersion grow; the search envs' tests use
it to show that difficulty is real.
"""

from __future__ import annotations

import re
from typing import Any

from rollgym.core.toolcalls import ToolCall
from rollgym.envs.search.policies import parse_responses

_QUESTION_WORDS = frozenset("which who what where when whom whose year did does was were is in of the a an and "
                            "under".split())
_TOKEN = re.compile(r"[a-z0-9]+")
_LINK = re.compile(r"\[\[([^\]]+)\]\]")
_YEAR = re.compile(r"\b(1[0-9]{3})\b")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n")


def _words(text: str) -> set[str]:
    return {w for w in _TOKEN.findall(text.lower()) if w not in _QUESTION_WORDS}


def _calls(calls: list[ToolCall]) -> str:
    return "\n".join(call.to_hermes() for call in calls)


def best_candidate(question: str, texts: list[str], titles: list[str] | None = None) -> str | None:
    """The candidate answer in ``texts`` whose sentence overlaps ``question`` most (first on ties).

    Candidates are linked names, or years when the question asks "what year"; ``titles[i]`` (the article
    that ``texts[i]`` comes from) is a candidate too for the sentences of that text. Names that the question
    itself contains are skipped.

    Example:
        >>> best_candidate("Where was Ana Vel born?", ["Ana Vel was born in [[Kor]]. She visited [[Tam]]."])
        'Kor'
    """
    wants_year = "year" in question.lower()
    asked = _words(question)
    lowered = question.lower()
    best: tuple[int, str] | None = None
    for i, text in enumerate(texts):
        title = titles[i] if titles and i < len(titles) else None
        for sentence in _SENTENCE.split(text):
            overlap = len(asked & _words(_LINK.sub(" ", sentence)))
            found = _YEAR.findall(sentence) if wants_year else _LINK.findall(sentence)
            if title and not wants_year and _LINK.search(sentence):
                found = [*found, title]
            for candidate in found:
                if candidate.lower() in lowered:
                    continue
                if best is None or overlap > best[0]:
                    best = (overlap, candidate)
    return best[1] if best else None


class SearchBaselineAgent:
    """Retrieve-and-read: one search with the question's words, read the top pages, pattern-match an answer.

    Example:
        >>> import gymnasium as gym, rollgym
        >>> env = gym.make("Search-v1", difficulty="easy")
        >>> agent = SearchBaselineAgent()
        >>> obs, info = env.reset(seed=0)
        >>> done = False
        >>> while not done:
        ...     obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
        ...     done = terminated or truncated
    """

    name = "search-baseline"

    def __init__(self, top_k: int = 5, read: int = 3) -> None:
        self.top_k, self.read = top_k, read
        self.question = ""
        self.snippets: list[tuple[str, str]] = []

    def reset(self, seed: int | None = None) -> None:
        """Forget the last episode (the agent is deterministic)."""
        self.question = ""
        self.snippets = []

    def act(self, observation: str, info: dict[str, Any]) -> str:
        """Search on the first turn, open the top documents on the second, answer on the third."""
        turn = int(info.get("turn", 0))
        if turn == 0 or not self.question:
            self.question = observation.split("\n\n")[0]
            self.snippets = []
            query = " ".join(sorted(_words(self.question), key=self.question.lower().find))
            return _calls([ToolCall("search", {"query": query or self.question[:200], "k": self.top_k})])
        responses = parse_responses(observation)
        results = next((r["results"] for r in responses if "results" in r), None)
        if results is not None:
            if not results:
                return "<answer>unknown</answer>"
            self.snippets = [(str(r.get("title", "")), str(r.get("snippet", ""))) for r in results]
            # the first two pages of the best hit, the first page of the next ones
            opens = [ToolCall("open", {"doc_id": results[0]["doc_id"], "page": 2})]
            opens += [ToolCall("open", {"doc_id": r["doc_id"], "page": 1}) for r in results[: self.read]]
            return _calls(opens)
        pages = [(str(r.get("title", "")), r["text"]) for r in responses if isinstance(r.get("text"), str)]
        pages = pages[1:] + pages[:1]  # page 1 of the best hit before its page 2
        sources = pages + self.snippets
        answer = best_candidate(self.question, [t for _, t in sources], [title for title, _ in sources])
        return f"<answer>{answer or 'unknown'}</answer>"
