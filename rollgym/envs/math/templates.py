"""Templated MATH rows: the numbers a generator put into a problem, and fresh instances of its template.

A row written by a problem generator may carry a ``template`` field::

    {"id": "t0", "problem": "What is 7*4+3?", "answer": "31",
     "template": {"params": {"a": 7, "b": 4, "c": 3},
                  "instances": [{"params": {"a": 5, "b": 8, "c": 2}, "answer": "42"},
                                {"params": {"a": 9, "b": 3, "c": 6}, "answer": "33"}]}}

``params`` are the numbers of this problem by name (each must be written in the problem);
each instance is the same template with other numbers and its own answer. The field is never
shown to the agent (not in the prompt, not in ``info["task_meta"]``): :class:`MathToolEnv`
re-runs the agent's code with the instance's numbers in place of the problem's and asks
whether it prints the instance's answer (:mod:`rollgym.envs.math.evidence`).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from rollgym.core.errors import ConfigError

#: Fresh instances a check uses (the first ones of the row).
FRESH_INSTANCES = 2


@dataclass(frozen=True)
class FreshInstance:
    """One other instance of a problem's template: the problem's numbers mapped to its own, and its answer.

    Example:
        >>> FreshInstance({Decimal(7): Decimal(5)}, "42").numbers[Decimal(7)]
        Decimal('5')
    """

    numbers: dict[Decimal, Decimal]
    answer: str


def _number(value: Any) -> Decimal | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = Decimal(str(value).replace(",", ""))
    except InvalidOperation:
        return None
    return number if number.is_finite() else None


def _answer(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    text = str(int(value)) if isinstance(value, float) and value.is_integer() else str(value).strip()
    return text or None


def parse_template(value: Any, problem_numbers: list[Decimal], answer: str, where: str) -> tuple[FreshInstance, ...]:
    """The fresh instances of a row's ``template`` field, checked; raises one :class:`ConfigError` sentence.

    ``problem_numbers`` are the numbers written in the problem, ``answer`` its gold answer and ``where``
    names the row in errors (``"data.jsonl: row 3"``).

    Example:
        >>> parse_template({"params": {"a": 7}, "instances": [{"params": {"a": 5}, "answer": "10"}]},
        ...                [Decimal(7), Decimal(2)], "14", "row 0")[0].numbers
        {Decimal('7'): Decimal('5')}
    """
    if not isinstance(value, dict) or not isinstance(value.get("params"), dict) or not value["params"]:
        raise ConfigError(f"{where}: template must be an object with 'params' (the problem's numbers by name) "
                          "and 'instances'.")
    params: dict[str, Decimal] = {}
    for name, raw in value["params"].items():
        number = _number(raw)
        if number is None:
            raise ConfigError(f"{where}: template param {name!r} must be a number, got {raw!r}.")
        if number not in problem_numbers:
            raise ConfigError(f"{where}: template param {name!r} = {raw} is not a number written in the problem.")
        params[name] = number
    instances = value.get("instances")
    if not isinstance(instances, list) or not instances:
        raise ConfigError(f"{where}: template 'instances' must be a non-empty list of {{'params', 'answer'}} objects.")
    fresh: list[FreshInstance] = []
    for k, instance in enumerate(instances):
        label = f"{where}: template instance {k}"
        if not isinstance(instance, dict) or not isinstance(instance.get("params"), dict):
            raise ConfigError(f"{label} must be an object with 'params' and 'answer'.")
        if set(instance["params"]) != set(params):
            raise ConfigError(f"{label} must give exactly the params {sorted(params)}.")
        own = _answer(instance.get("answer"))
        if own is None:
            raise ConfigError(f"{label} has no answer (a string or a number).")
        if own == answer:
            raise ConfigError(f"{label} has the problem's own answer {own!r}; a fresh instance must answer otherwise.")
        numbers: dict[Decimal, Decimal] = {}
        for name, old in params.items():
            new = _number(instance["params"][name])
            if new is None:
                raise ConfigError(f"{label}: param {name!r} must be a number, got {instance['params'][name]!r}.")
            if numbers.setdefault(old, new) != new:  # the code's number cannot tell two equal params apart
                raise ConfigError(f"{label}: params equal in the problem ({old}) must stay equal in every instance.")
        if all(old == new for old, new in numbers.items()):
            raise ConfigError(f"{label} changes no number of the problem.")
        fresh.append(FreshInstance({old: new for old, new in numbers.items() if old != new}, own))
    return tuple(fresh)
