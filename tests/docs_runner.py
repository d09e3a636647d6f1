"""Run one Python block from the docs as a script, checking the values its comments show.

``python tests/docs_runner.py BLOCK.py DOC.md LINE`` is what ``tests/test_docs.py`` starts,
once per block, in a fresh folder (``LINE`` is the Markdown line of the block's first line, so
tracebacks and messages point into the Markdown file). The block runs as ``__main__``, as if a
reader had pasted it into a file, with two additions:

* A statement that is an expression (a bare value, as a REPL shows it, or a ``print(...)``
  call) and ends with a comment ``# -> EXPECTED`` (or is followed by a line holding only that
  comment, for long lines) is checked: the value's ``repr`` (or, for
  ``print``, what it printed) must match ``EXPECTED``. Whitespace runs count as one space and
  ``...`` stands for any text, as in doctest's ELLIPSIS. A mismatch stops the block with
  ``line N: expected ..., got ...``.
* A bare expression or ``print`` whose comment looks like a value (``# 1.0``, ``# ('a', 1)``)
  without the arrow is refused, so that no example shows a value the test does not check.

Only the standard library is used: the runner must start as fast as a plain script.

``python tests/docs_runner.py --serve MODULE,MODULE`` is the fork server that the docs test
uses to keep its run short: it imports the listed modules once (torch, transformers and TRL
take seconds to import, and a dozen blocks need them), then forks one child per block. Each
child is a fresh copy of that process (no rollgym import, no registered env ids, no state
from another block), runs the block in its own folder with its output in a file, and exits
as a script does, waiting for its threads and running ``atexit`` handlers, so a block that
would hang at exit still hangs (only the module-by-module teardown is skipped: seconds with
torch loaded). The protocol is JSON lines: a request on stdin
``{"script", "doc", "line", "cwd", "out"}``, then ``{"pid": N}`` when the child starts and
``{"pid": N, "status": S, "cpu": SECONDS}`` when it ends (``S`` as :func:`os.waitstatus_to_exitcode`
gives; ``cpu``: the block's own user and system time, without what it started).
"""

from __future__ import annotations

import ast
import atexit
import contextlib
import importlib
import io
import json
import os
import re
import sys
import threading
import tokenize
from collections.abc import Callable
from typing import Any, NoReturn

ARROW = re.compile(r"#\s*->\s?(.*)$")
CHECK = "__rollgym_docs_check__"


class DocsExampleError(AssertionError):
    """A shown value that the block does not produce, or a shown value without the arrow."""


def comments(source: str) -> dict[int, str]:
    """Line number -> the text of the comment on that line (without ``#``)."""
    found: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            found[token.start[0]] = token.string
    return found


def matches(expected: str, got: str) -> bool:
    """Whitespace-insensitive comparison where ``...`` in ``expected`` matches any text."""
    norm_expected = " ".join(expected.split())
    norm_got = " ".join(got.split())
    pattern = ".*?".join(re.escape(part) for part in norm_expected.split("..."))
    return re.fullmatch(pattern, norm_got, flags=re.DOTALL) is not None


def _looks_like_a_value(comment: str) -> bool:
    text = comment.lstrip("#").strip()
    if not text or text.startswith("->"):
        return False
    try:
        ast.literal_eval(text.replace("...", "None"))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return True


def _is_print(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"


class _Checks(ast.NodeTransformer):
    """Replace every checked expression statement by a call of the check function."""

    def __init__(self, expected: dict[int, str], notes: dict[int, str]) -> None:
        self.expected, self.notes, self.used = expected, notes, set[int]()
        self.errors: list[str] = []

    def visit_Expr(self, node: ast.Expr) -> Any:
        line = node.end_lineno or node.lineno
        if line in self.expected:
            self.used.add(line)
            call = ast.Call(
                func=ast.Name(id=CHECK, ctx=ast.Load()),
                args=[ast.Constant(line), ast.Lambda(args=_no_args(), body=node.value),
                      ast.Constant(_is_print(node.value))],
                keywords=[],
            )
            return ast.copy_location(ast.Expr(value=call), node)
        if line in self.notes and _looks_like_a_value(self.notes[line]):
            shown = self.notes[line].lstrip("#").strip()
            self.errors.append(f"line {line} shows the value {shown!r} without the arrow; write `# -> {shown}` "
                               "so that the docs test checks it")
        return node


def _no_args() -> ast.arguments:
    return ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])


def make_checker(expected: dict[int, str]) -> Callable[[int, Callable[[], Any], bool], Any]:
    """The function the rewritten block calls for each checked statement."""

    def check(line: int, thunk: Callable[[], Any], is_print: bool) -> Any:
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            value = thunk()
        printed = buffer.getvalue()
        sys.stdout.write(printed)
        got = printed if is_print else repr(value)
        if not is_print:
            print(got)
        if not matches(expected[line], got):
            raise DocsExampleError(f"line {line}: expected {expected[line]!r}, got {got.strip()!r}")
        return None

    return check


def run(source: str, doc: str, first_line: int = 1) -> None:
    """Check the block's comments, then run it as ``__main__``; line numbers are ``doc``'s."""
    offset = first_line - 1
    lines = source.splitlines()
    notes: dict[int, str] = {}
    for line, text in comments(source).items():
        if lines[line - 1].lstrip().startswith("#") and ARROW.match(text):
            line -= 1  # an arrow on a line of its own belongs to the statement just above (a long line)
        notes[line + offset] = text
    expected = {line: m.group(1).strip() for line, text in notes.items() if (m := ARROW.match(text))}
    tree = ast.parse(source, filename=doc)
    ast.increment_lineno(tree, offset)
    checks = _Checks(expected, notes)
    tree = ast.fix_missing_locations(checks.visit(tree))
    stray = sorted(set(expected) - checks.used)
    errors = checks.errors + [f"line {line}: `# -> ...` belongs on an expression statement (a value or a print)"
                              for line in stray]
    if errors:
        raise DocsExampleError("; ".join(errors))
    namespace: dict[str, Any] = {"__name__": "__main__", CHECK: make_checker(expected)}
    exec(compile(tree, doc, "exec"), namespace)


def serve(preload: str) -> dict[str, Any] | None:
    """Import ``preload`` (``module`` or ``module:attribute``, comma-separated), then fork a child per request.

    Returns only in a child, with its request (the caller runs the block and exits); the server
    itself returns ``None`` when stdin closes.
    """
    for name in filter(None, preload.split(",")):
        module, _, attribute = name.partition(":")  # "trl:GRPOTrainer": lazy packages import on attribute access
        with contextlib.suppress(ImportError, AttributeError):
            loaded = importlib.import_module(module)
            if attribute:
                getattr(loaded, attribute)
    if threading.active_count() > 1:  # a fork copies only the calling thread: a library's worker would be lost
        print(f"docs_runner: preloading {preload} started threads; fork may be unsafe", file=sys.stderr)
    protocol = sys.stdout
    while text := sys.stdin.readline():
        request = json.loads(text)
        protocol.flush()
        pid = os.fork()
        if pid == 0:
            _become_child(request)
            return request  # type: ignore[no-any-return]
        protocol.write(json.dumps({"pid": pid}) + "\n")
        protocol.flush()
        _, status, usage = os.wait4(pid, 0)
        cpu = round(usage.ru_utime + usage.ru_stime, 2)
        protocol.write(json.dumps({"pid": pid, "status": os.waitstatus_to_exitcode(status), "cpu": cpu}) + "\n")
        protocol.flush()
    return None


def _become_child(request: dict[str, Any]) -> None:
    """Set up a forked child as a fresh script run: own session, folder, output file, no stdin."""
    os.setsid()  # a process group of its own, so that a timeout kills the block and what it started
    os.chdir(request["cwd"])
    out = os.open(request["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    for source, target in ((null, 0), (out, 1), (out, 2)):
        os.dup2(source, target)
    os.close(out)
    os.close(null)
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # the block reads /dev/null, not the requests
    sys.argv = [request["script"]]


def run_child(request: dict[str, Any]) -> NoReturn:
    """Run a forked child's block and exit as a script does, less the teardown of every module.

    The interpreter's own exit waits for non-daemon threads and runs ``atexit`` handlers, and so does
    this (a block that would hang at exit hangs here too); then it leaves with ``os._exit``, since
    tearing down torch, transformers and TRL module by module takes seconds per block.
    """
    code = 0
    try:
        main(request["script"], request["doc"], int(request["line"]))
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    threading._shutdown()  # type: ignore[attr-defined]  # what Py_Finalize does first: join non-daemon threads
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def main(path: str, doc: str, first: int) -> None:
    """Run the block saved at ``path`` as a script would run; exit 3 when a shown value does not match."""
    sys.path[0] = os.getcwd()  # as for `python block.py` run where the block was saved, not tests/
    with open(path, encoding="utf-8") as handle:
        block = handle.read()
    try:
        run(block, doc, first)
    except DocsExampleError as exc:
        print(f"{doc}: {exc}", file=sys.stderr)
        sys.exit(3)


if __name__ == "__main__":
    if sys.argv[1] == "--serve":
        child = serve(sys.argv[2] if len(sys.argv) > 2 else "")
        if child is None:  # stdin closed: the server is done (nothing to clean up; skip a slow finalization)
            sys.stdout.flush()
            os._exit(0)
        run_child(child)
    else:
        main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
