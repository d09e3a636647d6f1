import pytest

from rollgym.core import count_boxed, extract_boxed, extract_tag, match_braces


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<answer>42</answer>", "42"),
        ("<answer>1</answer> then <answer> 2 </answer>", "2"),
        ("<ANSWER>x</Answer>", "x"),
        ("<answer>a <answer>b</answer>", "b"),
        ("<answer>\n3 4\n1 2\n</answer>", "3 4\n1 2"),
    ],
)
def test_extract_tag_takes_the_last_complete_tag(text, expected):
    assert extract_tag(text) == expected


@pytest.mark.parametrize("text", ["42", "", "<answer>unclosed", "</answer>only", "answer: 42", None, 7])
def test_extract_tag_never_falls_back_to_the_text(text):
    assert extract_tag(text) is None


def test_extract_tag_other_tag_names():
    assert extract_tag("<move>e4</move>", "move") == "e4"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (r"\boxed{5}", "5"),
        (r"first \boxed{1} last \boxed{\frac{1}{2}}", r"\frac{1}{2}"),
        (r"\fbox{7}", "7"),
        (r"\boxed{\left( 3, \frac{\pi}{2} \right)}", r"\left( 3, \frac{\pi}{2} \right)"),
        (r"\boxed{\{1,2\}}", r"\{1,2\}"),
        (r"\boxed 5", "5"),
        (r"$\boxed{a}$ and $\boxed{b}$", "b"),
    ],
)
def test_extract_boxed_brace_matches_the_last_box(text, expected):
    assert extract_boxed(text) == expected


@pytest.mark.parametrize("text", [r"\boxed{\frac{1}{2}", "no box here", r"\boxedx{1}", "", r"\boxed"])
def test_extract_boxed_returns_none_without_a_complete_box(text):
    assert extract_boxed(text) is None


def test_match_braces_skips_escaped_braces():
    text = r"{a\}b}"
    assert match_braces(text, 0) == len(text) - 1
    assert match_braces("{{}", 0) is None


def test_count_boxed():
    assert count_boxed(r"\boxed{1} or \boxed{2} \fbox{3}") == 3


def test_extraction_is_linear_on_huge_inputs():
    text = "<answer>" * 50_000 + r"\boxed{" * 50_000
    assert extract_tag(text) is None
    assert extract_boxed(text) is None
