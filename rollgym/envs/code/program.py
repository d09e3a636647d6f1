"""From a model's text to a Python program: the last fenced code block, joined to the problem's prompt."""

from __future__ import annotations

import ast
import re

_FENCE_RE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.DOTALL)
MAX_CODE_CHARS = 100_000


def extract_code(text: str, *, require_block: bool = False) -> str | None:
    """The code of the last fenced block (```` ```python ```` or a bare ```` ``` ````) in ``text``.

    Without a fenced block the whole text is the code (HumanEval's completion format,
    in which a base model continues the function body), unless ``require_block``.
    Returns ``None`` for empty code or code over 100,000 characters.

    Example:
        >>> extract_code("Here:\\n```python\\nreturn 1\\n```\\nDone.")
        'return 1\\n'
        >>> extract_code("    return x + 1")
        '    return x + 1'
    """
    if not isinstance(text, str):
        return None
    blocks = [m for m in _FENCE_RE.finditer(text) if m.group(1).lower() in ("", "python", "py", "python3")]
    if blocks:
        code = blocks[-1].group(2)
    elif require_block:
        return None
    else:
        code = text
    if not code.strip() or len(code) > MAX_CODE_CHARS:
        return None
    return code


def defines_function(code: str, name: str) -> bool:
    """Whether ``code`` defines ``name`` at top level (a whole function, not a body to append)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return re.search(rf"^(async\s+)?def\s+{re.escape(name)}\s*\(", code, re.MULTILINE) is not None
    return any(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name for node in tree.body
    )


def build_program(prompt: str, code: str, entry_point: str) -> str:
    """The program to grade: ``prompt`` (its imports and helpers) then the candidate's code.

    Code that defines ``entry_point`` itself is appended after the prompt (the prompt's
    docstring-only function is then replaced); other code is a completion of the
    prompt's function body and is appended as is.

    Example:
        >>> build_program("def f(x):\\n    '''add one'''\\n", "    return x + 1\\n", "f")
        "def f(x):\\n    '''add one'''\\n    return x + 1\\n"
    """
    if defines_function(code, entry_point):
        return prompt.rstrip("\n") + "\n\n\n" + code
    if not prompt.endswith("\n"):
        prompt += "\n"
    return prompt + code
