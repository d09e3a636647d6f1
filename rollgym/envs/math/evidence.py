"""Tool evidence behind ``MathToolEnv``'s ``info["verified"]``: the printed answer must be computed from the problem.

A policy's python call that prints its own guess (``print(999)``, ``print(992 + 7)``) and then
boxes it says nothing about the problem, so the env never trusts the printout alone. Two
rules, by what the env knows about the problem:

**Templated rows** (a generator's row with fresh instances of its template,
:mod:`rollgym.envs.math.templates`): :func:`fresh_instance_evidence`. A successful call printed,
in one of its last :data:`MAX_EVIDENCE_LINES` lines, a value equal to the boxed answer; the env
re-runs that call's code with the numbers of each of the first
:data:`~rollgym.envs.math.templates.FRESH_INSTANCES` fresh instances in place of the problem's
(every literal equal to a number of the problem, also as a whole number inside a string, becomes
that instance's number), and each re-run must print that instance's answer on the line, counted
from the end, that printed the boxed answer. The instances are never shown to the agent, so this
holds only for code that computes the answer from the problem's numbers as the template does (or
guesses the hidden instances' answers). It does not say the boxed answer is right: a program
with a bug that the template shares passes, and so does one that computes the answer and then
special-cases its value (``r = 7*4+3; print(999 if r == 31 else r)``).

**Other rows** (MATH500, AIME, a user's file without templates): :func:`rerun_evidence`. A
successful call printed the boxed answer as above, and

1. every number that call's code writes (a number literal, or a run of digits inside a string,
   ``"1e3"`` included) is a number ``n`` of the problem statement, ``n - 1`` or ``n + 1`` (range
   bounds), 0 or 1, and
2. for some number ``n`` of the problem other than 0 and 1 that the code writes, the code with
   every such ``n`` replaced by ``n + 1`` runs successfully, prints something, prints the answer
   in none of its last lines and, when the answer is ``n`` itself, does not print ``n + 1``.

At most :data:`MAX_RERUNS` re-runs are made per answer, latest matching call first. This
guarantees that the printed value is not arithmetic on numbers the problem does not contain
(``print(992 + 7)``, ``print(999 if 7 % 2 else 0)``, ``a = 7*4+3; print(a + 968)``) and that it
depends on a number of the problem. It does not guarantee that the code computes the answer: a
value built from 0s and 1s (``1+1+1``) or from characters (``ord("\u03e7")``, ``len("...")``) and
switched on a problem number (``... if 7 % (1+1) else 0``) still passes; and right code that
writes another number (``/ 2`` in a problem without a 2, ``range(100)``) is never verified.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from rollgym.envs.math.templates import FRESH_INSTANCES, FreshInstance

MAX_EVIDENCE_LINES = 3
MAX_RERUNS = 3
IDENTITIES = (0, 1)  # never changed: ``guess + 0`` and ``guess * 1`` would "depend" on them
_PROBLEM_NUMBER = re.compile(r"(?<![\d.])(?:\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\d])")
_CODE_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\d.])")
_STRING_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")  # every digit run counts, "x3" and "1e3" too

Equal = Callable[[list[tuple[str, str]]], list[bool]]


def problem_numbers(text: str) -> list[Decimal]:
    """The distinct numbers written in a problem statement, in order (``1,000`` is one thousand).

    Example:
        >>> [str(n) for n in problem_numbers(r"What is $7 \\times 4 + 3$, or 7.5 of 1,000?")]
        ['7', '4', '3', '7.5', '1000']
    """
    seen: list[Decimal] = []
    for match in _PROBLEM_NUMBER.finditer(text or ""):
        value = Decimal(match.group().replace(",", ""))
        if value not in seen:
            seen.append(value)
    return seen


class _Substitute(ast.NodeTransformer):
    def __init__(self, mapping: dict[Decimal, Decimal]) -> None:
        self.mapping, self.changed = mapping, 0

    def _new(self, value: Decimal) -> Decimal | None:
        return self.mapping.get(value)

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        value = node.value
        if isinstance(value, bool):
            return node
        if isinstance(value, int) or (isinstance(value, float) and math.isfinite(value)):
            new = self._new(Decimal(repr(value)) if isinstance(value, float) else Decimal(value))
            if new is not None:
                self.changed += 1
                number: int | float = int(new) if isinstance(value, int) and new == new.to_integral_value() \
                    else float(new)
                return ast.copy_location(ast.Constant(number), node)
            return node
        if isinstance(value, str):
            text = _CODE_NUMBER.sub(self._token, value)
            if text != value:
                return ast.copy_location(ast.Constant(text), node)
        return node

    def _token(self, match: re.Match[str]) -> str:
        new = self._new(Decimal(match.group()))
        if new is None:
            return match.group()
        self.changed += 1
        return _plain(new)


def _plain(number: Decimal) -> str:
    """``Decimal`` as code writes it: ``8``, ``2.5`` (never ``8E+1``)."""
    return str(int(number)) if number == number.to_integral_value() else format(number.normalize(), "f")


def change_numbers(code: str, mapping: dict[Decimal, Decimal]) -> str | None:
    """``code`` with every literal equal to a key of ``mapping`` (in numbers and inside strings) replaced at once.

    ``None`` when the code does not parse or has no such literal. Only whole numbers count in
    strings: the ``3`` of ``"x**3"`` is changed, the ``3`` of ``"x3"`` or ``"0.35"`` is not.

    Example:
        >>> change_numbers("print(7 * 4 + 3)", {Decimal(7): Decimal(4), Decimal(4): Decimal(7)})
        'print(4 * 7 + 3)'
    """
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    substitute = _Substitute(dict(mapping))
    try:
        changed = substitute.visit(tree)
        return ast.unparse(ast.fix_missing_locations(changed)) if substitute.changed else None
    except (RecursionError, ValueError, MemoryError):
        return None


def change_number(code: str, old: Decimal, new: Decimal) -> str | None:
    """``code`` with every literal equal to ``old`` (in numbers and inside strings) replaced by ``new``.

    Example:
        >>> change_number("print(7 * 4 + 3)", Decimal(7), Decimal(8))
        'print(8 * 4 + 3)'
        >>> change_number("print(999)", Decimal(7), Decimal(8)) is None
        True
    """
    return change_numbers(code, {old: new})


def written_numbers(code: str) -> list[str] | None:
    """Every number ``code`` writes: number literals and whole numbers inside strings (``None``: does not parse).

    Example:
        >>> written_numbers("x = 7 * 4 + 3.5\\nprint(f'{x} is {1e3}', sympify('x**2'))")
        ['7', '4', '3.5', '1000.0', '2']
    """
    try:
        tree = ast.parse(code)
        nodes = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Constant)),
                       key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    found: list[str] = []
    for node in nodes:
        if isinstance(node.value, bool):
            continue
        if isinstance(node.value, (int, float, complex)):
            try:
                found.append(repr(node.value))
            except ValueError:  # an int too long to write in decimal
                found.append("?")
        elif isinstance(node.value, str):
            found.extend(match.group() for match in _STRING_NUMBER.finditer(node.value))
    return found


def foreign_numbers(code: str, problem: str) -> list[str]:
    """The numbers ``code`` writes that are not a number ``n`` of ``problem``, ``n - 1``, ``n + 1``, 0 or 1.

    ``["?"]`` when the code does not parse.

    Example:
        >>> foreign_numbers("print(992 + 7)", "What is $7 \\times 4 + 3$?")
        ['992']
    """
    written = written_numbers(code)
    if written is None:
        return ["?"]
    # n - 1 and n + 1 as well: range bounds (``range(1, 197)`` for the divisors of 196)
    allowed = {n + step for n in problem_numbers(problem) for step in (-1, 0, 1)} | {Decimal(n) for n in IDENTITIES}
    foreign: list[str] = []
    for text in written:
        try:
            value = Decimal(text)
        except InvalidOperation:  # a complex number, nan or inf
            value = None
        if (value is None or not value.is_finite() or value not in allowed) and text not in foreign:
            foreign.append(text)
    return foreign


def printed_lines(stdout: str, max_chars: int) -> list[str]:
    """The last :data:`MAX_EVIDENCE_LINES` non-empty lines of ``stdout``, stripped and cut to ``max_chars``."""
    lines = [line.strip() for line in str(stdout).splitlines() if line.strip()]
    return [line[:max_chars] for line in lines[-MAX_EVIDENCE_LINES:]]


def rerun_evidence(
    runs: Sequence[tuple[str, Any]],
    matching: Sequence[int],
    answer: str,
    problem: str,
    sandbox: Any,
    equal: Equal,
    max_chars: int,
) -> dict[str, Any]:
    """Re-run matching calls with one problem number changed; which of them computed the answer from the problem.

    ``runs`` are ``(code, result)`` pairs of the episode, ``matching`` the indices of the calls that printed
    ``answer``; ``sandbox.run_python`` runs the changed code and ``equal`` compares ``(gold, printed)`` pairs.
    A call whose code writes another number (:func:`foreign_numbers`) is not re-run. Returns
    ``{"computed_calls": [...], "reruns": [{"call", "number", "ok", "printed_answer", "echo"}, ...],
    "foreign_numbers": [{"call", "numbers"}, ...]}``.
    """
    numbers = [n for n in problem_numbers(problem) if n not in IDENTITIES]
    reruns: list[dict[str, Any]] = []
    computed: list[int] = []
    foreign: list[dict[str, Any]] = []
    for call in sorted(matching, reverse=True):
        code = runs[call][0]
        outside = foreign_numbers(code, problem)
        if outside:  # arithmetic on numbers that are not the problem's: no re-run can make it evidence
            foreign.append({"call": call, "numbers": outside[:5]})
            continue
        for number in numbers:
            if len(reruns) >= MAX_RERUNS:
                break
            new = number + 1
            changed = change_number(code, number, new)
            if changed is None:
                continue
            result = sandbox.run_python(changed)
            record: dict[str, Any] = {"call": call, "number": str(number), "ok": bool(result.ok),
                                      "printed_answer": None, "echo": None}
            reruns.append(record)
            lines = printed_lines(result.stdout, max_chars) if result.ok else []
            if not lines:
                continue
            verdicts = equal([(answer, line) for line in lines] + [(str(new), line) for line in lines]
                             + [(str(number), answer)])
            record["printed_answer"] = any(verdicts[: len(lines)])
            record["echo"] = bool(verdicts[-1]) and any(verdicts[len(lines): 2 * len(lines)])
            if not record["printed_answer"] and not record["echo"]:
                computed.append(call)
                break
        if computed or len(reruns) >= MAX_RERUNS:
            break
    return {"computed_calls": computed, "reruns": reruns, "foreign_numbers": foreign}


def fresh_instance_evidence(
    runs: Sequence[tuple[str, Any]],
    matching: Sequence[int],
    answer: str,
    instances: Sequence[FreshInstance],
    sandbox: Any,
    equal: Equal,
    max_chars: int,
) -> dict[str, Any]:
    """Re-run matching calls on fresh instances of the problem's template; which of them compute each one's answer.

    ``runs``, ``matching``, ``sandbox`` and ``equal`` are as for :func:`rerun_evidence`; ``instances`` are the
    row's fresh instances (the first :data:`~rollgym.envs.math.templates.FRESH_INSTANCES` are used). A call
    counts when, for every instance used, its code with the instance's numbers prints the instance's answer
    on a line (counted from the end) where the original run printed ``answer``. At most
    ``MAX_RERUNS + 1`` re-runs are made. Returns ``{"computed_calls": [...], "reruns": [{"call", "instance",
    "ok", "printed_fresh_answer"}, ...]}``.
    """
    used = list(instances[:FRESH_INSTANCES])
    reruns: list[dict[str, Any]] = []
    computed: list[int] = []
    if not used:
        return {"computed_calls": computed, "reruns": reruns}
    for call in sorted(matching, reverse=True):
        if len(reruns) + len(used) > MAX_RERUNS + 1:
            break
        code, original = runs[call]
        before = printed_lines(original.stdout, max_chars)
        spots = [k for k, ok in enumerate(equal([(answer, line) for line in before])) if ok]
        passed = bool(spots)
        for number, instance in enumerate(used):
            if not passed:
                break
            changed = change_numbers(code, instance.numbers)
            record: dict[str, Any] = {"call": call, "instance": number, "ok": False, "printed_fresh_answer": False}
            reruns.append(record)
            if changed is None:  # the code writes none of the problem's numbers: it cannot compute from them
                passed = False
                break
            result = sandbox.run_python(changed)
            record["ok"] = bool(result.ok)
            after = printed_lines(result.stdout, max_chars) if result.ok else []
            # the same line, counted from the end, must now print this instance's answer
            pairs = [(instance.answer, after[k - len(before)]) for k in spots if len(after) >= len(before) - k]
            record["printed_fresh_answer"] = bool(pairs) and any(equal(pairs))
            passed = record["printed_fresh_answer"]
        if passed:
            computed.append(call)
            break
    return {"computed_calls": computed, "reruns": reruns}
