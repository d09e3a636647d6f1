"""Tool evidence behind ``MathToolEnv``'s ``info["verified"]``: the printed answer must be computed from the problem.

A policy's python call that prints its own guess (``print(999)``, ``x = 999; print(x)``,
``print(990 + 9)``) and then boxes it says nothing about the problem. So the env does
not trust the printout alone: it re-runs the program with one number of the problem
changed and asks whether the answer went away.

The rule, exactly: a successful call printed, in one of its last
:data:`MAX_EVIDENCE_LINES` lines, a value equal to the boxed answer, and for some
number ``n`` of the problem statement other than 0 and 1 (``print(999 * 1)`` would
otherwise pass) that appears in that call's code (as a number literal, or as a whole
number inside a string literal such as ``sympify("x**2 - 4")``),
the code with every such ``n`` replaced by ``n + 1`` runs successfully, prints
something, prints the answer in none of its last lines, and, when the answer is
``n`` itself, does not print ``n + 1`` either (printing a number of the problem
back is an echo, not a computation). At most :data:`MAX_RERUNS` re-runs are made
per answer, latest matching call first.

What it does not prove: that the computation is right, or that a program which
folds a problem number into its guess cannot pass (``x = 997; print(x + 2)`` for a
problem with a 2 in it prints 1000 on the re-run, so it counts). It removes the
plain echo (a printed literal, a literal assigned then printed, arithmetic on
literals the problem does not contain, a number of the problem printed back,
a problem number added and subtracted again, a guess times 1 or plus 0).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

MAX_EVIDENCE_LINES = 3
MAX_RERUNS = 3
IDENTITIES = (0, 1)  # never changed: ``guess + 0`` and ``guess * 1`` would "depend" on them
_PROBLEM_NUMBER = re.compile(r"(?<![\d.])(?:\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\d])")
_CODE_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\d.])")

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
    def __init__(self, old: Decimal, new: Decimal) -> None:
        self.old, self.new, self.changed = old, new, 0

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        value = node.value
        if isinstance(value, bool):
            return node
        if isinstance(value, int) and value == self.old:
            self.changed += 1
            return ast.copy_location(ast.Constant(int(self.new)), node)
        if isinstance(value, float) and value == float(self.old):
            self.changed += 1
            return ast.copy_location(ast.Constant(float(self.new)), node)
        if isinstance(value, str):
            text = _CODE_NUMBER.sub(self._token, value)
            if text != value:
                return ast.copy_location(ast.Constant(text), node)
        return node

    def _token(self, match: re.Match[str]) -> str:
        if Decimal(match.group()) != self.old:
            return match.group()
        self.changed += 1
        return str(self.new)


def change_number(code: str, old: Decimal, new: Decimal) -> str | None:
    """``code`` with every literal equal to ``old`` (in numbers and inside strings) replaced by ``new``.

    ``None`` when the code does not parse or has no such literal. Only whole numbers count in
    strings: the ``3`` of ``"x**3"`` is changed, the ``3`` of ``"x3"`` or ``"0.35"`` is not.

    Example:
        >>> change_number("print(7 * 4 + 3)", Decimal(7), Decimal(8))
        'print(8 * 4 + 3)'
        >>> change_number("print(999)", Decimal(7), Decimal(8)) is None
        True
    """
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError):
        return None
    substitute = _Substitute(old, new)
    try:
        changed = substitute.visit(tree)
        return ast.unparse(ast.fix_missing_locations(changed)) if substitute.changed else None
    except (RecursionError, ValueError):
        return None


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
    Returns ``{"computed_calls": [...], "reruns": [{"call", "number", "ok", "printed_answer", "echo"}, ...]}``.
    """
    numbers = [n for n in problem_numbers(problem) if n not in IDENTITIES]
    reruns: list[dict[str, Any]] = []
    computed: list[int] = []
    for call in sorted(matching, reverse=True):
        code = runs[call][0]
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
    return {"computed_calls": computed, "reruns": reruns}
