"""Shared answer extraction: the last ``<answer>`` tag or the last ``\\boxed{}``.

Extraction never falls back to the whole response: a response without the
expected marker has no answer. Both scans are linear in the response length.
"""

from __future__ import annotations

import re

_BOXED_RE = re.compile(r"\\(boxed|fbox)\b")


def extract_tag(text: str, tag: str = "answer") -> str | None:
    """Return the stripped content of the last complete ``<tag>...</tag>``, or ``None``.

    Tag names match case-insensitively; the opening tag is the nearest one before
    the last closing tag.

    Example:
        >>> extract_tag("I think <answer>3</answer>, no: <answer> 4 </answer>")
        '4'
        >>> extract_tag("the answer is 4") is None
        True
    """
    if not isinstance(text, str):
        return None
    lowered = text.lower()
    open_tag, close_tag = f"<{tag.lower()}>", f"</{tag.lower()}>"
    end = lowered.rfind(close_tag)
    if end < 0:
        return None
    start = lowered.rfind(open_tag, 0, end)
    if start < 0:
        return None
    return text[start + len(open_tag) : end].strip()


def match_braces(text: str, open_index: int) -> int | None:
    """Index of the ``}`` matching the ``{`` at ``open_index``, or ``None`` if unbalanced.

    Escaped braces (``\\{`` and ``\\}``) do not count.
    """
    depth = 0
    i = open_index
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def extract_boxed(text: str, commands: tuple[str, ...] = ("boxed", "fbox")) -> str | None:
    """Return the content of the last ``\\boxed{...}`` (or ``\\fbox{...}``), brace-matched.

    Returns ``None`` when there is no box, or when the last box is not closed.

    Example:
        >>> extract_boxed(r"so \\boxed{\\frac{1}{2}} and finally \\boxed{\\frac{3}{4}}.")
        '\\\\frac{3}{4}'
        >>> extract_boxed(r"\\boxed{\\frac{1}{2}") is None
        True
    """
    if not isinstance(text, str):
        return None
    last = None
    for m in _BOXED_RE.finditer(text):
        if m.group(1) in commands:
            last = m
    if last is None:
        return None
    i = last.end()
    while i < len(text) and text[i] == " ":
        i += 1
    if i >= len(text) or text[i] != "{":
        # ``\boxed 5``: the argument is the next token
        token = re.match(r"\s*([^\s$]+)", text[last.end() :])
        return token.group(1) if token else None
    close = match_braces(text, i)
    if close is None:
        return None
    return text[i + 1 : close].strip()


def count_boxed(text: str) -> int:
    """How many ``\\boxed``/``\\fbox`` commands a response contains."""
    return sum(1 for _ in _BOXED_RE.finditer(text)) if isinstance(text, str) else 0
