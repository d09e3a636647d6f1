"""Cheap, in-process normalisation and comparison of MATH-style answers.

Most MATH answers are plain numbers (``27``, ``\\frac{3}{4}``, ``.35625``,
``10,\\!080``), short words (``\\text{Evelyn}``, ``(C)``) or numbers in a base
(``52_8``). :func:`quick_compare` decides those exactly with string work and
:class:`fractions.Fraction` arithmetic, in microseconds, and answers ``None``
for everything else, which then goes to math-verify in the worker pool.

Every decision here is exact: two numbers are equal only if their rational
values are equal (no float tolerance), words only if they match after case and
punctuation folding. Sizes are capped so that no input can make this slow.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction

MAX_NUMBER_DIGITS = 400

# -- light clean-up -----------------------------------------------------------
_SPACING_RE = re.compile(r"(?<!\\)\\[!,;:> ]|~|\\quad|\\qquad|\\displaystyle|\\limits")
_LEFT_RIGHT_RE = re.compile(r"\\(?:left|right|bigl|bigr|Bigl|Bigr|big|Big)(?![a-zA-Z])\s*")
_FRAC_ALIAS_RE = re.compile(r"\\[dt]frac(?![a-zA-Z])")
_WS_RE = re.compile(r"\s+")


def clean_latex(text: str) -> str:
    """Strip layout-only LaTeX: ``$``, spacing commands, ``\\left``/``\\right``, ``\\dfrac``/``\\tfrac``.

    Example:
        >>> clean_latex(r"$\\left( 3, \\dfrac{\\pi}{2} \\right).$")
        '(3, \\\\frac{\\\\pi}{2})'
    """
    s = text.replace("\\$", " ").replace("$", "")
    s = _SPACING_RE.sub(" ", s)
    s = _LEFT_RIGHT_RE.sub("", s)
    s = _FRAC_ALIAS_RE.sub(r"\\frac", s)
    s = _WS_RE.sub(" ", s).strip()
    s = re.sub(r"\s*([(),\[\]{}])\s*", r"\1", s)
    s = re.sub(r",(?=\S)", ", ", s)
    while s.endswith((".", ",")):
        s = s[:-1].rstrip()
    return s


_UNIT_TAIL_RE = re.compile(r"\s*\\(?:text|mbox|mathrm|textrm)\{([^{}]*)\}(?:\^\{?[23]\}?)?\s*$")
# words that turn a trailing \text{} into a qualifier ("5 \text{ or more}"), which is not a unit
_HEDGE_WORDS = frozenset(
    "or and not no more less than fewer at least most about approximately approx roughly maybe "
    "possibly either neither nor between to".split()
)
_DEGREE_RE = re.compile(r"\s*(?:\^\s*\{?\s*\\circ\s*\}?|\\circ|°|\\degree|\s+degrees?)\s*$")
_DOLLAR_RE = re.compile(r"^(-?)\s*\\\$\s*")


def strip_units(text: str) -> str:
    """Drop a trailing unit (``\\text{ cm}^2``, ``^\\circ``, ``degrees``) and a leading ``\\$``.

    A unit is only dropped when something remains, so ``\\text{Evelyn}`` is kept.

    Example:
        >>> strip_units(r"864 \\mbox{ inches}^2"), strip_units(r"90^\\circ"), strip_units(r"\\$18.90")
        ('864', '90', '18.90')
    """
    s = text.strip()
    for _ in range(3):
        stripped = _DEGREE_RE.sub("", s)
        unit = _UNIT_TAIL_RE.search(stripped)
        if unit is not None:
            words = set(re.findall(r"[a-z]+", unit.group(1).lower()))
            if words & _HEDGE_WORDS or re.search(r"\d", unit.group(1)):
                break
            stripped = stripped[: unit.start()]
        if not stripped or stripped == s:
            break
        s = stripped.strip()
    s = _DOLLAR_RE.sub(r"\1", s)
    return s


# -- numbers ------------------------------------------------------------------
_INT = r"\d+"
_DEC = r"(?:\d+\.\d*|\.\d+|\d+)"
_PLAIN_RE = re.compile(rf"^({_DEC})$")
_THOUSANDS_RE = re.compile(r"^(\d{1,3}(?:,\s?\d{3})+|\d{1,3}(?: \d{3})+)(\.\d+)?$")  # 58,500 or 10\,000
_FRAC_RE = re.compile(r"^\\frac\s*(?:\{(\d+)\}|(\d))\s*(?:\{(\d+)\}|(\d))$")
_SLASH_RE = re.compile(rf"^({_DEC})\s*/\s*({_DEC})$")
_MIXED_RE = re.compile(r"^(\d+)\s*\\frac\s*(?:\{(\d+)\}|(\d))\s*(?:\{(\d+)\}|(\d))$")
_SCI_RE = re.compile(rf"^({_DEC})\s*(?:\\times|\\cdot|\*|x)\s*10\s*\^\s*(?:\{{\s*([+-]?\d+)\s*\}}|([+-]?\d))$")
_E_RE = re.compile(rf"^({_DEC})[eE]([+-]?\d+)$")


def _dec(text: str) -> Fraction | None:
    if len(text) > MAX_NUMBER_DIGITS:
        return None
    return Fraction(text)


def parse_number(text: str) -> Fraction | None:
    """The exact value of a plain number written in any common way, or ``None``.

    Accepts integers, decimals (``.5``), thousands separators (``58,500``, ``10\\,000``),
    ``\\frac{a}{b}`` and ``a/b`` with integer parts, mixed numbers
    (``1\\frac{4}{5}``), scientific notation (``6.72\\times 10^{-5}``, ``2.5e3``)
    and a leading minus sign. Anything else, including numbers longer than
    ``MAX_NUMBER_DIGITS``, gives ``None``.

    Example:
        >>> parse_number(r"-1\\frac{1}{2}"), parse_number("2.5e3"), parse_number("x")
        (Fraction(-3, 2), Fraction(2500, 1), None)
    """
    s = text.strip().replace("{,}", "")
    if not s or len(s) > MAX_NUMBER_DIGITS:
        return None
    sign = 1
    if s[0] in "-+":
        sign = -1 if s[0] == "-" else 1
        s = s[1:].strip()
        if s.startswith("(") and s.endswith(")"):
            s = s[1:-1].strip()
    if s.startswith("{") and s.endswith("}") and s.count("{") == 1:
        s = s[1:-1].strip()
    value: Fraction | None = None
    if m := _PLAIN_RE.match(s):
        value = _dec(m.group(1))
    elif m := _THOUSANDS_RE.match(s):
        value = _dec(re.sub(r",?\s?", "", m.group(1)) + (m.group(2) or ""))
    elif m := _FRAC_RE.match(s):
        den = int(m.group(3) or m.group(4))
        value = Fraction(int(m.group(1) or m.group(2)), den) if den else None
    elif m := _SLASH_RE.match(s):
        top, bottom = _dec(m.group(1)), _dec(m.group(2))
        value = top / bottom if top is not None and bottom else None
    elif m := _MIXED_RE.match(s):
        part, whole = int(m.group(2) or m.group(3)), int(m.group(4) or m.group(5))
        value = int(m.group(1)) + Fraction(part, whole) if whole and part < whole else None
    elif (m := _SCI_RE.match(s)) or (m := _E_RE.match(s)):
        mantissa = _dec(m.group(1))
        exponent = int(next(g for g in m.groups()[1:] if g is not None))
        if mantissa is not None and abs(exponent) <= 300:
            value = mantissa * Fraction(10) ** exponent
    return None if value is None else sign * value


# -- words and multiple choice ---------------------------------------------------
_TEXT_WRAP_RE = re.compile(r"^\\(?:text|textbf|textit|textrm|mathrm|mathbf|mbox|textsc)\s*\{(.*)\}$", re.DOTALL)
_CHOICE_RE = re.compile(r"^\(?([A-Ea-e])\)?$")
_WORD_RE = re.compile(r"^[A-Za-z][A-Za-z' -]*$")


def _unwrap_text(text: str) -> str | None:
    s = text.strip()
    inner = None
    for _ in range(3):
        m = _TEXT_WRAP_RE.match(s)
        if not m or not _balanced(m.group(1)):
            break
        inner = s = m.group(1).strip()
    return inner


def text_key(text: str) -> frozenset[str] | str | None:
    """A comparable form of a word answer (``\\text{Evelyn}``, ``(C)``, ``\\text{A, C}``), else ``None``.

    Letters are case-folded and parentheses dropped; a comma-separated list of
    words or choices becomes an unordered set.

    Example:
        >>> text_key(r"\\text{(C)}") == text_key("C"), text_key(r"\\text{Evelyn}"), text_key("x+1")
        (True, 'evelyn', None)
    """
    s = text.strip()
    inner = _unwrap_text(s)
    body = inner if inner is not None else s
    items = [item.strip() for item in body.split(",")]
    keys: list[str] = []
    for item in items:
        item_inner = _unwrap_text(item)
        item = item_inner if item_inner is not None else item
        if m := _CHOICE_RE.match(item):
            keys.append(m.group(1).lower())
        elif _WORD_RE.match(item) and (inner is not None or len(item) >= 3):
            keys.append(re.sub(r"[^a-z]", "", item.lower()))
        else:
            return None
    if inner is None and not all(_CHOICE_RE.match(i) for i in items):
        # Bare words outside \text{} are only words when they are real words,
        # not products of variables such as "ab"; require \text{} for lists of them.
        if len(items) > 1 or not _WORD_RE.match(body) or len(body) < 3:
            return None
    if not keys or not all(keys):
        return None
    return keys[0] if len(keys) == 1 else frozenset(keys)


def is_text_answer(gold: str) -> bool:
    """Whether a gold answer is a word or a multiple-choice letter rather than mathematics."""
    s = clean_latex(gold)
    if _CHOICE_RE.match(s) and s.startswith("("):
        return True
    return _unwrap_text(s) is not None and text_key(s) is not None


# -- numbers in a base --------------------------------------------------------------
_BASE_RE = re.compile(r"^([0-9A-Za-z]+)_\{?\s*(\d+)\s*\}?$")


def parse_base(text: str) -> tuple[str, int] | None:
    """``("52", 8)`` for ``52_8`` or ``52_{8}``; ``None`` when not a number with a base subscript."""
    m = _BASE_RE.match(text.strip())
    if not m:
        return None
    digits, base = m.group(1).upper().lstrip("0") or "0", int(m.group(2))
    if not 2 <= base <= 36:
        return None
    try:
        int(digits, base)
    except ValueError:
        return None
    return digits, base


# -- relations ---------------------------------------------------------------------------
# The one table of relations: the claim reader (math_claims) counts them, and the comparisons
# here (v1 rules) split on every spelling of "equals" in it and treat any of them as a relation.
# Canonical name of every relation token; LaTeX commands match whole names only (\le, not \left).
RELATION_COMMANDS = {
    "lt": "lt", "gt": "gt", "le": "le", "leq": "le", "leqslant": "le", "leqq": "le", "ge": "ge", "geq": "ge",
    "geqslant": "ge", "geqq": "ge", "ne": "ne", "neq": "ne", "approx": "approx", "approxeq": "approx",
    "thickapprox": "approx", "sim": "sim", "simeq": "sim", "thicksim": "sim", "backsim": "sim", "eqsim": "sim",
    "equiv": "equiv", "cong": "cong", "propto": "propto", "varpropto": "propto", "to": "to",
    "rightarrow": "to", "longrightarrow": "to", "mapsto": "to", "longmapsto": "to", "Rightarrow": "implies",
    "Longrightarrow": "implies", "implies": "implies", "iff": "iff", "Leftrightarrow": "iff",
    "Longleftrightarrow": "iff", "leftrightarrow": "iff", "longleftrightarrow": "iff", "Leftarrow": "implies",
    "impliedby": "implies", "in": "in", "notin": "notin", "ni": "in", "owns": "in", "subset": "subset",
    "subseteq": "subset", "subsetneq": "subset", "supset": "supset", "supseteq": "supset", "supsetneq": "supset",
    "parallel": "parallel", "perp": "perp", "mid": "mid", "nmid": "nmid", "divides": "mid", "asymp": "asymp",
    "doteq": "eq", "coloneqq": "eq", "eqqcolon": "eq", "triangleq": "eq", "stackrel": "rel", "overset": "rel",
    "ll": "lt", "gg": "gt", "lesssim": "le", "gtrsim": "ge", "lessapprox": "le", "gtrapprox": "ge",
    "prec": "lt", "succ": "gt", "preceq": "le", "succeq": "ge", "nless": "ne", "ngtr": "ne", "nleq": "ne",
    "ngeq": "ne", "not": "not", "models": "models", "vdash": "models", "vDash": "models", "Vdash": "models",
    "bowtie": "rel", "smile": "rel", "frown": "rel", "vartriangleleft": "rel", "lhd": "rel", "unlhd": "rel",
    "bmod": "mod", "pmod": "mod", "mod": "mod", "pod": "mod",
}
RELATION_CHARS = {
    "=": "eq", "<": "lt", ">": "gt", "\u2248": "approx", "\u2260": "ne", "\u2264": "le", "\u2265": "ge",
    "\u223c": "sim", "\u2243": "sim", "\u2261": "equiv", "\u2245": "cong", "\u221d": "propto", "\u2192": "to",
    "\u21d2": "implies", "\u27f9": "implies", "\u21d4": "iff", "\u2194": "iff", "\u2208": "in", "\u2209": "notin",
    "\u2282": "subset", "\u2286": "subset", "\u2283": "supset", "\u2287": "supset", "\u2225": "parallel",
    "\u22a5": "perp", "\u2223": "mid", "\u226a": "lt", "\u226b": "gt", "\u2272": "le", "\u2273": "ge",
    "\u2250": "eq", "\u225c": "eq", "\u2254": "eq", "\u2a7d": "le", "\u2a7e": "ge", "\u2266": "le", "\u2267": "ge",
}
_RELATION_TOKEN_RE = re.compile(r"\\([a-zA-Z]+)|\\.|[" + re.escape("".join(RELATION_CHARS)) + r"]|:=")
_EQUALS_RE = re.compile(
    r"\\(?:" + "|".join(sorted((n for n, r in RELATION_COMMANDS.items() if r == "eq"), key=len, reverse=True))
    + r")(?![a-zA-Z])|:=|[" + "".join(c for c, r in RELATION_CHARS.items() if r == "eq" and c != "=") + "]"
)


def relation_names(text: str) -> Iterator[str]:
    """The canonical name of each relation token in ``text``, in order (``:=`` and ``\\doteq`` are ``"eq"``).

    Example:
        >>> list(relation_names(r"x \\coloneqq 3 \\le 4 \u2250 5"))
        ['eq', 'le', 'eq']
    """
    for m in _RELATION_TOKEN_RE.finditer(text):
        if m.group(1) is not None:
            name = RELATION_COMMANDS.get(m.group(1))
        elif m.group(0) == ":=":
            name = "eq"
        else:
            name = RELATION_CHARS.get(m.group(0))
        if name is not None:
            yield name


def as_equals(text: str) -> str:
    """Every spelling of "equals" in the relation table written as ``=`` (v1 rules).

    Example:
        >>> as_equals(r"3 \\doteq 4"), as_equals("x := 5"), as_equals("a \u225c b")
        ('3 = 4', 'x = 5', 'a = b')
    """
    return _EQUALS_RE.sub("=", text)


def has_relation(text: str) -> bool:
    """Whether ``text`` asserts any relation the table knows (v1 rules)."""
    return next(relation_names(text), None) is not None


# -- equations -------------------------------------------------------------------------
_BARE_SYMBOL_RE = re.compile(r"^(?:[A-Za-z]|\\[a-zA-Z]+)(?:_\{?[A-Za-z0-9]+\}?)?'*$")


def split_top_level(text: str, sep: str) -> list[str]:
    """Split on ``sep`` outside braces, brackets and parentheses."""
    parts: list[str] = []
    depth = 0
    start = 0
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "{([":
            depth += 1
        elif ch in "})]":
            depth -= 1
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            start = i + len(sep)
            i = start
            continue
        i += 1
    parts.append(text[start:])
    return parts


@dataclass(frozen=True)
class Assignment:
    """An answer split into the variables it names and the value: ``x = 5`` -> ``(("x",), "5")``."""

    names: tuple[str, ...]
    value: str
    equation: bool  # True when it has an '=' whose left side is not a bare variable


def split_assignment(text: str) -> Assignment:
    """Split ``x = y = 5`` into names and value; an equation such as ``2x+3=13`` is flagged.

    Example:
        >>> split_assignment("x = 5"), split_assignment("x^2 = x^2").equation
        (Assignment(names=('x',), value='5', equation=False), True)
    """
    parts = [p.strip() for p in split_top_level(text, "=")]
    if len(parts) == 1:
        return Assignment((), text.strip(), False)
    names = tuple(re.sub(r"\s+", "", p) for p in parts[:-1])
    if all(_BARE_SYMBOL_RE.match(n) for n in names) and parts[-1]:
        return Assignment(names, parts[-1], False)
    return Assignment((), text.strip(), True)


# -- the quick comparison -----------------------------------------------------------------
_LIST_OPEN = {"(": ")", "[": "]", "\\{": "\\}"}


def bracketed_parts(s: str) -> tuple[str, str, str] | None:
    for opener, closer in _LIST_OPEN.items():
        if s.startswith(opener) and s.endswith(closer) and len(s) > len(opener) + len(closer):
            inner = s[len(opener) : -len(closer)]
            if len(split_top_level(inner, ",")) >= 1 and _balanced(inner):
                return opener, inner, closer
    return None


def _balanced(s: str) -> bool:
    depth = 0
    for ch in re.sub(r"\\.", "", s):
        if ch in "{([":
            depth += 1
        elif ch in "})]":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def _number_list(s: str) -> list[Fraction] | None:
    items = split_top_level(s, ",")
    if len(items) < 2:
        return None
    values = [parse_number(strip_units(i)) for i in items]
    return None if any(v is None for v in values) else values  # type: ignore[return-value]


@dataclass(frozen=True)
class QuickResult:
    """The outcome of :func:`quick_compare`: a verdict (or ``None``), the method, and the cleaned pair."""

    verdict: bool | None
    method: str
    gold: str
    pred: str
    error: str | None = None


def quick_compare(gold: str, pred: str, *, rules: str = "v1") -> QuickResult:
    """Decide easy cases exactly and cheaply; ``verdict=None`` means "ask the symbolic worker".

    ``error`` is set on a decided wrong answer with a reason worth reporting
    (``"equation"`` for a boxed equation that is not ``variable = value``). Under ``rules="v1"``
    every spelling of "equals" in the relation table (``\\doteq``, ``\\coloneqq``, ``:=``, ``≐``...)
    is an ``=`` and every relation in it makes a side "not a scalar"; ``"v0"`` keeps v0's
    ``=``, ``<``, ``>``, ``\\le``, ``\\ge``, ``\\neq``, ``\\in``.

    Example:
        >>> quick_compare(r"\\frac12", "0.5").verdict, quick_compare("27.0", "27").verdict
        (True, True)
        >>> quick_compare(r"52_8", "42").verdict, quick_compare(r"\\sqrt2", "1.41").verdict
        (False, None)
    """
    g, p = clean_latex(gold), clean_latex(pred)
    related = _v0_has_relation if rules == "v0" else has_relation
    if rules != "v0":
        g, p = as_equals(g), as_equals(p)
    if g == p:
        return QuickResult(True, "string", g, p)
    if is_text_answer(g):
        gk, pk = text_key(g), text_key(strip_units(p)) if p else None
        return QuickResult(gk is not None and gk == pk, "text", g, p)
    ga, pa = split_assignment(g), split_assignment(p)
    if pa.equation and not ga.equation and not related(g):
        return QuickResult(False, "equation", g, p, "equation")
    if not ga.equation and not pa.equation:
        if ga.names and pa.names and ga.names[0] != pa.names[0]:
            return QuickResult(False, "assignment", g, p)
        g, p = ga.value, pa.value
        if g == p:
            return QuickResult(True, "string", g, p)
    if (gb := parse_base(g)) is not None:
        return QuickResult(_base_equal(gb, p), "base", g, p)
    gu, pu = strip_units(g), strip_units(p)
    gn = parse_number(gu)
    if gn is not None:
        pn = parse_number(pu)
        if pn is not None:
            return QuickResult(gn == pn, "number", g, p)
        if (pb := parse_base(pu)) is not None:
            return QuickResult(int(pb[0], pb[1]) == gn, "base", g, p)
        if _not_a_scalar(pu, related):
            return QuickResult(False, "shape", g, p)
        return QuickResult(None, "symbolic", g, p)
    if parse_number(pu) is not None and _not_a_scalar(gu, related):
        return QuickResult(False, "shape", g, p)
    gl, pl = _number_list(gu), _number_list(pu)
    gbr, pbr = bracketed_parts(gu), bracketed_parts(pu)
    if gl is not None and pl is not None:
        return QuickResult(sorted(gl) == sorted(pl), "list", g, p)
    if (gl is not None and pbr and pbr[0] != "\\{") or (pl is not None and gbr and gbr[0] != "\\{"):
        # an unordered list of numbers is neither a tuple nor an interval
        return QuickResult(False, "list", g, p)
    if gbr and pbr and gbr[0] == pbr[0]:
        gv, pv = _number_list(gbr[1]), _number_list(pbr[1])
        if gv is not None and pv is not None:
            same = sorted(gv) == sorted(pv) if gbr[0] == "\\{" else gv == pv
            return QuickResult(same, "tuple", g, p)
    return QuickResult(None, "symbolic", g, p)


_COMMAND_RE = re.compile(r"\\[a-zA-Z]+")
_VARIABLE_RE = re.compile(r"[a-dA-Zf-hj-z]")


def _not_a_scalar(s: str, related: Callable[[str], bool]) -> bool:
    """True when ``s`` is clearly not a number: a list, tuple, set, interval, matrix or relation,
    or an expression with a free variable (a letter other than ``e`` and ``i`` outside commands)."""
    if len(split_top_level(s, ",")) > 1 or "\\cup" in s or "\\begin" in s or related(s):
        return True
    bracketed = bracketed_parts(s)
    if bracketed and len(split_top_level(bracketed[1], ",")) > 1:
        return True
    return bool(_VARIABLE_RE.search(_COMMAND_RE.sub("", s)))


def _v0_has_relation(s: str) -> bool:
    """v0's short list of relations, kept so that v0 ids score as they did."""
    return bool(re.search(r"=|<|>|\\le|\\ge|\\neq|\\in(?![a-zA-Z])", s))


def _base_equal(gold: tuple[str, int], pred: str) -> bool:
    digits, base = gold
    pb = parse_base(pred)
    if pb is not None:
        return pb == gold or int(pb[0], pb[1]) == int(digits, base)
    p = re.sub(r"\s+", "", pred).upper().lstrip("0") or "0"
    return p == digits


def nesting_depth(text: str) -> int:
    """The deepest brace nesting in ``text``, a cheap guard against pathological input."""
    depth = best = 0
    for ch in text:
        if ch == "{":
            depth += 1
            best = max(best, depth)
        elif ch == "}":
            depth -= 1
    return best


_POWER_RE = re.compile(r"\^\s*\{")


def power_tower_height(text: str) -> int:
    """How many exponents are nested inside each other (``9^{9^{9}}`` has 3)."""
    best = 0
    stack: list[bool] = []  # for each open brace: whether it opened an exponent
    height = 0
    i = 0
    while i < len(text):
        if text[i] == "^":
            height_here = height + 1
            best = max(best, height_here)
            j = i + 1
            while j < len(text) and text[j] == " ":
                j += 1
            if j < len(text) and text[j] == "{":
                stack.append(True)
                height += 1
                i = j + 1
                continue
        elif text[i] == "{":
            stack.append(False)
        elif text[i] == "}" and stack:
            if stack.pop():
                height -= 1
        i += 1
    return best
