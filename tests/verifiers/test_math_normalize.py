"""The in-process fast path of the MATH verifier: exact numbers, words, bases, assignments, guards."""

from __future__ import annotations

from fractions import Fraction

import pytest

from tests.conftest import require_module

require_module("hypothesis")  # a property test below; skips (fails in CI) without the dev extra

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from rollgym.verifiers.math_normalize import (  # noqa: E402
    clean_latex,
    nesting_depth,
    parse_base,
    parse_number,
    power_tower_height,
    quick_compare,
    split_assignment,
    strip_units,
    text_key,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("27", Fraction(27)),
        ("27.0", Fraction(27)),
        ("-3", Fraction(-3)),
        (".35625", Fraction(35625, 100000)),
        ("58,500", Fraction(58500)),
        ("10, 080", Fraction(10080)),
        (r"\frac{3}{4}", Fraction(3, 4)),
        (r"\frac 59", Fraction(5, 9)),
        (r"\frac9{19}", Fraction(9, 19)),
        ("-7/2", Fraction(-7, 2)),
        (r"1\frac{4}{5}", Fraction(9, 5)),
        (r"6.72\times 10^{-5}", Fraction(672, 10**7)),
        ("2.5e3", Fraction(2500)),
        ("025", Fraction(25)),
    ],
)
def test_parse_number(text: str, value: Fraction) -> None:
    assert parse_number(text) == value


@pytest.mark.parametrize("text", ["x", r"\sqrt2", "1,2", r"\frac{1}{0}", "9" * 1000, "1e999", "", r"\frac{5}{4}x"])
def test_parse_number_refuses_non_numbers_and_huge_inputs(text: str) -> None:
    assert parse_number(text) is None


@given(st.fractions(max_denominator=10**6))
def test_fraction_forms_round_trip(value: Fraction) -> None:
    sign = "-" if value < 0 else ""
    text = f"{sign}\\frac{{{abs(value.numerator)}}}{{{value.denominator}}}"
    assert parse_number(text) == value
    assert quick_compare(text, f"{value.numerator}/{value.denominator}").verdict is True


def test_clean_latex_and_units() -> None:
    assert clean_latex(r"$\left( 3, \dfrac{\pi}{2} \right).$") == r"(3, \frac{\pi}{2})"
    assert clean_latex(r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}").count("\\\\") == 1
    assert strip_units(r"15\mbox{ cm}^2") == "15"
    assert strip_units(r"\text{Evelyn}") == r"\text{Evelyn}"


def test_text_keys() -> None:
    assert text_key(r"\text{(C)}") == text_key("C") == text_key(r"\textbf{(C)}") == "c"
    assert text_key(r"\text{A, C}") == frozenset({"a", "c"}) == text_key(r"\text{C, A}")
    assert text_key("ab") is None and text_key("x+1") is None


def test_bases_and_assignments() -> None:
    assert parse_base("52_8") == ("52", 8) and parse_base("4210_{5}") == ("4210", 5)
    assert parse_base("19_8") is None  # 9 is not a base-8 digit
    assert split_assignment("x = y = 5").names == ("x", "y")
    assert split_assignment(r"\theta = 2").value == "2"
    assert split_assignment("2x+3=13").equation


def test_quick_compare_never_guesses() -> None:
    assert quick_compare(r"\sqrt{2}", "1.414").verdict is None  # needs sympy: left to the worker
    assert quick_compare("5", r"\sqrt{25}").verdict is None
    assert quick_compare("5", "x+5").verdict is False  # a free variable is not a number
    assert quick_compare("5", "(5, 6)").verdict is False
    assert quick_compare("y = 2x+3", "x = 2x+3").verdict is False


def test_guards_measure_nesting() -> None:
    assert power_tower_height("9^{9^{9^{9}}}") == 3
    assert power_tower_height("x^2 + y^{3}") == 1
    assert nesting_depth("{{{}}}") == 3


@given(
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()), max_size=300),
    st.sampled_from(["3", r"\frac{\sqrt3}{3}", "x=5", r"x \in [-2,7]", r"10\%", r"\text{(C)}", "(1,2)", "y = 2x + 3"]),
)
def test_claim_rules_never_raise(pred: str, gold: str) -> None:
    from rollgym.verifiers.math_claims import claim_mismatch, lists_several_values, relations, unknown_notation

    assert claim_mismatch(gold, pred) in (None, "relation", "notation", "percent", "several_values")
    lists_several_values(pred)
    relations(pred)
    unknown_notation(pred)
