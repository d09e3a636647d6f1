"""AST-level bug injection for real Python sources: enumerate mutations, apply one, revert it.

A :class:`Mutation` is a text splice located by an AST node (line and column span, the
old text, the new text), so applying it changes one expression or statement and keeps
the rest of the file byte for byte; reverting puts the old text back. Kinds:

* ``off_by_one``: an integer literal ``n`` becomes ``n + 1`` or ``n - 1``;
* ``wrong_comparison``: ``<`` and ``<=``, ``>`` and ``>=``, ``==`` and ``!=``, ``in`` and ``not in``,
  ``is`` and ``is not``;
* ``wrong_operator``: ``+`` and ``-``, ``*`` and ``//``, ``and`` and ``or``;
* ``dropped_branch``: an ``if`` without ``else`` becomes ``pass``;
* ``negated_condition``: ``if c`` becomes ``if not (c)``;
* ``swapped_arguments``: the first two positional arguments of a call change places;
* ``wrong_default``: a literal default argument (``True``, ``False``, an integer) changes.

Only the Python standard library is used here, so that the validator can run it anywhere.

Example:
    >>> [m.kind for m in enumerate_mutations("pkg/a.py", "def f(x):\\n    return x < 1\\n")]
    ['wrong_comparison', 'off_by_one', 'off_by_one']
"""

from __future__ import annotations

import ast
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

KINDS = ("off_by_one", "wrong_comparison", "wrong_operator", "dropped_branch", "negated_condition",
         "swapped_arguments", "wrong_default")
_COMPARE = {ast.Lt: "<=", ast.LtE: "<", ast.Gt: ">=", ast.GtE: ">", ast.Eq: "!=", ast.NotEq: "==",
            ast.In: "not in", ast.NotIn: "in", ast.Is: "is not", ast.IsNot: "is"}
_BINOP = {ast.Add: "-", ast.Sub: "+", ast.Mult: "//", ast.FloorDiv: "*"}


@dataclass(frozen=True)
class Mutation:
    """One bug: replace ``old`` at lines ``line``-``end_line`` (1-based), columns ``col``-``end_col`` of ``path``."""

    path: str
    kind: str
    line: int
    col: int
    end_line: int
    end_col: int
    old: str
    new: str

    def as_dict(self) -> dict[str, Any]:
        """The JSON form stored in the mutant manifest."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Mutation:
        """The inverse of :meth:`as_dict`."""
        return cls(**{k: data[k] for k in ("path", "kind", "line", "col", "end_line", "end_col", "old", "new")})

    @staticmethod
    def _offset(text: str, line: int, col: int) -> int:
        starts, lines = _line_table(text)
        if not 1 <= line <= len(lines):
            raise ValueError(f"line {line} is outside the file")
        # AST columns count UTF-8 bytes; convert them to a character offset on their line.
        return starts[line - 1] + len(lines[line - 1].encode()[:col].decode(errors="replace"))

    def _offsets(self, text: str) -> tuple[int, int]:
        return self._offset(text, self.line, self.col), self._offset(text, self.end_line, self.end_col)

    def apply(self, text: str) -> str:
        """``text`` with the bug in; raises ``ValueError`` when the located text is not ``old``."""
        start, end = self._offsets(text)
        if text[start:end] != self.old:
            raise ValueError(f"{self.path}:{self.line} does not hold the text this mutation replaces")
        return text[:start] + self.new + text[end:]

    def revert(self, mutated: str) -> str:
        """The inverse of :meth:`apply`: ``old`` back in place of ``new``."""
        start = self._offset(mutated, self.line, self.col)
        if mutated[start:start + len(self.new)] != self.new:
            raise ValueError(f"{self.path}:{self.line} does not hold the mutated text")
        return mutated[:start] + self.old + mutated[start + len(self.new):]

    def overlaps(self, other: Mutation) -> bool:
        """Whether both touch the same file within two lines of each other."""
        return self.path == other.path and self.line <= other.end_line + 2 and other.line <= self.end_line + 2


@lru_cache(maxsize=64)
def _line_table(text: str) -> tuple[list[int], list[str]]:
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    return starts, lines


def _segment(text: str, node: ast.AST) -> str | None:
    return ast.get_source_segment(text, node)


def _span(path: str, kind: str, node: Any, old: str, new: str) -> Mutation:
    return Mutation(path, kind, node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, old, new)


def _candidates(path: str, text: str, node: ast.AST) -> list[Mutation]:
    out: list[Mutation] = []
    old = _segment(text, node) or ""
    if not old and not isinstance(node, ast.arguments):
        return out
    if isinstance(node, ast.Constant) and type(node.value) is int and "\n" not in old and old.isdigit():
        out.append(_span(path, "off_by_one", node, old, str(node.value + 1)))
        if node.value > 0:
            out.append(_span(path, "off_by_one", node, old, str(node.value - 1)))
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
        new = ast.Compare(node.left, [_op_of(_COMPARE[type(node.ops[0])])], node.comparators)
        out.append(_span(path, "wrong_comparison", node, old, _unparse(new, old)))
    elif isinstance(node, ast.BinOp) and type(node.op) in _BINOP:
        new_bin = ast.BinOp(node.left, _binop_of(_BINOP[type(node.op)]), node.right)
        out.append(_span(path, "wrong_operator", node, old, _unparse(new_bin, old)))
    elif isinstance(node, ast.BoolOp) and len(node.values) == 2:
        new_bool = ast.BoolOp(ast.Or() if isinstance(node.op, ast.And) else ast.And(), node.values)
        out.append(_span(path, "wrong_operator", node, old, _unparse(new_bool, old)))
    elif isinstance(node, ast.If):
        test = _segment(text, node.test)
        if test is not None and "\n" not in test:
            neg = ast.If(ast.UnaryOp(ast.Not(), node.test), [], [])
            out.append(_span(path, "negated_condition", node.test, test, ast.unparse(neg.test)))
        if not node.orelse and node.end_lineno is not None and node.end_lineno - node.lineno < 8:
            out.append(_span(path, "dropped_branch", node, old, "pass"))
    elif (isinstance(node, ast.Call) and len(node.args) >= 2
          and not any(isinstance(a, ast.Starred) for a in node.args[:2])):
        first, second = _segment(text, node.args[0]), _segment(text, node.args[1])
        if first and second and first != second and "\n" not in old:
            new_call = ast.Call(node.func, [node.args[1], node.args[0], *node.args[2:]], node.keywords)
            out.append(_span(path, "swapped_arguments", node, old, _unparse(new_call, old)))
    elif isinstance(node, ast.arguments):
        for default in [*node.defaults, *(d for d in node.kw_defaults if d is not None)]:
            value = default.value if isinstance(default, ast.Constant) else None
            if isinstance(value, (bool, int)):
                new_text = repr(not value) if isinstance(value, bool) else str(value + 1)
                seg = _segment(text, default)
                if seg is not None:
                    out.append(_span(path, "wrong_default", default, seg, new_text))
    return out


def _unparse(node: ast.AST, old: str) -> str:
    text = ast.unparse(node)
    # Keep the original's surrounding parentheses so the splice parses the same way in context.
    return f"({text})" if old.startswith("(") and old.endswith(")") and not text.startswith("(") else text


def _op_of(symbol: str) -> ast.cmpop:
    return {"<": ast.Lt(), "<=": ast.LtE(), ">": ast.Gt(), ">=": ast.GtE(), "==": ast.Eq(), "!=": ast.NotEq(),
            "in": ast.In(), "not in": ast.NotIn(), "is": ast.Is(), "is not": ast.IsNot()}[symbol]


def _binop_of(symbol: str) -> ast.operator:
    return {"+": ast.Add(), "-": ast.Sub(), "*": ast.Mult(), "//": ast.FloorDiv()}[symbol]


def _docstring_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skip.add(id(first.value))
    return skip


def is_clean(m: Mutation, text: str) -> bool:
    """Whether ``m`` applies to ``text``, the result parses, and reverting gives ``text`` back exactly."""
    try:
        mutated = m.apply(text)
        ast.parse(mutated)
        return m.revert(mutated) == text
    except (ValueError, SyntaxError):
        return False


def enumerate_mutations(path: str, text: str, *, check: bool = True) -> list[Mutation]:
    """Every mutation of the file at ``path`` (its ``text``) inside a function body, in source order.

    With ``check`` (the default) each one parses after it is applied and reverts to ``text``
    exactly (:func:`is_clean`; callers that sample first may check only their sample).
    Module-level code (imports, constants) is left alone, so a mutant fails tests by
    behaviour, not at import.
    """
    tree = ast.parse(text)
    skip = _docstring_nodes(tree)
    found: list[Mutation] = []
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        nodes = [func.args, *(n for stmt in func.body for n in ast.walk(stmt)
                              if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))]
        for node in nodes:
            if id(node) in skip:
                continue
            found.extend(_candidates(path, text, node))
    unique = {(m.line, m.col, m.end_line, m.end_col, m.new): m for m in found}
    ordered = sorted(unique.values(), key=lambda m: (m.line, m.col, m.kind, m.new))
    return [m for m in ordered if is_clean(m, text)] if check else ordered


def apply_all(files: dict[str, str], mutations: list[Mutation]) -> dict[str, str]:
    """``files`` with every mutation applied (later lines of a file first, so earlier spans stay valid)."""
    out = dict(files)
    for m in sorted(mutations, key=lambda m: (m.path, -m.line, -m.col)):
        out[m.path] = m.apply(out[m.path])
    return out
