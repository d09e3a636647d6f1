"""The Sudoku verifier: is the grid in the last ``<answer>`` block a valid completion of the puzzle?

:func:`verify_sudoku` is a pure function of a task and a response. It reads
the puzzle from ``task.meta`` (``puzzle``: one string per row, ``.`` for a
blank; ``box``: ``[box_rows, box_cols]``) and the solution from
``task.answer`` (one string per row; optional, used for partial credit and to
accept the ground-truth grid without re-checking the rules).

Accepted layouts inside ``<answer>...</answer>``: rows of digits with or
without spaces, with ``|``, ``-``, ``+`` or box-drawing separators, markdown
tables, comma-separated rows, a JSON list of lists or of strings, or all
digits on one line. The digits are read in order, row by row; every digit is
one cell (grids have at most 9 digits). Lines without a digit (rule lines,
code fences, table separators, a label such as ``Final grid:``) are skipped,
except a row of exactly ``size`` blank marks. Inside a line with digits,
``.``, ``_``, ``?`` and ``0`` count as blank cells.

Errors (``Score.error``), each with a one-line ``details["reason"]``:

* ``no_answer``: no complete ``<answer>...</answer>`` block, or an empty one.
* ``malformed``: the block is too long or holds characters no grid layout uses (letters).
* ``wrong_size``: not exactly ``size * size`` cells (two grids, extra or missing rows).
* ``changed_given``: a given digit was changed or blanked.
* ``invalid``: a blank is left unfilled, a digit is out of range, or a row, column or box repeats a digit.

A grid equal to ``task.answer`` is accepted without re-checking the rules (the
answer is the ground truth); any other grid must keep every given and make each
row, column and box a permutation of the digits, so a puzzle with several
solutions accepts each of them. The reward is binary.

``details["partial_credit"]`` is always reported: the fraction of the
puzzle's blank cells filled with the solution's digit (givens never count).
It is ``0.0`` unless a grid of the right size with every given kept was read,
so only a correct answer reaches ``1.0``. With ``partial_credit=True`` it
becomes the reward of incorrect answers.
"""

from __future__ import annotations

import re
from functools import lru_cache
from operator import itemgetter
from typing import Any

from rollgym.core.extraction import extract_tag
from rollgym.core.task import Score, Task

# Generous for a 9x9 markdown table with bold digits; anything longer is not a grid.
MAX_ANSWER_CHARS = 8_000
_CELL_CHARS = "0123456789._?"
# bytes.translate tables: a cell character's byte becomes its value (blank marks 0), every
# other byte (separators, and all bytes of non-ASCII characters) is deleted; and back.
_VALUE_TABLE = bytes(int(chr(b)) if chr(b).isdigit() and b < 128 else 0 for b in range(256))
_NOT_CELL = bytes(b for b in range(256) if b >= 128 or chr(b) not in _CELL_CHARS)
_CHAR_TABLE = b"." + b"123456789" + bytes(246)
# A character that no grid layout uses (the class lists digits, blank marks and separators).
_FOREIGN = re.compile(r"[^0-9._?\s|+\-=,;:\[\](){}'\"*`#\u2500-\u257f]")
_CELL = re.compile(r"[0-9._?]")
_BLANK_MARK = re.compile(r"[._?]")
_GIVEN_MASK = b"\x00" + b"\xff" * 255  # a given's byte becomes 0xff, a blank's stays 0
_DIGIT = re.compile(r"[0-9]")


def grid_from_rows(rows: list[str]) -> list[int]:
    """Flatten rows such as ``["12.4", ...]`` into cell values, ``0`` for a blank.

    Example:
        >>> grid_from_rows(["1.", "21"])
        [1, 0, 2, 1]
    """
    return list(_cell_values("".join(rows)))


def _cell_values(text: str) -> bytes:
    """The values of the cell characters in ``text``, one byte each; everything else dropped."""
    return text.encode("utf-8").translate(_VALUE_TABLE, _NOT_CELL)


def rows_from_grid(values: list[int], size: int) -> list[str]:
    """The row strings of a flat grid, ``.`` for a blank.

    Example:
        >>> rows_from_grid([1, 0, 2, 1], 2)
        ['1.', '21']
    """
    text = bytes(values).translate(_CHAR_TABLE).decode("ascii")
    return [text[i : i + size] for i in range(0, size * size, size)]


def puzzle_shape(meta: dict[str, Any]) -> tuple[int, int, int]:
    """``(size, box_rows, box_cols)`` of a task's meta, checked for consistency."""
    box_rows, box_cols = (int(v) for v in meta["box"])
    size = int(meta["size"])
    if box_rows * box_cols != size or len(meta["puzzle"]) != size:
        raise ValueError(f"Inconsistent Sudoku meta: size {size}, box {box_rows}x{box_cols}.")
    return size, box_rows, box_cols


def parse_grid(text: str, size: int = 0) -> tuple[bytes | None, str | None, str]:
    """Read the cells of a grid written in any accepted layout.

    A line without digits is skipped, unless it holds exactly ``size`` blank
    marks and nothing but separators (a row left entirely blank). Returns
    ``(cells, error, reason)``: ``cells`` holds one byte per cell in reading
    order, its digit or ``0`` for a blank mark; or ``None`` with ``error == "malformed"``.

    Example:
        >>> list(parse_grid("| 1 | . |\\n|---|---|\\n| 2 | 1 |")[0])
        [1, 0, 2, 1]
    """
    if len(text) > MAX_ANSWER_CHARS:
        return None, "malformed", f"the answer block is longer than {MAX_ANSWER_CHARS} characters"
    if "`" not in text and not _FOREIGN.search(text) and not _BLANK_MARK.search(text):
        cells = _cell_values(text)  # the common case: digits and separators only
    else:
        found = bytearray()
        for line in text.splitlines():
            if line.lstrip().startswith("```"):
                continue  # a code fence, possibly with a language name
            if not _DIGIT.search(line) and len(_CELL.findall(line)) != size:
                continue  # a rule line, table separator or label
            bad = _FOREIGN.search(line)
            if bad:
                return None, "malformed", f"unexpected character {bad.group()!r} in the grid"
            found += _cell_values(line)
        cells = bytes(found)
    if not cells:
        return None, "malformed", "no digits in the answer block"
    return cells, None, ""


@lru_cache(maxsize=16)
def _unit_orders(size: int, box_rows: int, box_cols: int) -> tuple[tuple[itemgetter[Any] | None, int], ...]:
    """For rows, columns and boxes: a getter that lists the cells unit by unit, and a key offset.

    Adding the offset to the cells read as one big integer turns each cell's
    digit ``v`` in unit ``u`` into the byte ``10 * u + v`` (at most 99, so no
    carries); a grid of digits ``1..size`` is valid exactly when, in each of
    the three orders, all ``size * size`` keys differ.
    """
    cols = [r * size + c for c in range(size) for r in range(size)]
    boxes = [
        (top + r) * size + left + c
        for top in range(0, size, box_rows)
        for left in range(0, size, box_cols)
        for r in range(box_rows)
        for c in range(box_cols)
    ]
    offset = int.from_bytes(bytes(10 * (j // size) for j in range(size * size)), "big")
    return ((None, offset), (itemgetter(*cols), offset), (itemgetter(*boxes), offset))


def _units_valid(cells: bytes, size: int, box_rows: int, box_cols: int) -> bool:
    """Whether every row, column and box of a grid of digits ``1..size`` holds each digit once."""
    count = size * size
    for getter, offset in _unit_orders(size, box_rows, box_cols):
        ordered = cells if getter is None else bytes(getter(cells))
        keys = (int.from_bytes(ordered, "big") + offset).to_bytes(count, "big")
        if len(set(keys)) != count:
            return False
    return True


def _partial_credit(cells: bytes, puzzle: bytes, answer: Any) -> float:
    solution = _cell_values("".join(answer)) if answer else b""
    if len(solution) != len(puzzle) or len(cells) != len(puzzle):
        return 0.0
    blanks = [i for i, v in enumerate(puzzle) if v == 0]
    if not blanks:
        return 0.0
    return sum(1 for i in blanks if cells[i] == solution[i]) / len(blanks)


def _fail(
    error: str,
    reason: str,
    blanks: int,
    partial_credit: bool,
    size: int,
    cells: bytes | None = None,
    credit: float = 0.0,
) -> Score:
    return Score(
        reward=credit if partial_credit else 0.0,
        correct=False,
        parsed=rows_from_grid(list(cells), size) if cells is not None else None,
        error=error,
        details={"reason": reason, "partial_credit": credit, "blanks": blanks},
    )


def verify_sudoku(task: Task, response: str, *, partial_credit: bool = False) -> Score:
    """Score a response to a Sudoku task; see the module docstring for layouts and errors.

    Example:
        >>> task = Task("t", "Sudoku4x4-v0", "", ["1234", "3412", "2143", "4321"],
        ...             {"size": 4, "box": [2, 2], "puzzle": ["1.34", "3412", "2143", "4321"]})
        >>> verify_sudoku(task, "<answer>1 2 3 4\\n3 4 1 2\\n2 1 4 3\\n4 3 2 1</answer>").reward
        1.0
        >>> verify_sudoku(task, "<answer>1134 3412 2143 4321</answer>").error
        'invalid'
    """
    size, box_rows, box_cols = puzzle_shape(task.meta)
    puzzle = _cell_values("".join(task.meta["puzzle"]))
    blanks = puzzle.count(0)
    text = extract_tag(response if isinstance(response, str) else "", "answer")
    if text is None:
        return _fail("no_answer", "no complete <answer>...</answer> block", blanks, partial_credit, size)
    if not text:
        return _fail("no_answer", "the <answer> block is empty", blanks, partial_credit, size)
    cells, error, reason = parse_grid(text, size)
    if cells is None:
        return _fail(error or "malformed", reason, blanks, partial_credit, size)
    if len(cells) != size * size:
        reason = f"expected {size * size} cells ({size} rows of {size}), found {len(cells)}"
        return _fail("wrong_size", reason, blanks, partial_credit, size)
    # every given kept: the cells under the givens' mask equal the puzzle (one big-int comparison)
    mask = int.from_bytes(puzzle.translate(_GIVEN_MASK), "big")
    if int.from_bytes(cells, "big") & mask != int.from_bytes(puzzle, "big"):
        changed = [i for i, given in enumerate(puzzle) if given and cells[i] != given]
        r, c = divmod(changed[0], size)
        reason = f"{len(changed)} given(s) changed, first at row {r + 1}, column {c + 1}"
        return _fail("changed_given", reason, blanks, partial_credit, size, cells)
    problem = ""
    if task.answer and cells == _cell_values("".join(task.answer)):
        pass  # the ground-truth grid itself: valid by construction, no need to re-check the rules
    elif 0 in cells:
        problem = f"{cells.count(0)} blank cell(s) left unfilled"
    elif max(cells) > size:
        problem = f"digit {max(cells)} is out of range 1..{size}"
    elif not _units_valid(cells, size, box_rows, box_cols):
        problem = "a row, column or box repeats a digit"
    if problem:
        credit = _partial_credit(cells, puzzle, task.answer)
        return _fail("invalid", problem, blanks, partial_credit, size, cells, credit)
    return Score(
        reward=1.0,
        correct=True,
        parsed=rows_from_grid(list(cells), size),
        error=None,
        details={"reason": "", "partial_credit": 1.0, "blanks": blanks},
    )
