"""Scoring a search answer: exact match and token F1 against the normalised gold and its aliases.

Normalisation (SQuAD-style): lower case, punctuation removed, the articles
``a``, ``an``, ``the`` dropped, whitespace collapsed. The main reward is exact
match (0 or 1); token F1 is reported in ``details`` and becomes the reward only
with ``reward="f1"``. Partial credit goes only to an answer no longer than the
gold it is compared with (``f1_credit``): a hedge that lists the gold among
other candidates ("Kor or Tam", "Kor, Tam, Vel") or pastes the question's words
is longer than any gold name, so it earns 0 rather than a share of the F1. An
optional efficiency term scales a correct answer's reward by how its tool rounds
compare with a reference budget.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Any

from rollgym.core.extraction import extract_tag
from rollgym.core.task import Score

MAX_ANSWER_CHARS = 300
_PUNCT = re.compile(f"[{re.escape(string.punctuation)}‘’“”]")
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """The comparable form of an answer.

    Example:
        >>> normalize_answer("  The Ostrel-Institute! ")
        'ostrel institute'
    """
    text = _PUNCT.sub(" ", text.lower())
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(prediction: str, gold: str) -> float:
    """Token-level F1 between two normalised answers."""
    pred, ref = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def f1_credit(prediction: str, gold: str) -> float:
    """Token F1, but 0 for a prediction with more tokens than ``gold`` (a list of candidates or a sentence).

    Example:
        >>> round(f1_credit("Ana", "Ana Vel"), 4), f1_credit("Ana Vel or Tam", "Ana Vel")
        (0.6667, 0.0)
    """
    if len(normalize_answer(prediction).split()) > len(normalize_answer(gold).split()):
        return 0.0
    return token_f1(prediction, gold)


def efficiency(rounds: int, budget: float) -> float:
    """1.0 within ``budget`` tool rounds, then ``budget / rounds``."""
    if budget <= 0:
        return 0.0
    return 1.0 if rounds <= budget else budget / rounds


def score_answer(answer: dict[str, Any], response: str, *, reward: str = "em", rounds: int = 0,
                 budget: float | None = None, efficiency_weight: float = 0.0, hedge_guard: bool = True) -> Score:
    """Score a final action holding ``<answer>...</answer>``; never raises on model text.

    ``answer`` is the task's hidden answer dict (``text`` and ``aliases``). With
    ``efficiency_weight`` w > 0 and a ``budget``, reward = base * ((1 - w) + w * efficiency(rounds, budget)).
    ``hedge_guard=False`` is the -v0 scoring, in which ``reward="f1"`` paid raw token F1 to any answer.
    """
    parsed = extract_tag(response, "answer") if isinstance(response, str) else None
    if parsed is None:
        return Score.fail("no_answer")
    if len(parsed) > MAX_ANSWER_CHARS:
        return Score.fail("malformed", parsed=parsed[:MAX_ANSWER_CHARS], reason="answer too long")
    golds = [answer["text"], *answer.get("aliases", [])]
    norm = normalize_answer(parsed)
    exact = any(norm == normalize_answer(g) for g in golds) and bool(norm)
    f1 = max(token_f1(parsed, g) for g in golds)
    credit = 1.0 if exact else max((f1_credit if hedge_guard else token_f1)(parsed, g) for g in golds)
    base = 1.0 if exact else (credit if reward == "f1" else 0.0)
    eff = efficiency(rounds, budget) if budget is not None else 1.0
    value = base * ((1.0 - efficiency_weight) + efficiency_weight * eff) if efficiency_weight > 0 else base
    details = {"exact_match": float(exact), "f1": round(f1, 4), "f1_credit": round(credit, 4),
               "efficiency": round(eff, 4)}
    if exact:
        return Score(value, True, parsed, None, details)
    return Score(value, False, parsed, "wrong", details)


MAX_VERIFICATION_PASSAGES = 2_000


def returned_passages(result: dict[str, Any]) -> list[tuple[str, str]]:
    """The ``(doc_id, text)`` passages a tool result shows the agent: search snippets, a page, ``find`` sentences."""
    out: list[tuple[str, str]] = []
    if "error" in result:
        return out
    for hit in result.get("results") or []:
        out.append((str(hit.get("doc_id", "")), f"{hit.get('title', '')}. {hit.get('snippet', '')}"))
    if isinstance(result.get("text"), str) and "page" in result:
        out.append((str(result.get("doc_id", "")), result["text"]))
    for match in result.get("matches") or []:
        out.append((str(result.get("doc_id", "")), str(match.get("sentence", ""))))
    return out


def answer_in_passages(answer: Any, passages: list[tuple[str, str]]) -> dict[str, Any]:
    """Where the normalised ``answer`` appears, as whole words, in the passages (T^3RL-style evidence).

    Example:
        >>> answer_in_passages("Kor", [("d1", "Ana Vel was born in Kor."), ("d2", "Korvath")])["found_in"]
        ['d1']
    """
    evidence: dict[str, Any] = {"method": "retrieved_passage", "passages": len(passages), "found_in": []}
    norm = normalize_answer(answer) if isinstance(answer, str) else ""
    if not norm:
        return evidence
    needle = f" {norm} "
    found: list[str] = []
    for doc_id, text in passages[-MAX_VERIFICATION_PASSAGES:]:
        if needle in f" {normalize_answer(text)} " and doc_id not in found:
            found.append(doc_id)
    evidence["found_in"] = found[:20]
    return evidence
