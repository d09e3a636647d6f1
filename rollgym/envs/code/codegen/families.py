"""The six CodeGen task families: each draws a chain of operations, its description and its reference code.

A family knows its function's name and signature, a pool of operations (each an
English sentence and the lines of Python that do it), how to draw random inputs of
a given size, and which edge cases are worth testing. A task chains ``steps``
operations; the reference solution is the chain written out.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

Rng = np.random.Generator


@dataclass(frozen=True)
class Step:
    """One operation of a task: what the prompt says and what the reference does."""

    text: str
    code: str  # lines at function-body indentation


@dataclass(frozen=True)
class Family:
    """A task family (see the module docstring)."""

    name: str
    entry_point: str
    signature: str
    head: str  # reference lines before the steps
    tail: str  # reference lines after the steps (the return)
    draw_step: Callable[[Rng, int], Step]  # (rng, input size) -> one operation
    draw_input: Callable[[Rng, int], tuple[Any, ...]]
    edge_inputs: Callable[[int], list[tuple[Any, ...]]]
    intro: str


def _pick(rng: Rng, items: list[Any] | tuple[Any, ...] | str) -> Any:
    return items[int(rng.integers(len(items)))]


# -- string ----------------------------------------------------------------------------------

_ALPHABET = string.ascii_letters + string.digits + "  .,!-"


def _string_step(rng: Rng, size: int) -> Step:
    kind = int(rng.integers(9))
    if kind == 0:
        return Step("reverse the string", "    s = s[::-1]\n")
    if kind == 1:
        return Step("convert every letter to upper case", "    s = s.upper()\n")
    if kind == 2:
        return Step("remove every digit", "    s = ''.join(c for c in s if not c.isdigit())\n")
    if kind == 3:
        a, b = _pick(rng, string.ascii_lowercase), _pick(rng, string.ascii_lowercase + "*#_")
        return Step(f"replace every '{a}' with '{b}' (lower case only)", f"    s = s.replace({a!r}, {b!r})\n")
    if kind == 4:
        k = int(rng.integers(1, 6))
        return Step(
            f"rotate it left by {k} characters, cyclically (an empty string stays empty)",
            f"    if s:\n        s = s[{k} % len(s):] + s[:{k} % len(s)]\n",
        )
    if kind == 5:
        return Step("keep only the characters at even positions (0, 2, 4, ...)", "    s = s[::2]\n")
    if kind == 6:
        return Step("write every vowel (a, e, i, o, u, in either case) twice",
                    "    s = ''.join(c * 2 if c in 'aeiouAEIOU' else c for c in s)\n")
    if kind == 7:
        return Step("swap the case of every letter", "    s = s.swapcase()\n")
    return Step("remove spaces at both ends and collapse each run of spaces into one space",
                "    s = ' '.join(s.split(' ')).strip(' ')\n    while '  ' in s:\n        s = s.replace('  ', ' ')\n")


def _string_input(rng: Rng, size: int) -> tuple[Any, ...]:
    n = int(rng.integers(0, size + 1))
    return ("".join(_pick(rng, _ALPHABET) for _ in range(n)),)


STRING = Family(
    "string", "transform_text", "(s: str) -> str", "", "    return s\n", _string_step, _string_input,
    lambda size: [("",), ("a",), ("  ",), ("1234567890",), ("AbC dEf",)],
    "takes a string `s` and returns a string",
)


# -- list ------------------------------------------------------------------------------------


def _list_step(rng: Rng, size: int) -> Step:
    kind = int(rng.integers(9))
    if kind == 0:
        t = int(rng.integers(-10, 11))
        return Step(f"keep only the numbers greater than {t}", f"    xs = [x for x in xs if x > {t}]\n")
    if kind == 1:
        m = int(_pick(rng, [-3, -2, 2, 3, 5]))
        return Step(f"multiply every number by {m}", f"    xs = [x * {m} for x in xs]\n")
    if kind == 2:
        a = int(rng.integers(-9, 10)) or 7
        return Step(f"add {a} to every number", f"    xs = [x + {a} for x in xs]\n")
    if kind == 3:
        return Step("sort the numbers in descending order", "    xs = sorted(xs, reverse=True)\n")
    if kind == 4:
        return Step("remove repeated numbers, keeping the first occurrence of each",
                    "    seen = set()\n    xs = [x for x in xs if not (x in seen or seen.add(x))]\n")
    if kind == 5:
        return Step("reverse the list", "    xs = xs[::-1]\n")
    if kind == 6:
        return Step("replace every number by its absolute value", "    xs = [abs(x) for x in xs]\n")
    if kind == 7:
        k = int(rng.integers(1, max(2, size // 2) + 1))
        return Step(f"keep only the first {k} numbers (all of them if there are fewer)", f"    xs = xs[:{k}]\n")
    k = int(rng.integers(1, 5))
    return Step(f"replace every number by the running sum up to and including it, then drop all but every {k}-th "
                f"running sum (keep positions {k - 1}, {2 * k - 1}, ... counting from 0)" if k > 1 else
                "replace every number by the running sum up to and including it",
                "    total, sums = 0, []\n    for x in xs:\n        total += x\n        sums.append(total)\n"
                f"    xs = sums[{k - 1}::{k}]\n")


def _list_input(rng: Rng, size: int) -> tuple[Any, ...]:
    n = int(rng.integers(0, size + 1))
    return ([int(v) for v in rng.integers(-20, 21, size=n)],)


LIST = Family(
    "list", "transform_numbers", "(xs: list[int]) -> list[int]", "    xs = list(xs)\n", "    return xs\n",
    _list_step, _list_input,
    lambda size: [([],), ([0],), ([-5],), ([3, 3, 3],), ([-1, 1, -1, 1],)],
    "takes a list of integers `xs` and returns a new list of integers (it must not change `xs`)",
)


# -- arithmetic ------------------------------------------------------------------------------


def _arith_step(rng: Rng, size: int) -> Step:
    kind = int(rng.integers(8))
    if kind == 0:
        a = int(rng.integers(-50, 51)) or 13
        return Step(f"add {a}", f"    n = n + {a}\n")
    if kind == 1:
        m = int(_pick(rng, [-3, -2, 2, 3, 7]))
        return Step(f"multiply by {m}", f"    n = n * {m}\n")
    if kind == 2:
        m = int(rng.integers(5, 100))
        return Step(f"take the remainder of division by {m} (Python's %, so the result is from 0 to {m - 1})",
                    f"    n = n % {m}\n")
    if kind == 3:
        return Step("replace the number by the sum of the decimal digits of its absolute value",
                    "    n = sum(int(d) for d in str(abs(n)))\n")
    if kind == 4:
        return Step("if it is even, halve it; otherwise multiply it by 3 and add 1",
                    "    n = n // 2 if n % 2 == 0 else 3 * n + 1\n")
    if kind == 5:
        return Step("reverse the order of the decimal digits of its absolute value, keeping the sign "
                    "(leading zeros disappear: 120 becomes 21)",
                    "    n = (-1 if n < 0 else 1) * int(str(abs(n))[::-1])\n")
    if kind == 6:
        d = int(rng.integers(2, 10))
        return Step(f"divide by {d}, rounding down (floor division, so -7 // 2 is -4)", f"    n = n // {d}\n")
    return Step("replace the number by how many positive divisors its absolute value has (0 stays 0)",
                "    m = abs(n)\n    n = sum(1 for k in range(1, m + 1) if m % k == 0) if m <= 10**6 else 0\n")


def _arith_input(rng: Rng, size: int) -> tuple[Any, ...]:
    bound = 10 * size
    return (int(rng.integers(-bound, bound + 1)),)


ARITHMETIC = Family(
    "arithmetic", "transform_number", "(n: int) -> int", "", "    return n\n", _arith_step, _arith_input,
    lambda size: [(0,), (1,), (-1,), (10 * size,), (-10 * size,)],
    "takes an integer `n` and returns an integer; apply each step to the result of the previous one",
)


# -- dictionary ------------------------------------------------------------------------------

_WORDS = ("apple", "Apple", "bear", "cat", "cart", "dog", "door", "echo", "east", "fig", "gate", "Gate", "hat")


def _dict_build(rng: Rng) -> Step:
    kind = int(rng.integers(3))
    if kind == 0:
        return Step("map each distinct word to how many times it occurs (words are case-sensitive)",
                    "    d = {}\n    for w in words:\n        d[w] = d.get(w, 0) + 1\n")
    if kind == 1:
        return Step("map each lower-cased first letter to how many words start with it (ignore empty words)",
                    "    d = {}\n    for w in words:\n        if w:\n            k = w[0].lower()\n"
                    "            d[k] = d.get(k, 0) + 1\n")
    return Step("map each word length to the number of words of that length",
                "    d = {}\n    for w in words:\n        d[len(w)] = d.get(len(w), 0) + 1\n")


def _dict_step(rng: Rng, size: int) -> Step:
    kind = int(rng.integers(3))
    if kind == 0:
        k = int(rng.integers(2, 4))
        return Step(f"then drop every entry whose count is below {k}",
                    f"    d = {{k: v for k, v in d.items() if v >= {k}}}\n")
    if kind == 1:
        a = int(rng.integers(1, 10))
        return Step(f"then multiply every count by {a}", f"    d = {{k: v * {a} for k, v in d.items()}}\n")
    return Step("then drop every entry whose count is odd", "    d = {k: v for k, v in d.items() if v % 2 == 0}\n")


def _dict_input(rng: Rng, size: int) -> tuple[Any, ...]:
    n = int(rng.integers(0, size + 1))
    return ([str(_pick(rng, _WORDS)) for _ in range(n)],)


DICTIONARY = Family(
    "dictionary", "word_stats", "(words: list[str]) -> dict", "", "    return d\n",
    _dict_step, _dict_input,
    lambda size: [([],), (["apple"],), (["", "a", ""],), (["cat", "cat", "Cat"],)],
    "takes a list of words and returns a dictionary",
)


# -- recursion -------------------------------------------------------------------------------


def _recursion_step(rng: Rng, size: int) -> Step:
    raise NotImplementedError  # recursion tasks are drawn whole; see draw_recursion


def draw_recursion(rng: Rng, steps: int) -> list[Step]:
    """A linear recurrence of order ``min(steps, 4)`` modulo a prime, with start values."""
    order = min(steps, 4)
    coeffs = [int(rng.integers(-3, 4)) or 1 for _ in range(order)]
    starts = [int(rng.integers(0, 10)) for _ in range(order)]
    add = int(rng.integers(0, 10))
    mod = int(_pick(rng, [1_000_003, 998_244_353, 10_007, 65_521]))
    terms = " + ".join(f"{c} * f(n - {i + 1})" for i, c in enumerate(coeffs)).replace("+ -", "- ")
    text = (
        "compute f(n), where " + ", ".join(f"f({i}) = {v}" for i, v in enumerate(starts))
        + f"; and for n >= {order}, f(n) = ({terms} + {add}) mod {mod}, with Python's % "
        f"(so the result is from 0 to {mod - 1}). n can be up to a few thousand, so avoid exponential recursion"
    )
    code = (
        f"    values = {starts!r}\n"
        f"    while len(values) <= n:\n"
        f"        values.append(({' + '.join(f'{c} * values[-{i + 1}]' for i, c in enumerate(coeffs))}"
        f" + {add}) % {mod})\n"
        "    return values[n]\n"
    )
    return [Step(text, code)]


def _recursion_input(rng: Rng, size: int) -> tuple[Any, ...]:
    return (int(rng.integers(0, 5 * size + 1)),)


RECURSION = Family(
    "recursion", "sequence_value", "(n: int) -> int", "", "", _recursion_step, _recursion_input,
    lambda size: [(0,), (1,), (2,), (3,), (4,), (5 * size,)],
    "takes an integer `n >= 0` and returns an integer",
)


# -- simulation ------------------------------------------------------------------------------

_RULES = ("wrap", "back", "skip", "turn")


def draw_simulation(rng: Rng, steps: int) -> list[Step]:
    """A robot's walk: the base rules and ``steps - 1`` extra rules."""
    extra = [str(r) for r in rng.permutation(_RULES)[: max(0, min(steps - 1, len(_RULES)))]]
    width, height, k = int(rng.integers(3, 10)), int(rng.integers(3, 10)), int(rng.integers(3, 6))
    texts = ["a robot starts at x = 0, y = 0 facing north (north is y + 1, east is x + 1); 'F' moves one cell "
             "forward, 'L' and 'R' turn 90 degrees left and right; every other character does nothing"]
    code = ["    x, y, facing = 0, 0, 0\n", "    moves = [(0, 1), (1, 0), (0, -1), (-1, 0)]\n",
            "    for number, c in enumerate(commands, start=1):\n"]
    if "skip" in extra:
        texts.append(f"every {k}-th character of the commands (counting from 1) is ignored")
        code.append(f"        if number % {k} == 0:\n            continue\n")
    code.append("        if c == 'F':\n            x, y = x + moves[facing][0], y + moves[facing][1]\n"
                "        elif c == 'L':\n            facing = (facing - 1) % 4\n"
                "        elif c == 'R':\n            facing = (facing + 1) % 4\n")
    if "back" in extra:
        texts.append("'B' moves one cell backwards without turning")
        code.append("        elif c == 'B':\n            x, y = x - moves[facing][0], y - moves[facing][1]\n")
    if "turn" in extra:
        texts.append("'U' turns around (180 degrees)")
        code.append("        elif c == 'U':\n            facing = (facing + 2) % 4\n")
    if "wrap" in extra:
        texts.append(f"the floor is {width} cells wide and {height} high and wraps around: after every move, "
                     f"x becomes x mod {width} and y becomes y mod {height} (Python's %)")
        code.append(f"        x, y = x % {width}, y % {height}\n")
    texts.append("return the final position and facing as a tuple (x, y, d) with d one of 'N', 'E', 'S', 'W'")
    code.append("    return (x, y, 'NESW'[facing])\n")
    return [Step("; ".join(texts), "".join(code))]


def _simulation_input(rng: Rng, size: int) -> tuple[Any, ...]:
    n = int(rng.integers(0, size + 1))
    return ("".join(_pick(rng, "FFFLRBUX") for _ in range(n)),)


SIMULATION = Family(
    "simulation", "robot_position", "(commands: str) -> tuple", "", "", _recursion_step, _simulation_input,
    lambda size: [("",), ("F",), ("LLLL",), ("X?",), ("BBBB",)],
    "takes a string of commands and returns a tuple",
)

FAMILIES: dict[str, Family] = {f.name: f for f in (STRING, LIST, ARITHMETIC, DICTIONARY, RECURSION, SIMULATION)}


def draw_steps(family: Family, rng: Rng, steps: int, size: int) -> list[Step]:
    """The operations of one task of ``family``."""
    if family.name == "recursion":
        return draw_recursion(rng, steps)
    if family.name == "simulation":
        return draw_simulation(rng, steps)
    if family.name == "dictionary":
        return [_dict_build(rng)] + [_dict_step(rng, size) for _ in range(steps - 1)]
    return [family.draw_step(rng, size) for _ in range(steps)]


def reference_source(family: Family, chosen: list[Step]) -> str:
    """The reference solution: the signature, then each operation's lines."""
    return f"def {family.entry_point}{family.signature}:\n{family.head}{''.join(s.code for s in chosen)}{family.tail}"


def describe(family: Family, chosen: list[Step]) -> str:
    """The numbered description of the operations."""
    if len(chosen) == 1 and family.name in ("recursion", "simulation"):
        return chosen[0].text[0].upper() + chosen[0].text[1:] + "."
    return "\n".join(f"{i}. {s.text[0].upper() + s.text[1:]}." for i, s in enumerate(chosen, start=1))
