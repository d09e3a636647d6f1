"""Deprecated: the web rubric helpers moved to :mod:`rollgym.verifiers.web` (and the rubric types to
:mod:`rollgym.verifiers.rubric`); the old path warns and goes in rollgym 0.3.0."""

from __future__ import annotations

from rollgym.core.deprecation import moved_to

__getattr__ = moved_to(__name__, {
    "Criterion": "rollgym.verifiers.rubric", "GradeContext": "rollgym.verifiers.rubric",
    "Rubric": "rollgym.verifiers.rubric",
    "Query": "rollgym.verifiers.statediff",
    "answer_equals": "rollgym.verifiers.web",
    "changed_ids": "rollgym.verifiers.web",
    "new_rows": "rollgym.verifiers.web",
    "normalize_text": "rollgym.verifiers.web",
    "parse_money": "rollgym.verifiers.web",
})
