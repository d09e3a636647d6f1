"""What a tool-use task (ToolWorld, ToolGen, UserSim) requires, and its grading with the shared state-diff grader.

A template states a task's required end state as an :class:`Expectation`:
rows to update (with normalised values or matchers), rows to delete, rows to
insert, and for questions the answer. :func:`grade` turns it into an allow-list
of :class:`~rollgym.verifiers.statediff.Rule` s and grades the episode with
:mod:`rollgym.verifiers.statediff` and :mod:`rollgym.verifiers.rubric`, which diff **every table of every app**
against the base world (the "before" state, which no tool can reach).
The episode passes only when

* every required change happened (criterion ``required_changes``),
* for questions, the answer is exactly the expected value (``answer``): listing
  several candidates fails,
* and nothing else changed anywhere in the apps, apart from what the apps
  do as a side effect of permitted work (reading marks mail read, a checked
  transfer moves balances, a checked order moves stock): the gate
  ``apps_unchanged_beyond_task``.

The reward is binary: 1.0 when all pass, else 0.0. Everything here is a pure function of the
expectation, the diff and the answer; reading the apps' databases (the base snapshots of a
ToolWorld world) stays in :mod:`rollgym.envs.tools.checker`.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from rollgym.core.task import Score
from rollgym.verifiers.rubric import Criterion, GradeContext, Rubric, state_rubric
from rollgym.verifiers.statediff import (
    Matcher,
    Rule,
    Snapshot,
    StateDiff,
    added,
    changed,
    deleted,
    diff_against,
    normalise,
)

Key = tuple[str, str, int]
Row = dict[str, Any]
AnswerKind = Literal["none", "number", "text", "list", "datetime"]


def contains(*parts: str) -> Matcher:
    """A field matcher: the text contains every part (normalised)."""
    return lambda value: isinstance(value, str) and all(normalise(p) in normalise(value) for p in parts)


def json_set(items: list[str] | set[str]) -> Matcher:
    """A field matcher: a JSON list holding exactly these strings, in any order and case."""
    wanted = {normalise(i) for i in items}

    def match(value: Any) -> bool:
        try:
            got = json.loads(value) if isinstance(value, str) else value
            return isinstance(got, list) and {normalise(i) for i in got} == wanted
        except (ValueError, TypeError):
            return False

    return match


@dataclass
class Expectation:
    """The changes a task requires and, for questions, the answer.

    ``updates`` maps a row key to the required new values of some fields;
    ``deletes`` holds row keys that must be gone; ``inserts`` lists new rows as
    ``(app, table, {field: value or matcher})``. Values compare after
    :func:`normalise`.
    """

    updates: dict[Key, Row] = field(default_factory=dict)
    deletes: set[Key] = field(default_factory=set)
    inserts: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    answer: Any = None
    answer_kind: AnswerKind = "none"


_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{1,2}:\d{2}")


def _split_list(text: str) -> list[str]:
    parts = re.split(r"[,;\n]|\band\b", text)
    return [p.strip(" .\"'-*") for p in parts if p.strip(" .\"'-*")]


def check_answer(kind: AnswerKind, expected: Any, answer: str | None) -> bool:
    """Whether ``answer`` states exactly the expected value (and no competing one)."""
    if kind == "none":
        return True
    if not isinstance(answer, str) or len(answer) > 2000:
        return False
    if kind == "number":
        found = {round(float(n.replace(",", "")), 2) for n in _NUMBER.findall(answer)}
        return len(found) == 1 and abs(found.pop() - float(expected)) < 0.005
    if kind == "datetime":
        try:
            stamps = {datetime.strptime(d.replace("T", " "), "%Y-%m-%d %H:%M") for d in _DATETIME.findall(answer)}
        except ValueError:  # a stamp such as 2025-13-45 99:99 names no time, so the answer states none exactly
            return False
        return stamps == {datetime.strptime(expected, "%Y-%m-%d %H:%M")}
    if kind == "text":
        return normalise(answer.strip(" .\"'")) == normalise(expected)
    return {normalise(p) for p in _split_list(answer)} == {normalise(e) for e in expected}




# -- grading with the shared state-diff grader ----------------------------------------

GATE = "apps_unchanged_beyond_task"
"""The whole-world gate: no row of any table of the six apps changed beyond what the task asks or tolerates."""

CONSTANT_ANSWERS = ("", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "0.00", "yes", "no", "none",
                    "[]", "{}", "true", "false", "null", "n/a", "nothing", "nobody", "no one", "unknown")
"""Answers an agent could give without looking at anything; ToolWorld-v1 draws no task that one of them solves."""


def _tolerated(version: int) -> list[Rule]:
    """Changes the apps make as a side effect of permitted work (their cause is checked elsewhere)."""
    rules = [
        changed("payments.accounts", columns={"balance_cents"}, note="balances move with checked transfers"),
        changed("shopping.products", columns={"stock"}, note="stock moves with checked orders"),
        added("email.mailbox", note="each recipient of a checked message gets an inbox copy"),
    ]
    if version == 0:  # -v0 let any note's edit stamp change and mail be marked read or unread
        return [*rules, changed("email.mailbox", columns={"is_read"}), changed("notes.notes", columns={"updated_at"})]
    # -v1: reading marks mail read (never unread); a note's stamp moves only with a change the task asks for
    return [*rules, changed("email.mailbox", to={"is_read": 1}, note="reading marks mail read")]


def required_rules(expectation: Expectation, companions: Callable[[str, str], set[str]] | None = None) -> list[Rule]:
    """The rules of a task's required changes (``Expectation``), over tables named ``<app>.<table>``.

    ``companions(app, table)`` names columns an asked-for update may change besides (a note's edit stamp).
    """
    rules: list[Rule] = []
    for (app, table, row_id), fields in expectation.updates.items():
        also = companions(app, table) if companions is not None else set()
        rules.append(changed(f"{app}.{table}", {"id": row_id}, to=fields, columns=also, required=True,
                             note=f"{app}.{table} row {row_id} was not changed as required"))
    for app, table, row_id in sorted(expectation.deletes):
        rules.append(deleted(f"{app}.{table}", {"id": row_id}, required=True,
                             note=f"{app}.{table} row {row_id} was not deleted"))
    for app, table, fields in expectation.inserts:
        rules.append(added(f"{app}.{table}", fields, required=True,
                           note=f"no new {app}.{table} row matches {sorted(fields)}"))
    return rules


def _note_stamp(app: str, table: str) -> set[str]:
    return {"updated_at"} if (app, table) == ("notes", "notes") else set()


def expectation_rules(expectation: Expectation, version: int = 1) -> list[Rule]:
    """The allow-list of a task: its required changes (``Expectation``) and the apps' tolerated side effects."""
    return required_rules(expectation, _note_stamp if version >= 1 else None) + _tolerated(version)


def diff_bases(bases: Mapping[str, Snapshot], after: Mapping[str, sqlite3.Connection],
               touched: set[tuple[str, str]] | None = None) -> StateDiff:
    """Every row added, changed or deleted in any table of any app, between the apps' base snapshots and an
    episode's databases; tables are named ``"<app>.<table>"``, e.g. ``"email.mailbox"``.

    ``touched`` (an episode :class:`~rollgym.envs.tools.api.Session`'s record of every ``(app, table)`` that an
    INSERT, UPDATE or DELETE statement reached, kept by its SQLite authorizer, which sees every statement and
    forbids triggers) skips reading tables that cannot have changed; ``None`` reads every table. Both give the
    same diff.
    """
    wanted = None if touched is None else {app: {t for a, t in touched if a == app} for app in bases}
    return diff_against(bases, after, wanted)


def answer_criterion(expectation: Expectation) -> Criterion | None:
    """The ``answer`` criterion of a question (the answer states exactly the expected value); ``None`` when the
    task asks none."""
    if expectation.answer_kind == "none":
        return None
    kind, value = expectation.answer_kind, expectation.answer
    return Criterion("answer", 1.0, lambda ctx: check_answer(kind, value, ctx.answer),
                     f"the answer states exactly the expected {kind}")


def expectation_rubric(expectation: Expectation, rules: list[Rule], gate_description: str) -> Rubric:
    """The criteria of a task: ``required_changes`` (from ``rules``), the ``answer`` for questions, and the
    whole-world gate :data:`GATE`. Binary: 1.0 when every criterion passes, else 0.0."""
    return state_rubric(rules, goal="required_changes", gate=GATE, gate_description=gate_description,
                        answer=answer_criterion(expectation), partial_credit=False)


def rubric(expectation: Expectation, version: int = 1) -> Rubric:
    """The task's criteria: the required changes, the answer (for questions) and the whole-world gate."""
    return expectation_rubric(expectation, expectation_rules(expectation, version),
                              "no row of any app changed beyond what the task asks or tolerates")


def grade(expectation: Expectation, diff: StateDiff, answer: str | None, version: int = 1) -> Score:
    """Grade one episode: required changes, collateral damage anywhere in the world, and the answer."""
    return rubric(expectation, version).grade(GradeContext(answer=answer, diff=diff))


def is_degenerate(expectation: Expectation) -> bool:
    """Whether doing nothing, with no answer or one of :data:`CONSTANT_ANSWERS`, would pass the task."""
    if expectation.updates or expectation.deletes or expectation.inserts:
        return False
    return any(check_answer(expectation.answer_kind, expectation.answer, a) for a in (None, *CONSTANT_ANSWERS))


def legacy_verdict(score: Score) -> dict[str, Any]:
    """The ``info["verdict"]`` dict of ToolWorld-v0 (deprecated: read ``correct`` and ``details``)."""
    criteria = score.details.get("criteria", {})
    failures = [r for reasons in score.details.get("reasons", {}).values() for r in reasons]
    if criteria.get("answer") is False:
        failures.append("the answer is missing or wrong")
    return {"success": score.correct, "goal": bool(criteria.get("required_changes", False)),
            "collateral": bool(criteria.get(GATE, False)), "answer": bool(criteria.get("answer", True)),
            "failures": failures[:20]}
