"""The call harness and the typed value format shared by the host and the sandbox. Standard library only.

This module is imported on the host (:func:`encode`, :func:`decode`) and its source
is sent into the sandbox, where :func:`run_calls` loads the candidate's program and
calls its function on each input, writing one JSON line per call to a results file.

Trust: the harness shares an interpreter with the candidate, so everything it
writes is only the candidate's *claim* about what its function returned; the host
parses the claims into plain built-in values (never the candidate's objects) and
grades them with code and expected values that never enter the sandbox. A forged
line is no stronger than a function that returns the forged value.

The value format is JSON with a type tag on every node, so that ``1``, ``1.0``,
``True`` and ``"1"`` stay distinct, and tuples, sets and dict keys survive:
``None -> ["N"]``, ``True -> ["b", true]``, ``7 -> ["i", "7"]``, ``0.5 -> ["f", "0.5"]``,
``"a" -> ["s", "a"]``, ``b"a" -> ["y", "61"]``, ``[1] -> ["l", [...]]``, tuple ``"t"``,
set ``"S"`` and frozenset ``"F"`` (items sorted), dict ``["d", [[key, value], ...]]`` (in insertion
order, which code may rely on), complex ``["c", re, im]``.
Only exact built-in types encode; anything else (a subclass, an object with its
own ``__eq__``) becomes ``["?", type name]``, which never equals an expected value.
"""

from __future__ import annotations

import json
import math
import os
import sys
from typing import Any

MAX_DEPTH = 64
MAX_NODES = 200_000
MAX_INT_DIGITS = 5000
_TAGS: dict[type, str] = {list: "l", tuple: "t", set: "S", frozenset: "F"}


class EncodeError(ValueError):
    """A value too large or too deep to encode."""


def encode(value: Any) -> Any:
    """The tagged JSON form of ``value`` (exact built-in types only).

    Example:
        >>> encode([1, 1.0, True, "1", (None,)])
        ['l', [['i', '1'], ['f', '1.0'], ['b', True], ['s', '1'], ['t', [['N']]]]]
    """
    budget = [MAX_NODES]
    return _encode(value, 0, budget)


def _encode(value: Any, depth: int, budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise EncodeError("value has too many parts")
    if depth > MAX_DEPTH:
        raise EncodeError("value is nested too deeply")
    kind = type(value)
    if value is None:
        return ["N"]
    if kind is bool:
        return ["b", value]
    if kind is int:
        if value.bit_length() > MAX_INT_DIGITS * 3.33:
            raise EncodeError("integer is too large")
        return ["i", str(value)]
    if kind is float:
        return ["f", repr(value)]
    if kind is str:
        return ["s", value]
    if kind is bytes:
        return ["y", value.hex()]
    if kind is complex:
        return ["c", repr(value.real), repr(value.imag)]
    if kind in (list, tuple, set, frozenset):
        tag = _TAGS[kind]
        items = [_encode(v, depth + 1, budget) for v in value]
        if tag in ("S", "F"):
            items.sort(key=_order)
        return [tag, items]
    if kind is dict:
        return ["d", [[_encode(k, depth + 1, budget), _encode(v, depth + 1, budget)] for k, v in value.items()]]
    return ["?", getattr(kind, "__qualname__", "object")[:100]]


def _order(node: Any) -> str:
    return json.dumps(node, sort_keys=True)


def decode(node: Any, depth: int = 0) -> Any:
    """The plain built-in value of a tagged node; :class:`ValueError` for anything malformed.

    Example:
        >>> decode(encode({(1, 2): {3.5}}))
        {(1, 2): {3.5}}
    """
    if depth > MAX_DEPTH or not isinstance(node, list) or not node or not isinstance(node[0], str):
        raise ValueError("malformed value")
    tag = node[0]
    if tag == "N" and len(node) == 1:
        return None
    if len(node) == 2 and tag == "b" and isinstance(node[1], bool):
        return node[1]
    if len(node) == 2 and tag == "i" and isinstance(node[1], str) and len(node[1]) <= MAX_INT_DIGITS + 1:
        return int(node[1])
    if len(node) == 2 and tag == "f" and isinstance(node[1], str) and len(node[1]) <= 40:
        return float(node[1])
    if len(node) == 2 and tag == "s" and isinstance(node[1], str):
        return node[1]
    if len(node) == 2 and tag == "y" and isinstance(node[1], str):
        return bytes.fromhex(node[1])
    if len(node) == 3 and tag == "c" and all(isinstance(x, str) and len(x) <= 40 for x in node[1:]):
        return complex(float(node[1]), float(node[2]))
    if len(node) == 2 and tag in ("l", "t", "S", "F") and isinstance(node[1], list):
        items = [decode(v, depth + 1) for v in node[1]]
        if tag == "l":
            return items
        if tag == "t":
            return tuple(items)
        return set(items) if tag == "S" else frozenset(items)
    if len(node) == 2 and tag == "d" and isinstance(node[1], list):
        out = {}
        for pair in node[1]:
            if not isinstance(pair, list) or len(pair) != 2:
                raise ValueError("malformed dict")
            out[decode(pair[0], depth + 1)] = decode(pair[1], depth + 1)
        return out
    if len(node) == 2 and tag == "?" and isinstance(node[1], str):
        raise ValueError(f"unsupported type {node[1]}")
    raise ValueError("malformed value")


def kind(node: Any) -> str:
    """The type tag of an encoded value (``"i"``, ``"l"``...)."""
    return node[0] if isinstance(node, list) and node and isinstance(node[0], str) else "?"


def conforms(got: Any, want: Any) -> bool:
    """Whether encoded ``got`` has the types of encoded ``want``, recursively.

    Types must match exactly (``bool`` is not ``int``, a tuple is not a list), except that
    an ``int`` is accepted where a ``float`` is expected. Elements of a container must each
    have the type of some element of the expected container (any, when it is empty).

    Example:
        >>> conforms(encode([1, 2]), encode([3])), conforms(encode((1,)), encode([1]))
        (True, False)
    """
    g, w = kind(got), kind(want)
    if g == "?" or w == "?":
        return False
    if g != w:
        return g == "i" and w == "f"
    if g in ("l", "t", "S", "F"):
        return _elements_conform(got[1], want[1])
    if g == "d":
        return _elements_conform([p[0] for p in got[1]], [p[0] for p in want[1]]) and _elements_conform(
            [p[1] for p in got[1]], [p[1] for p in want[1]]
        )
    return True


def _elements_conform(got: list[Any], want: list[Any]) -> bool:
    if not want:
        return True
    templates: dict[str, Any] = {}
    for node in want:
        templates.setdefault(kind(node), node)
    for node in got:
        template = templates.get(kind(node))
        if template is None and kind(node) == "i":
            template = templates.get("f")
        if template is None or not conforms(node, template):
            return False
    return True


def same(got: Any, want: Any) -> bool:
    """Type-strict equality of two encoded values (floats within 1e-9 relative, as ``math.isclose``)."""
    if kind(got) != kind(want):
        return False
    if kind(got) == "f":
        a, b = float(got[1]), float(want[1])
        return a == b or (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if kind(got) in ("l", "t", "S", "F"):
        return len(got[1]) == len(want[1]) and all(same(a, b) for a, b in zip(got[1], want[1]))
    if kind(got) == "d":  # dicts compare as Python compares them: in any order
        wanted = {_order(k): v for k, v in want[1]}
        return len(got[1]) == len(want[1]) == len(wanted) and all(
            _order(k) in wanted and same(v, wanted[_order(k)]) for k, v in got[1]
        )
    return bool(got == want)


# -- inside the sandbox -------------------------------------------------------------------------

def _line_encoder() -> Any:
    """``json.dumps`` for the harness's result lines (dicts of lists, strings, ints and booleans, no
    cycles): the C encoder built once (here, in the prelude), not once per line."""
    from json import encoder

    make = getattr(encoder, "c_make_encoder", None)  # the C accelerator; None without it
    if make is None:
        return json.dumps
    encode = make(None, None, encoder.encode_basestring_ascii, None, ": ", ", ", False, False, True)

    def dumps(record: dict[str, Any]) -> str:
        return "".join(encode(record, 0))

    return dumps


_DUMPS = _line_encoder()


class _Sink:
    """A stand-in for stdout/stderr that keeps the first few kilobytes the candidate prints."""

    def __init__(self, limit: int) -> None:
        self.parts: list[str] = []
        self.room = limit

    def write(self, text: Any) -> int:
        text = str(text)
        if self.room > 0:
            self.parts.append(text[: self.room])
            self.room -= len(text)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


class CallTimeout(BaseException):
    """Raised in the candidate's function when one call runs past its time."""


def run_calls(spec: dict[str, Any], source: str, out_path: str = "results.jsonl", out_fd: int | None = None) -> None:
    """Load the candidate's program ``source`` and call its function on every input of ``spec``.

    ``spec`` is ``{"entry_point", "calls": [[args, kwargs(, name)], ...], "call_timeout_s",
    "nonce", "print_limit"}`` with args and kwargs encoded (a call's optional third item names
    another function of the program to call). Each line written to ``out_path``
    (or to ``out_fd``, a descriptor opened for it by the sandbox: ``Job.open_files``)
    is ``{"n": nonce, "i": index, "v": encoded result}`` or ``{"n", "i", "exc": class name}``;
    a first line ``{"n", "load": "ok" | exception class}`` reports loading. Each line is
    written at once (one system call), so a program that ends the process keeps what came before.
    """
    import _signal as signal  # the C module: the Python wrapper's enum conversions cost more than the calls

    dumps = _DUMPS
    nonce = spec["nonce"]
    fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644) if out_fd is None else out_fd
    write = os.write

    def emit(record: dict[str, Any]) -> None:
        record["n"] = nonce
        write(fd, (dumps(record) + "\n").encode())

    sink = _Sink(int(spec.get("print_limit", 4096)))
    real_out, real_err = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = sink  # type: ignore[assignment]

    def on_alarm(signum: int, frame: Any) -> None:
        raise CallTimeout()

    signal.signal(signal.SIGALRM, on_alarm)
    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(MAX_INT_DIGITS + 10)
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
    timeout = float(spec.get("call_timeout_s", 5.0))
    try:
        signal.setitimer(signal.ITIMER_REAL, timeout)
        exec(compile(source, "solution.py", "exec"), namespace)
        signal.setitimer(signal.ITIMER_REAL, 0)
        function = namespace.get(spec["entry_point"])
        if spec["entry_point"] and not callable(function):
            emit({"load": "missing_function"})
            return
    except CallTimeout:
        emit({"load": "Timeout"})
        return
    except BaseException as exc:  # the candidate's program failed to load
        signal.setitimer(signal.ITIMER_REAL, 0)
        emit({"load": type(exc).__name__})
        return
    emit({"load": "ok"})
    for index, call in enumerate(spec["calls"]):
        try:
            args, kwargs = call[0], call[1]
            target = namespace.get(call[2]) if len(call) > 2 else function
            if not callable(target):
                raise NameError(call[2])
            call_args = [decode(a) for a in args]
            call_kwargs = {k: decode(v) for k, v in kwargs.items()}
            signal.setitimer(signal.ITIMER_REAL, timeout)
            try:
                value = target(*call_args, **call_kwargs)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            emit({"i": index, "v": encode(value)})
        except CallTimeout:
            emit({"i": index, "exc": "Timeout"})
        except EncodeError:
            emit({"i": index, "exc": "UnencodableResult"})
        except BaseException as exc:
            emit({"i": index, "exc": type(exc).__name__[:100]})
    emit({"done": True})
    sys.stdout, sys.stderr = real_out, real_err
