"""What a boxed answer claims besides a value: relations, several values, a percentage.

math-verify is lenient in ways a policy under RL pressure finds: it reads
``3 \\approx 4`` or ``3 \\cong 4`` as one of its sides, ``3 \\text{, } 4 \\text{, } 5``
as 3, ``\\{3\\}`` as 3 and ``300\\%`` as 3. :func:`claim_mismatch` decides those
cases in-process, before any symbolic work, with three rules:

* **Relations.** An answer that asserts a relation (``=`` with a side that is
  not a bare variable, ``<``, ``\\le``, ``\\ne``, ``\\approx``, ``\\sim``,
  ``\\equiv``, ``\\cong``, ``\\to``, ``\\Rightarrow``, ``\\in``, ``\\subset``,
  ``\\mid``, ``\\not``..., in LaTeX or Unicode) is right only when the gold asserts
  the same relations, as many times: ``3 \\approx 4`` never equals ``3``, and a
  chain ``y = 2x + 3 = 7`` never equals ``y = 2x + 3``. A bare-variable
  assignment (``x = 5``, ``x \\in [-2, 7]``) is not a relation claim: its value
  is compared.
* **One value.** When the gold is one value (not a list, tuple, interval, set,
  matrix, ``\\pm`` pair or relation), an answer that lists several values
  (separated by commas, semicolons, line breaks, ``\\quad``, ``and``/``or``,
  ``\\lor``, ``\\cup``, ``\\pm``, or commas inside ``\\text{}``) or wraps one in a
  set, list or vector (``\\{3\\}``, ``[3]``, ``\\langle 3 \\rangle``) is wrong.
  Parentheses alone (``(3)``) are grouping, not a tuple.
* **Percent.** ``p\\%`` may equal ``p`` or ``p/100`` (math-verify's percent
  equivalence) only when the gold has a percent sign or the problem says
  "percent"; otherwise an answer with a percent sign is wrong.
* **Known notation.** math-verify skips commands it does not know, so
  ``3 \\oplus 4``, ``3 \\nsim 4`` or ``3 \\atop 4`` read as one of their numbers. An
  answer may use only the LaTeX commands of ordinary values (``\\frac``,
  ``\\sqrt``, ``\\pi``, ``\\cdot``, functions, Greek letters, ``\\text``...; see
  ``VALUE_COMMANDS``) and ASCII plus a few math symbols (``π``, ``√``, ``°``, ``×``...),
  unless the gold uses the same notation; anything else is wrong (``"notation"``).

All functions are pure string work with no evaluation, linear in the input.
"""

from __future__ import annotations

import re
from collections import Counter

from rollgym.verifiers.math_normalize import (
    RELATION_CHARS,
    RELATION_COMMANDS,
    as_equals,
    bracketed_parts,
    clean_latex,
    is_text_answer,
    parse_number,
    relation_names,
    split_assignment,
    split_top_level,
    strip_units,
)

_TEXT_RE = re.compile(
    r"\\(?:text|mbox|textrm|textnormal|textbf|textit|textsf|texttt|mathrm|operatorname)\s*\{([^{}]*)\}"
)
_WORD_SEPARATORS = frozenset(
    "and or nor either both also respectively otherwise alternatively maybe possibly perhaps plus".split()
)
_SEPARATOR_COMMANDS = frozenset(
    "quad qquad lor vee land wedge cup cap setminus pm mp hspace hfill newline cr and or enspace enskip thinspace "
    "medspace thickspace negthinspace negmedspace negthickspace space nobreakspace hskip kern mkern mskip "
    "hphantom phantom vspace linebreak".split()
)
# the commands of ordinary values; others (\oplus, \atop, \nsim...) are "notation" unless the gold has them
VALUE_COMMANDS = frozenset(
    """frac dfrac tfrac cfrac sqrt root left right big Big bigg Bigg bigl bigr Bigl Bigr biggl biggr Biggl Biggr
    text textbf textit textrm textnormal textsf texttt textup mbox mathrm mathbf mathit mathsf mathtt mathbb
    mathcal mathfrak boldsymbol bm operatorname displaystyle textstyle scriptstyle limits nolimits begin end
    overline underline bar hat tilde vec dot ddot widehat widetilde overrightarrow prime
    pi infty alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi
    omicron rho varrho sigma varsigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi
    Sigma Upsilon Phi Psi Omega ell imath jmath hbar emptyset varnothing
    sin cos tan cot sec csc arcsin arccos arctan arccot arcsec arccsc sinh cosh tanh coth sech csch log ln lg
    exp lim sum prod int iint iiint oint max min gcd lcm det deg lfloor rfloor lceil rceil binom dbinom tbinom
    choose cdot times div pm mp degree textdegree cdots ldots dots dotsc dotsb lbrace rbrace langle rangle
    lbrack rbrack quad qquad cup cap setminus angle triangle measuredangle""".split()
)
_VALUE_CHARS = frozenset("π√∛∜°×·−–∞±∓÷′″²³¹⁰⁴⁵⁶⁷⁸⁹⁻⁺½⅓⅔¼¾⅕⅛")
_SET_OPENERS = ("\\{", "\\lbrace", "\\set{", "\\Set{", "\\langle", "\\lbrack", "[", "\\left\\{", "\\begin")
_PERCENT_RE = re.compile(r"%|\\textpercent|\\percent|percent|\u066a|\ufe6a|\uff05", re.IGNORECASE)
_BARE_SYMBOL_RE = re.compile(r"^(?:[A-Za-z]|\\[a-zA-Z]+)(?:_\{?[A-Za-z0-9]+\}?)?'*$")


def relations(text: str) -> Counter[str]:
    """The relations an answer asserts, by canonical name, with their counts.

    Example:
        >>> sorted(relations(r"3 \\approx 4 \\le 5").elements())
        ['approx', 'le']
        >>> relations(r"\\left( 1, 2 \\right)")
        Counter()
    """
    found: Counter[str] = Counter()
    if _bars(text) % 2:  # an unpaired bar is "divides", not absolute value bars
        found["mid"] += 1
    found.update(relation_names(text))
    return found


def _bars(text: str) -> int:
    return text.count("|") + len(re.findall(r"\\[lr]?[vV]ert(?![a-zA-Z])", text))


def unknown_notation(text: str) -> set[str]:
    """Commands and characters outside the notation of ordinary values (see ``VALUE_COMMANDS``).

    Example:
        >>> sorted(unknown_notation(r"3 \\oplus 4^{\\circ} \\circ 5")), unknown_notation(r"\\frac{\\pi}{2}")
        (['circ', 'oplus'], set())
    """
    s = re.sub(r"\^\s*\{?\s*\\circ\s*\}?", "", text)  # degrees are a unit, not the operator \circ
    unknown = {name for name in re.findall(r"\\([a-zA-Z]+)", s) if name not in VALUE_COMMANDS}
    unknown -= set(RELATION_COMMANDS) | _SEPARATOR_COMMANDS  # relations and separators have their own rules
    body = _TEXT_RE.sub(" ", s)  # words inside \text{} are judged by the several-values rule
    unknown |= {ch for ch in body if ord(ch) > 127 and ch not in _VALUE_CHARS and ch not in RELATION_CHARS
                and not ("\u0370" <= ch <= "\u03ff")}  # Greek letters are variables
    return unknown


def _flatten_text(text: str) -> str:
    """``\\text{, }`` and friends become their plain content, so separators inside them show."""
    for _ in range(3):
        flat = _TEXT_RE.sub(lambda m: f" {m.group(1)} ", text)
        if flat == text:
            break
        text = flat
    return text


def _as_value(text: str) -> str:
    """A bare-variable assignment or membership (``x = 5``, ``x \\in S``) becomes its value."""
    assignment = split_assignment(text)
    if assignment.names and not assignment.equation:
        return assignment.value
    m = re.match(r"^\s*((?:[A-Za-z]|\\[a-zA-Z]+)(?:_\{?[A-Za-z0-9]+\}?)?)\s*(?:\\in(?![a-zA-Z])|\u2208)(.+)$", text)
    if m and _BARE_SYMBOL_RE.match(m.group(1)) and m.group(1) not in ("\\left",):
        return m.group(2).strip()
    return text


def lists_several_values(text: str) -> bool:
    """Whether an answer lists several values or wraps a value in a set, list or vector.

    Example:
        >>> lists_several_values(r"3 \\text{, } 4"), lists_several_values(r"\\{3\\}"), lists_several_values("10,080")
        (True, True, False)
        >>> lists_several_values(r"(3)"), lists_several_values(r"\\frac{1}{2}")
        (False, False)
    """
    s = clean_latex(text)
    if parse_number(strip_units(s)) is not None:
        return False  # thousands separators are not lists
    flat = _flatten_text(s).strip()
    if flat.startswith(_SET_OPENERS) or flat.startswith("\\left["):
        return True
    if len(split_top_level(flat, ",")) > 1 or len(split_top_level(flat, ";")) > 1 or "\\\\" in flat or "&" in flat:
        return True
    bracketed = bracketed_parts(flat)
    if bracketed and len(split_top_level(bracketed[1], ",")) > 1:
        return True
    commands = set(re.findall(r"\\([a-zA-Z]+)", flat))
    if commands & _SEPARATOR_COMMANDS or "\u222a" in flat or "\u00b1" in flat:
        return True
    words = set(re.findall(r"[a-z]+", re.sub(r"\\[a-zA-Z]+", " ", flat).lower()))
    if words & _WORD_SEPARATORS:
        return True
    # two numbers side by side with only space between them ("3 \quad 4" after clean-up); digit groups
    # of three after a space are thousands ("10\,000")
    spaced = re.sub(r"\\[a-zA-Z]+\s*", "\\\\cmd", flat)
    spaced = re.sub(r"(?<![\d.])(\d{1,3})((?:\s\d{3})+)(?![\d.])", lambda m: re.sub(r"\s", "", m.group(0)), spaced)
    return bool(re.search(r"\d\s+[+-]?\d", spaced))


def has_percent(text: str) -> bool:
    """Whether the text has a percent sign or the word "percent"."""
    return bool(_PERCENT_RE.search(text))


def asks_for_percent(problem: str) -> bool:
    """Whether a problem's text says "percent" (or "percentage"), so that ``p\\%`` may stand for ``p/100``."""
    return bool(re.search(r"percent", problem, re.IGNORECASE))


def _is_one_value(gold: str) -> bool:
    s = clean_latex(gold)
    if relations(_as_value(s)) or lists_several_values(_as_value(s)):
        return False
    return "\\begin" not in s and "\\pm" not in s and "\\mp" not in s


def claim_mismatch(gold: str, pred: str, *, percent_context: bool = False) -> str | None:
    """Why ``pred`` cannot equal ``gold`` because of what it claims, or ``None`` when the value decides.

    Returns ``"relation"``, ``"notation"``, ``"percent"`` or ``"several_values"`` (see the module docstring).
    ``percent_context`` says that the problem asks for a percentage.

    Example:
        >>> claim_mismatch("3", r"3 \\approx 4"), claim_mismatch("3", r"\\{3\\}"), claim_mismatch("3", r"300\\%")
        ('relation', 'several_values', 'percent')
        >>> claim_mismatch("3", "x = 3"), claim_mismatch("3", r"300\\%", percent_context=True)
        (None, None)
    """
    g, p = as_equals(clean_latex(gold)), as_equals(clean_latex(pred))
    if g == p or is_text_answer(g):
        return None
    pred_value = _as_value(p)
    gold_other, pred_other = relations(_as_value(g)), relations(pred_value)
    del gold_other["eq"], pred_other["eq"]  # '=' is judged below and by the assignment rules
    # an inequality may describe the set a gold "x \in S" names; math-verify compares them as sets
    describes_set = "in" in relations(g) and set(pred_other) <= {"lt", "le", "gt", "ge"}
    if pred_other and pred_other != gold_other and not describes_set:
        return "relation"
    gold_eq, pred_eq = relations(g)["eq"], relations(p)["eq"]
    if gold_eq and pred_eq and gold_eq != pred_eq:  # "y = 2x + 3 = 7" is not "y = 2x + 3"
        return "relation"
    if unknown_notation(pred_value) - unknown_notation(g):
        return "notation"
    if has_percent(p) and not (has_percent(g) or percent_context):
        return "percent"
    if _is_one_value(g) and lists_several_values(pred_value):
        return "several_values"
    return None
