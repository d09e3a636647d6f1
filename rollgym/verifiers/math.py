"""The MATH verifier: extract a response's final answer and decide if it equals the gold answer.

Extraction (:func:`extract_answers`):

* The answer is the content of ``\\boxed{...}`` or ``\\fbox{...}``, brace-matched
  (as :func:`rollgym.core.extraction.extract_boxed`); never the whole response.
* Boxes inside fenced code blocks (```` ``` ````), inline code spans and
  ``<tool_call>``/``<tool_response>`` blocks do not count when
  ``ignore_code_blocks`` is on (the default): printing ``\\boxed{7}`` from code is
  not answering 7.
* Several boxes: with ``box_policy="all"`` (the default) every *distinct* boxed
  answer must be correct, so repeating the answer is fine but hedging between
  different answers scores 0 (``error="conflicting_answers"`` when one of them
  was right). ``box_policy="last"`` scores only the last box.
* Without a box, an explicit ``Final answer: ...`` line counts only when
  ``allow_final_answer_line`` is on.

Equivalence (:func:`answers_equal`): first what the answer claims besides a
value (:mod:`rollgym.verifiers.math_claims`: a relation such as ``\\approx``
or ``<`` that the gold does not assert, several values or a set around a
single gold value, a percent sign where neither the gold nor the problem is
about percentages: wrong, with ``error`` ``"relation"``, ``"several_values"`` or
``"percent"``); then cheap exact checks, in-process
(:mod:`rollgym.verifiers.math_normalize`: numbers as fractions, words and
choices, numbers in a base, ``x = value``); everything else goes to math-verify
and sympy in the shared worker pool (:mod:`rollgym.verifiers.math_pool`) under a
hard per-answer timeout, with decimals read as the exact rationals they denote.
A timeout is a wrong answer with ``error="timeout"``.

Time: one response gets ``budget_s`` (10 s) of symbolic work in total, however
many boxes it has; what does not fit is wrong with ``error="time_budget"``. One
response never holds every worker of the shared pool, so other requests are
answered meanwhile.

Guards against reward hacks and pathological input: answers longer than
``max_answer_chars``, nested deeper than ``max_brace_depth`` or with power
towers taller than the gold's (and than ``max_power_tower``) are wrong without
evaluation (``"answer_too_long"``, ``"too_complex"``); a boxed equation whose
left side is not a bare variable (``x^2 = x^2``, ``2x+3=13``) is wrong when the
gold answer is not itself an equation (``"equation"``).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rollgym.core.config import check_choice, check_int, check_number
from rollgym.core.extraction import match_braces
from rollgym.core.task import Score, Task
from rollgym.verifiers.math_claims import asks_for_percent, claim_mismatch
from rollgym.verifiers.math_normalize import (
    clean_latex,
    nesting_depth,
    power_tower_height,
    quick_compare,
)

BoxPolicy = Literal["all", "last"]
Rules = Literal["v1", "v0"]


@dataclass(frozen=True)
class MathVerifyConfig:
    """How the MATH verifier extracts and compares answers.

    Attributes:
        timeout_s: Hard limit for the symbolic comparison of one answer.
        budget_s: Limit for all the symbolic work on one response (every box together).
        box_policy: ``"all"``: every distinct boxed answer must be correct (hedging fails);
            ``"last"``: only the last box counts.
        ignore_code_blocks: Ignore boxes inside code blocks, code spans and tool-call blocks.
        allow_final_answer_line: Without a box, accept a ``Final answer: ...`` line.
        max_answer_chars: Longer answers are wrong without evaluation.
        max_answers: More distinct boxed answers than this is ``"too_many_answers"``.
        max_brace_depth: Deeper brace nesting is ``"too_complex"``.
        max_power_tower: Taller exponent towers than this (and than the gold's) are ``"too_complex"``.
        rules: ``"v1"`` (the default): answers that claim a relation, several values or a
            percentage the gold does not are wrong, and decimals are exact. ``"v0"``: without
            those rules, as the v0 env ids scored (kept only to reproduce their results).
    """

    timeout_s: float = 5.0
    budget_s: float = 10.0
    box_policy: BoxPolicy = "all"
    ignore_code_blocks: bool = True
    allow_final_answer_line: bool = False
    max_answer_chars: int = 1000
    max_answers: int = 8
    max_brace_depth: int = 40
    max_power_tower: int = 2
    rules: Rules = "v1"

    def __post_init__(self) -> None:
        check_number("timeout_s", self.timeout_s, above=0, high=600)  # seconds
        check_number("budget_s", self.budget_s, above=0, high=3600)
        check_choice("box_policy", self.box_policy, ("all", "last"))
        check_choice("rules", self.rules, ("v1", "v0"))
        for name in ("max_answer_chars", "max_answers", "max_brace_depth", "max_power_tower"):
            check_int(name, getattr(self, name), 1)


DEFAULT_CONFIG = MathVerifyConfig()

# -- extraction ---------------------------------------------------------------
_BOX_RE = re.compile(r"\\(?:boxed|fbox)(?![a-zA-Z])")
_CODE_RE = re.compile(
    r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)|<tool_call>.*?(?:</tool_call>|\Z)|<tool_response\b.*?(?:</tool_response>|\Z)"
    r"|`[^`\n]*`",
    re.DOTALL | re.IGNORECASE,
)
_FINAL_LINE_RE = re.compile(r"final\s+answer\s*(?:is)?\s*[:：]?\s*(.+)$", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class Extraction:
    """The answers found in a response, or why there are none."""

    answers: tuple[str, ...]
    error: str | None = None
    boxes: int = 0


def _box_contents(text: str) -> tuple[list[str], bool]:
    """Every top-level box's content, and whether some box was left unclosed."""
    contents: list[str] = []
    pos = 0
    while True:
        m = _BOX_RE.search(text, pos)
        if m is None:
            return contents, False
        i = m.end()
        while i < len(text) and text[i] in " \t":
            i += 1
        if i < len(text) and text[i] == "{":
            close = match_braces(text, i)
            if close is None:
                return contents, True
            contents.append(_unwrap_box(text[i + 1 : close].strip()))
            pos = close + 1
        else:  # ``\boxed 5``: the argument is the next token
            token = re.match(r"[^\s$]+", text[i:])
            if token is None:
                return contents, True
            contents.append(token.group(0))
            pos = i + token.end()


def _unwrap_box(content: str) -> str:
    for _ in range(5):
        m = _BOX_RE.match(content)
        if not m:
            break
        rest = content[m.end() :].lstrip()
        if not rest.startswith("{"):
            break
        close = match_braces(rest, 0)
        if close is None or close != len(rest) - 1:
            break
        content = rest[1:close].strip()
    return content


def extract_answers(response: str, config: MathVerifyConfig = DEFAULT_CONFIG) -> Extraction:
    """Find the final answer(s) of a response as the env's options say; see the module docstring.

    Example:
        >>> extract_answers(r"so \\boxed{\\frac{1}{2}}, i.e. \\boxed{\\dfrac{1}{2}}").answers
        ('\\\\dfrac{1}{2}',)
        >>> extract_answers(r"```print('\\boxed{3}')```").error
        'no_answer'
    """
    if not isinstance(response, str):
        return Extraction((), "no_answer")
    text = _CODE_RE.sub(" ", response) if config.ignore_code_blocks else response
    contents, unclosed = _box_contents(text)
    boxes = len(contents)
    if unclosed:
        return Extraction((), "malformed", boxes)
    if not contents and config.allow_final_answer_line:
        lines = _FINAL_LINE_RE.findall(text)
        if lines:
            line = lines[-1].strip().strip("*").strip()
            line = re.sub(r"^\$+|\$+$", "", line.rstrip(".").strip()).strip()
            if line:
                contents = [line]
    if not contents:
        return Extraction((), "no_answer", boxes)
    if any(len(c) > config.max_answer_chars for c in contents):
        return Extraction((), "answer_too_long", boxes)
    if any(not c.strip() for c in contents):
        return Extraction((), "empty_answer", boxes)
    if config.box_policy == "last":
        return Extraction((contents[-1],), None, boxes)
    distinct: dict[str, str] = {}
    for c in contents:
        distinct.pop(clean_latex(c), None)
        distinct[clean_latex(c)] = c
    if len(distinct) > config.max_answers:
        return Extraction((), "too_many_answers", boxes)
    return Extraction(tuple(distinct.values()), None, boxes)


# -- equivalence ----------------------------------------------------------------
@dataclass(frozen=True)
class Equivalence:
    """Whether two answers are equivalent, how that was decided, and any error.

    ``method`` is ``"string"``, ``"number"``, ``"text"``, ``"base"``, ``"list"``,
    ``"tuple"``, ``"assignment"``, ``"equation"``, ``"claim"`` (decided in-process),
    ``"symbolic"`` (math-verify in a worker) or ``"guard"`` (refused unevaluated).
    ``error`` is ``None``, ``"timeout"``, ``"time_budget"``, ``"too_complex"``,
    ``"equation"``, ``"relation"``, ``"several_values"``, ``"percent"``,
    ``"unparsed"`` or ``"worker_error"``.
    """

    correct: bool
    method: str
    error: str | None = None


_CACHE: OrderedDict[tuple[str, str, str], Equivalence] = OrderedDict()
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 100_000


def _guard(gold: str, pred: str, config: MathVerifyConfig) -> Equivalence | None:
    if len(pred) > config.max_answer_chars:
        return Equivalence(False, "guard", "answer_too_long")
    if nesting_depth(pred) > max(config.max_brace_depth, nesting_depth(gold)):
        return Equivalence(False, "guard", "too_complex")
    if power_tower_height(pred) > max(config.max_power_tower, power_tower_height(gold)):
        return Equivalence(False, "guard", "too_complex")
    return None


def answers_equal_many(
    pairs: Sequence[tuple[str, str]],
    config: MathVerifyConfig = DEFAULT_CONFIG,
    *,
    budget_s: float | None = None,
    percent_context: bool = False,
) -> list[Equivalence]:
    """Compare many ``(gold, pred)`` pairs; symbolic work runs in parallel in the shared pool.

    ``budget_s`` caps the symbolic work of all pairs together (``None``: only the
    per-pair ``config.timeout_s``); ``percent_context`` says the problem asks for a
    percentage, so that ``p\\%`` may equal ``p/100``.

    Example:
        >>> [e.correct for e in answers_equal_many([("3", "3.0"), (r"\\text{(C)}", "B")])]
        [True, False]
    """
    results: list[Equivalence | None] = [None] * len(pairs)
    todo: list[tuple[int, str, str]] = []
    for i, (gold, pred) in enumerate(pairs):
        gold, pred = str(gold), str(pred)
        guarded = _guard(gold, pred, config)
        if guarded is not None:
            results[i] = guarded
            continue
        mismatch = claim_mismatch(gold, pred, percent_context=percent_context) if config.rules != "v0" else None
        if mismatch is not None:
            results[i] = Equivalence(False, "claim", mismatch)
            continue
        quick = quick_compare(gold, pred, rules=config.rules)
        if quick.verdict is not None:
            results[i] = Equivalence(quick.verdict, quick.method, quick.error)
            continue
        with _CACHE_LOCK:
            cached = _CACHE.get((quick.gold, quick.pred, config.rules))
        if cached is not None:
            results[i] = cached
            continue
        todo.append((i, quick.gold, quick.pred))
    if todo:
        from rollgym.verifiers.math_pool import get_pool

        kind = "equal_v0" if config.rules == "v0" else "equal"  # v0: math-verify's rounding of decimals
        jobs = [(kind, (g, p)) for _, g, p in todo]
        for (i, g, p), job in zip(todo, get_pool().run(jobs, config.timeout_s, budget_s=budget_s)):
            if job.ok:
                equal, note = job.value
                result = Equivalence(bool(equal), "symbolic", note)
                with _CACHE_LOCK:
                    _CACHE[(g, p, config.rules)] = result
                    if len(_CACHE) > _CACHE_SIZE:
                        _CACHE.popitem(last=False)
            else:
                error = {"timeout": "timeout", "budget": "time_budget"}.get(job.error or "", "worker_error")
                result = Equivalence(False, "symbolic", error)
            results[i] = result
    return [r if r is not None else Equivalence(False, "guard", "worker_error") for r in results]


def answers_equal(gold: str, pred: str, config: MathVerifyConfig = DEFAULT_CONFIG) -> Equivalence:
    """Whether ``pred`` is an equivalent final answer to ``gold`` (both LaTeX, without ``\\boxed``).

    Example:
        >>> answers_equal(r"\\left( 3, \\frac{\\pi}{2} \\right)", r"(3, \\pi/2)").correct
        True
        >>> answers_equal("90^\\\\circ", "90").correct, answers_equal("5", "x^2 = x^2").error
        (True, 'equation')
    """
    return answers_equal_many([(gold, pred)], config)[0]


# -- the verifier -----------------------------------------------------------------
def verify_math(task: Task | str, response: str, config: MathVerifyConfig | None = None) -> Score:
    """Score a response to a MATH-style task: reward 1.0 when its final answer equals the gold answer.

    ``task`` is a :class:`~rollgym.core.task.Task` (its ``answer`` is the gold
    LaTeX answer; its ``prompt`` tells whether the problem is about percentages)
    or the gold answer itself. Never raises on model output. All boxes together
    get ``config.budget_s`` of symbolic work.

    Example:
        >>> verify_math("\\\\frac{1}{2}", r"The answer is $\\boxed{0.5}$.").correct
        True
        >>> verify_math("3", r"\\boxed{3} or maybe \\boxed{4}").error
        'conflicting_answers'
    """
    config = config or DEFAULT_CONFIG
    gold = str(task.answer if isinstance(task, Task) else task)
    extraction = extract_answers(response, config)
    if extraction.error is not None:
        return Score.fail(extraction.error, boxes=extraction.boxes)
    answers = extraction.answers
    percent = isinstance(task, Task) and asks_for_percent(task.prompt)
    pairs = [(gold, a) for a in answers]
    verdicts = answers_equal_many(pairs, config, budget_s=config.budget_s, percent_context=percent)
    parsed = answers[-1]
    details = {
        "answers": [a[:200] for a in answers],
        "boxes": extraction.boxes,
        "method": verdicts[-1].method,
    }
    if all(v.correct for v in verdicts):
        return Score.success(parsed, **details)
    if any(v.correct for v in verdicts):
        return Score.fail("conflicting_answers", parsed, **details)
    errors = [v.error for v in verdicts if v.error]
    return Score.fail(errors[-1] if errors else "wrong", parsed, **details)
