"""Verifier of Countdown answers: an arithmetic expression that must reach a target.

The answer is the content of the last ``<answer>...</answer>`` in the response
(never the whole response). It must be one arithmetic expression over the
offered numbers, optionally followed by ``= <target>``:

* Allowed characters: digits, ``+ - * /``, parentheses, spaces and tabs, and one
  ``=``. ``×``, ``÷`` and ``−`` (U+2212) are read as ``*``, ``/`` and ``-``.
* Allowed syntax: binary ``+ - * /`` and integer literals. Unary signs
  (``-3``, ``+3``), ``**``, ``//``, ``%``, decimals, names, calls and several
  expressions at once are rejected, so a number can only enter the expression
  as one of the offered numbers.
* Arithmetic is exact (:class:`fractions.Fraction`): intermediate results may
  be fractions or negative, and only the final value must equal the target.
* ``= N`` after the expression is allowed when ``N`` is the target; any other
  right-hand side is rejected.
* Usage rule ``"exactly"``: every offered number is used exactly as many times
  as it is offered. ``"at_most"``: no number is used more often than offered.

Model text is parsed with :func:`ast.parse` after the character whitelist and
walked with a node whitelist; nothing is ever evaluated by Python. The answer
is capped at :data:`MAX_ANSWER_CHARS` characters and the parser's nesting
limit bounds the tree, so a verdict always comes back in well under a
millisecond.

Errors (``Score.error``): ``"no_answer"`` (no or empty ``<answer>`` tag),
``"too_long"``, ``"malformed"`` (characters or syntax outside the grammar),
``"illegal"`` (an operator the task does not allow, a number not offered, a
number used too often, or one left out under ``"exactly"``),
``"division_by_zero"``, and ``"wrong"`` (a valid expression with another
value). ``details["reason"]`` says what was wrong in one sentence. The reward
is binary: 1.0 for a correct answer, else 0.0.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property, lru_cache
from typing import Any, TypeGuard

from rollgym.core.errors import ConfigError
from rollgym.core.extraction import extract_tag
from rollgym.core.task import Score, Task

OPERATORS: tuple[str, ...] = ("+", "-", "*", "/")
USAGES: tuple[str, ...] = ("exactly", "at_most")
MAX_ANSWER_CHARS = 1000
MAX_TASK_NUMBERS = 64

_ALIASES = str.maketrans({"×": "*", "÷": "/", "−": "-"})
_ALLOWED_CHARS = frozenset("0123456789+-*/() \t=")
_DIGIT_RUN = re.compile(r"[0-9]+")
_AST_OPERATORS: dict[type[ast.operator], str] = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}


@dataclass(frozen=True)
class CountdownRules:
    """The public facts of a Countdown task that decide whether an answer is right.

    Attributes:
        numbers: The offered numbers, with repeats.
        target: The value to reach.
        operators: The allowed subset of ``+ - * /``.
        usage: ``"exactly"`` (every number used exactly once) or ``"at_most"``.
    """

    numbers: tuple[int, ...]
    target: int
    operators: frozenset[str]
    usage: str

    @cached_property
    def sorted_numbers(self) -> list[int]:
        """The offered numbers in ascending order."""
        return sorted(self.numbers)

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> CountdownRules:
        """Read the rules from a task's ``meta``; raise :class:`ConfigError` if they are incomplete.

        Example:
            >>> CountdownRules.from_meta({"numbers": [3, 8], "target": 24}).usage
            'exactly'
        """
        numbers = meta.get("numbers")
        target = meta.get("target")
        if not isinstance(numbers, (list, tuple)) or not 1 <= len(numbers) <= MAX_TASK_NUMBERS:
            raise ConfigError(f"A Countdown task needs meta['numbers'], a list of 1 to {MAX_TASK_NUMBERS} integers.")
        if not all(_is_int(n) and n > 0 for n in numbers):
            raise ConfigError(f"meta['numbers'] must be positive integers, got {numbers!r}.")
        if not _is_int(target):
            raise ConfigError(f"A Countdown task needs an integer meta['target'], got {target!r}.")
        operators = meta.get("operators", OPERATORS)
        if isinstance(operators, str):
            operators = tuple(operators.replace(" ", "").replace(",", ""))
        if not isinstance(operators, Iterable) or not set(operators) <= set(OPERATORS) or not set(operators):
            raise ConfigError(f"meta['operators'] must be a non-empty subset of + - * /, got {operators!r}.")
        usage = meta.get("usage", "exactly")
        if usage not in USAGES:
            raise ConfigError(f"meta['usage'] must be 'exactly' or 'at_most', got {usage!r}.")
        return cls(tuple(int(n) for n in numbers), int(target), frozenset(operators), str(usage))


def rules_of(task: Task) -> CountdownRules:
    """The rules of ``task``, cached by value: a training run verifies many responses per task.

    Raises:
        ConfigError: if ``task.meta`` does not describe a Countdown task.
    """
    meta = task.meta
    try:
        key = (tuple(meta["numbers"]), meta["target"], tuple(meta.get("operators", OPERATORS)), meta.get("usage"))
        hash(key)
    except (KeyError, TypeError):
        return CountdownRules.from_meta(meta)  # raises the clear error
    return _cached_rules(key)


@lru_cache(maxsize=4096)
def _cached_rules(key: tuple[tuple[Any, ...], Any, tuple[Any, ...], Any]) -> CountdownRules:
    numbers, target, operators, usage = key
    meta = {"numbers": list(numbers), "target": target, "operators": operators}
    return CountdownRules.from_meta(meta if usage is None else {**meta, "usage": usage})


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


class _Rejected(Exception):
    """An answer failed a check; carries the error label and a one-sentence reason."""

    def __init__(self, error: str, reason: str) -> None:
        super().__init__(reason)
        self.error = error
        self.reason = reason


def verify_countdown(task: Task, response: str) -> Score:
    """Score a Countdown response: 1.0 if its ``<answer>`` expression reaches the target under the task's rules.

    A pure function of ``task.meta`` (numbers, target, operators, usage) and the
    response; ``task.answer`` is not used. It never raises on model output.

    Raises:
        ConfigError: if ``task.meta`` does not describe a Countdown task.

    Example:
        >>> from rollgym.core.task import Task
        >>> task = Task("t", "Countdown-v0", "", None, {"numbers": [1, 3, 4, 6], "target": 24})
        >>> verify_countdown(task, "<answer>6 / (1 - 3/4)</answer>").reward
        1.0
        >>> verify_countdown(task, "<answer>6 * 4 * (3 - 1)</answer>").error
        'wrong'
        >>> verify_countdown(task, "<answer>6 * 4</answer>").details["reason"]
        'Every number must be used exactly once; missing: [1, 3].'
    """
    rules = rules_of(task)
    answer = extract_tag(response, "answer") if isinstance(response, str) else None
    if not answer:
        reason = "No <answer>...</answer> with content was found; put one expression inside the tags."
        return Score.fail("no_answer", parsed=answer, reason=reason)
    if len(answer) > MAX_ANSWER_CHARS:
        reason = f"The answer has {len(answer)} characters; at most {MAX_ANSWER_CHARS} are read."
        return Score.fail("too_long", parsed=None, reason=reason, length=len(answer))
    try:
        value = _check_and_evaluate(answer if answer.isascii() else answer.translate(_ALIASES), rules)
    except _Rejected as rejected:
        return Score.fail(rejected.error, parsed=answer, reason=rejected.reason)
    if value != rules.target:
        reason = f"The expression equals {value}, not the target {rules.target}."
        return Score.fail("wrong", parsed=answer, reason=reason, value=str(value))
    return Score.success(parsed=answer, value=str(value))


def _check_and_evaluate(text: str, rules: CountdownRules) -> int | Fraction:
    """Run every check on an extracted answer and return its exact value, or raise :class:`_Rejected`."""
    if not _ALLOWED_CHARS.issuperset(text):
        bad = next(ch for ch in text if ch not in _ALLOWED_CHARS)
        raise _Rejected("malformed", f"The character {bad!r} is not allowed; use digits, + - * / and parentheses.")
    expression = _strip_claim(text, rules.target)
    # After the whitelist, the digit runs are exactly the integer literals, so the usage rule
    # is checked before parsing: most illegal answers never reach the parser.
    _check_usage([int(run) for run in _DIGIT_RUN.findall(expression)], rules)
    try:
        tree = ast.parse(expression, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise _Rejected("malformed", "The answer is not one well-formed arithmetic expression.") from None
    return _evaluate(tree.body, rules)


def _strip_claim(text: str, target: int) -> str:
    """Strip an optional ``= <target>`` suffix and return the expression."""
    if "=" not in text:
        return text
    parts = text.split("=")
    left, right = parts[0].strip(), parts[-1].strip()
    if len(parts) != 2 or not left or not right.isdigit():
        raise _Rejected("malformed", "Write one expression, optionally followed by '= <target>'.")
    if int(right) != target:
        raise _Rejected("wrong", f"The answer claims '= {right}', but the target is {target}.")
    return left


def _check_usage(literals: list[int], rules: CountdownRules) -> None:
    """Enforce the usage rule on the multiset of numbers the expression uses."""
    if rules.usage == "exactly" and sorted(literals) == rules.sorted_numbers:
        return  # the common case of a well-formed answer, without building counters
    offered = Counter(rules.numbers)
    used = Counter(literals)
    for number, count in used.items():
        if number not in offered:
            raise _Rejected("illegal", f"{number} is not one of the offered numbers.")
        if count > offered[number]:
            times = "once" if offered[number] == 1 else f"{offered[number]} times"
            raise _Rejected("illegal", f"{number} is used {count} times but offered only {times}.")
    if rules.usage == "exactly" and used != offered:
        missing = sorted((offered - used).elements())
        raise _Rejected("illegal", f"Every number must be used exactly once; missing: {missing}.")


def _evaluate(root: ast.expr, rules: CountdownRules) -> int | Fraction:
    """Check every node against the whitelist and return the exact value of the tree.

    One iterative post-order pass: an operator is checked before its operands are
    evaluated, and a 1000-character chain like ``1+1+...`` (500 levels) needs no
    recursion. Values stay ``int`` until a division leaves a remainder.
    """
    values: list[int | Fraction] = []
    stack: list[ast.expr | None] = [root]  # None: apply the operator of the BinOp below it
    while stack:
        node = stack.pop()
        if node is None:
            binop = stack.pop()
            assert isinstance(binop, ast.BinOp)
            right, left = values.pop(), values.pop()
            values.append(_apply(type(binop.op), left, right))
            continue
        kind = type(node)
        if kind is ast.BinOp:
            assert isinstance(node, ast.BinOp)
            symbol = _AST_OPERATORS.get(type(node.op))
            if symbol is None:
                raise _Rejected("malformed", "Only the operators + - * / are allowed.")
            if symbol not in rules.operators:
                allowed = " ".join(op for op in OPERATORS if op in rules.operators)
                raise _Rejected("illegal", f"The operator {symbol} is not allowed in this task; use only {allowed}.")
            stack += (node, None, node.right, node.left)
        elif kind is ast.Constant and type(node.value) is int:  # type: ignore[attr-defined]
            values.append(node.value)  # type: ignore[attr-defined]
        elif kind is ast.UnaryOp:
            raise _Rejected("malformed", "Unary signs are not allowed; write 'b - a' instead of '-a + b'.")
        else:
            raise _Rejected("malformed", "Only integers, + - * / and parentheses are allowed.")
    return values[0]


def _apply(op: type[ast.operator], left: int | Fraction, right: int | Fraction) -> int | Fraction:
    if op is ast.Add:
        return left + right
    if op is ast.Sub:
        return left - right
    if op is ast.Mult:
        return left * right
    if right == 0:
        raise _Rejected("division_by_zero", "The expression divides by zero.")
    if type(left) is int and type(right) is int:
        quotient, remainder = divmod(left, right)
        return quotient if remainder == 0 else Fraction(left, right)
    return Fraction(left) / right
