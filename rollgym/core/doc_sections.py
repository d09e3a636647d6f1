"""Generated sections of text files: the lines between a begin and an end marker, rewritten by a script.

The README's performance table, the GRPO demo's table and each experiment's table in
``docs/experiments.md`` are written this way, so the prose around them stays hand-written.

Example:
    >>> text = "intro\\n<!-- t:begin -->\\nold\\n<!-- t:end -->\\noutro"
    >>> new = replace_section(text, "<!-- t:begin -->", "<!-- t:end -->", "new")
    >>> print(new)
    intro
    <!-- t:begin -->
    new
    <!-- t:end -->
    outro
    >>> section_of(new, "<!-- t:begin -->", "<!-- t:end -->")
    'new'
"""

from __future__ import annotations

from rollgym.core.errors import ConfigError


def replace_section(text: str, begin: str, end: str, body: str, *, where: str = "the text") -> str:
    """``text`` with what stands between ``begin`` and ``end`` replaced by ``body`` (on lines of its own).

    Raises :class:`~rollgym.core.errors.ConfigError` (a ``ValueError``), naming ``where`` and the markers,
    when either marker is missing.
    """
    if begin not in text or end not in text:
        raise ConfigError(f"{where} has no {begin} ... {end} markers; add them where the generated text belongs.")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{body}\n{end}{tail}"


def section_of(text: str, begin: str, end: str) -> str:
    """What stands between ``begin`` and ``end`` in ``text``, without the newlines around it."""
    if begin not in text or end not in text:
        raise ConfigError(f"no {begin} ... {end} markers in the text.")
    return text.split(begin, 1)[1].split(end, 1)[0].strip("\n")
