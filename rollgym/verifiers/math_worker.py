"""The symbolic side of the MATH verifier; this file runs as a worker script only.

The pool starts it as ``python -I math_worker.py FD MEMORY_MB``: it imports
sympy and math-verify once, then answers jobs over the socket ``FD``. It
imports nothing from rollgym, and ``import rollgym`` never imports it.

math-verify does the real work (LaTeX parsing, sets, intervals, matrices,
``\\pm``, percentages, units, equations); this module only calls it with
timeouts disabled, because the parent enforces a hard timeout by killing the
process, and caches parsed answers so a gold answer is parsed once per worker.

Decimals are exact: every decimal that math-verify reads as a float is turned
into the rational it denotes (``0.1`` is ``1/10``) before comparing, so
math-verify's rounding of floats (6 places by default, meant to accept
``0.333333`` for ``1/3``) never applies, and a decimal approximation of an
irrational answer (``0.57735026919`` for ``\\frac{\\sqrt3}{3}``) is unequal.
"""

from __future__ import annotations

import cmath
import logging
import resource
import sys
import time
import zlib
from functools import lru_cache
from multiprocessing.connection import Connection
from typing import Any

import sympy
from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify
from sympy.core.function import AppliedUndef

for _name in ("math_verify", "latex2sympy2_extended"):
    logging.getLogger(_name).setLevel(logging.CRITICAL)

_EXTRACTION = (LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig())


def exact_decimals(expr: Any) -> Any:
    """``expr`` with every float replaced by the exact rational its decimal digits denote."""
    if isinstance(expr, sympy.MatrixBase):
        return expr.applyfunc(exact_decimals)
    if not isinstance(expr, sympy.Basic):
        return expr
    floats = expr.atoms(sympy.Float)
    if not floats:
        return expr
    exact = {}
    for f in floats:
        try:  # a float keeps the digits it was read from (str gives them back), so this is the written value
            exact[f] = sympy.Rational(str(f))
        except (TypeError, ValueError):
            continue
    return expr.xreplace(exact)


@lru_cache(maxsize=8192)
def parse_answer(text: str, exact: bool = True) -> list[Any]:
    """math-verify's parse of one answer (wrapped in ``$...$`` so it reads as LaTeX), decimals made exact."""
    parsed = parse(f"${text}$", extraction_config=list(_EXTRACTION), parsing_timeout=None)  # type: ignore[arg-type]
    return [exact_decimals(item) for item in parsed] if exact else parsed


def _probe_value(name: str) -> float:
    # a fixed, name-dependent point in [0.5, 1.5], away from 0, 1 and branch cuts
    return 0.5 + (zlib.crc32(name.encode("utf-8")) % 997) / 997 + 0.0137


@lru_cache(maxsize=8192)
def numeric_probe(text: str, exact: bool = True) -> complex | None:
    """The value of a plain expression answer with every variable set to a fixed point, or ``None``.

    Only scalar expressions get a value (not sets, tuples, equations, matrices or
    strings), and only when they evaluate to a finite number.
    """
    parsed = parse_answer(text, exact)
    if not parsed:
        return None
    expr = parsed[0]
    if not isinstance(expr, sympy.Expr) or isinstance(expr, sympy.MatrixExpr) or expr.has(AppliedUndef):
        return None
    try:
        point = {s: sympy.Float(_probe_value(s.name)) for s in expr.free_symbols}
        value = complex(expr.xreplace(point).evalf(30))
    except Exception:
        return None
    return value if cmath.isfinite(value) else None


def symbolic_equal(gold: str, pred: str, exact: bool = True) -> tuple[bool, str | None]:
    """Whether ``pred`` is equivalent to ``gold`` according to math-verify.

    Returns ``(equal, note)``; ``note`` is ``"unparsed"`` when the prediction
    could not be read as mathematics. Before the (sometimes slow) ``verify``,
    two scalar expressions whose values differ clearly (relative 1e-4, looser
    than math-verify's own rounding) at a fixed point are decided unequal.
    ``exact=False`` keeps math-verify's rounding of decimals (the v0 rules).
    """
    gold_parsed = parse_answer(gold, exact)
    pred_parsed = parse_answer(pred, exact)
    if not pred_parsed:
        return False, "unparsed"
    if not gold_parsed:
        return False, "gold_unparsed"
    if "%" not in gold and "%" not in pred:
        g, p = numeric_probe(gold, exact), numeric_probe(pred, exact)
        if g is not None and p is not None and abs(g - p) > 1e-4 * max(1.0, abs(g), abs(p)):
            return False, None
    return bool(verify(gold_parsed, pred_parsed, timeout_seconds=None)), None


def run_job(kind: str, args: tuple[Any, ...]) -> Any:
    """Execute one job: ``"equal"`` compares answers (``"equal_v0"`` with the v0 rules),
    ``"sleep"`` is a diagnostic for timeout tests."""
    if kind in ("equal", "equal_v0"):
        return symbolic_equal(str(args[0]), str(args[1]), exact=kind == "equal")
    if kind == "sleep":
        time.sleep(float(args[0]))
        return True
    raise ValueError(f"unknown job kind {kind!r}")


def serve(conn: Connection, memory_mb: int) -> None:
    """Worker main loop: cap memory, announce readiness, then answer jobs until the pipe closes."""
    if memory_mb > 0:
        limit = memory_mb * 1024 * 1024
        try:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        except (ValueError, OSError):
            pass
    try:  # warm the LaTeX parser and sympy caches so that the first real job is not slow
        symbolic_equal(r"\frac{\sqrt{2}}{2}", r"(x+1)^2, [0, \pi)")
    except Exception:
        pass
    conn.send(("ready", None, None))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        job_id, kind, args = message
        try:
            conn.send((job_id, True, run_job(kind, args)))
        except MemoryError:
            conn.send((job_id, False, "memory"))
        except Exception as exc:  # a sympy bug on odd input is a wrong answer, not a dead worker
            conn.send((job_id, False, f"{type(exc).__name__}: {exc}"[:300]))


if __name__ == "__main__":
    serve(Connection(int(sys.argv[1])), int(sys.argv[2]))
