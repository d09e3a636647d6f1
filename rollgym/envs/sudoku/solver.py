"""A bitmask Sudoku solver: counts solutions up to a limit, solves, and fills random grids.

Grids are flat lists of ``size * size`` ints in row-major order, ``0`` for a
blank. A digit ``d`` is the bit ``1 << (d - 1)``; every row, column and box
keeps the mask of the digits it already holds, so the candidates of a cell are
one ``or`` of three masks. The search always branches on the blank with the
fewest candidates (MRV) and updates the masks in place when it places or takes
back a digit, so nothing is copied between search nodes.

Any box shape works as long as the grid has at most 9 digits (one character
per cell): 2x2 boxes make 4x4 grids, 2x3 boxes 6x6 grids, 3x3 boxes 9x9 grids.

Example:
    >>> from rollgym.envs.sudoku.solver import count_solutions, solve
    >>> puzzle = [0, 0, 0, 0,  3, 0, 0, 2,  2, 0, 0, 3,  4, 0, 2, 0]
    >>> count_solutions(puzzle, (2, 2))
    1
    >>> solve(puzzle, (2, 2))
    [1, 2, 3, 4, 3, 4, 1, 2, 2, 1, 4, 3, 4, 3, 2, 1]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from rollgym.core.errors import ConfigError

Box = tuple[int, int]


@dataclass(frozen=True)
class Geometry:
    """The index tables of one grid shape, shared by every solver call on that shape.

    Attributes:
        box_rows: Rows per box.
        box_cols: Columns per box.
        size: Digits per row (``box_rows * box_cols``); the grid is ``size`` x ``size``.
        row_of: The row of each cell.
        col_of: The column of each cell.
        box_of: The box of each cell, numbered row-major.
        full: The mask with one bit per digit.
        popcount: ``popcount[mask]``, the number of digits in a candidate mask.
        digit_of_bit: Maps a single-digit mask to its digit.
    """

    box_rows: int
    box_cols: int
    size: int
    row_of: tuple[int, ...]
    col_of: tuple[int, ...]
    box_of: tuple[int, ...]
    full: int
    popcount: tuple[int, ...]
    digit_of_bit: dict[int, int]

    @property
    def cells(self) -> int:
        """The number of cells, ``size * size``."""
        return self.size * self.size

    @property
    def box(self) -> Box:
        """The box shape as ``(box_rows, box_cols)``."""
        return (self.box_rows, self.box_cols)


@cache
def geometry(box: Box) -> Geometry:
    """The shared :class:`Geometry` of grids with ``box = (box_rows, box_cols)`` boxes."""
    box_rows, box_cols = int(box[0]), int(box[1])
    if box_rows < 1 or box_cols < 1 or box_rows * box_cols > 9 or box_rows * box_cols < 2:
        raise ConfigError(
            f"A Sudoku box of {box_rows}x{box_cols} is not supported; "
            "use box sides whose product lies between 2 and 9 (e.g. 2x2, 2x3 or 3x3)."
        )
    size = box_rows * box_cols
    cells = range(size * size)
    boxes_per_row = size // box_cols
    row_of = tuple(i // size for i in cells)
    col_of = tuple(i % size for i in cells)
    box_of = tuple((i // size) // box_rows * boxes_per_row + (i % size) // box_cols for i in cells)
    return Geometry(
        box_rows=box_rows,
        box_cols=box_cols,
        size=size,
        row_of=row_of,
        col_of=col_of,
        box_of=box_of,
        full=(1 << size) - 1,
        popcount=tuple(bin(m).count("1") for m in range(1 << size)),
        digit_of_bit={1 << d: d + 1 for d in range(size)},
    )


class _Search:
    """The mutable state of one search: unit masks and the list of blanks.

    Positions ``[0, k)`` of ``empties`` hold the blanks not yet filled at depth
    ``k``; a chosen cell is swapped to position ``k - 1`` and swapped back on
    the way out, so the list is never copied. A blank with one candidate is
    placed in a loop, not a recursive call, and undone from a trail.
    """

    __slots__ = ("boxes", "cols", "consistent", "empties", "geo", "rows", "values")

    def __init__(self, puzzle: Sequence[int], geo: Geometry) -> None:
        size = geo.size
        if len(puzzle) != geo.cells:
            raise ValueError(f"A {size}x{size} grid has {geo.cells} cells, got {len(puzzle)}.")
        self.geo = geo
        self.rows = [0] * size
        self.cols = [0] * size
        self.boxes = [0] * size
        self.empties: list[int] = []
        self.values = list(puzzle)
        self.consistent = True
        for cell, digit in enumerate(puzzle):
            if digit == 0:
                self.empties.append(cell)
                continue
            if not 1 <= digit <= size:
                raise ValueError(f"Cell {cell} holds {digit}; digits must lie in 1..{size} (0 for a blank).")
            bit = 1 << (digit - 1)
            r, c, b = geo.row_of[cell], geo.col_of[cell], geo.box_of[cell]
            if (self.rows[r] | self.cols[c] | self.boxes[b]) & bit:
                self.consistent = False
            self.rows[r] |= bit
            self.cols[c] |= bit
            self.boxes[b] |= bit

    def _choose(self, k: int) -> tuple[int, int, int]:
        """``(index in empties, candidate mask, candidate count)`` of the first blank with fewest
        candidates among the first ``k``; count 0 means a dead end."""
        geo = self.geo
        rows, cols, boxes, empties = self.rows, self.cols, self.boxes, self.empties
        row_of, col_of, box_of, popcount, full = geo.row_of, geo.col_of, geo.box_of, geo.popcount, geo.full
        best_i, best_mask, best_count = -1, 0, 99
        for i in range(k):
            cell = empties[i]
            mask = full & ~(rows[row_of[cell]] | cols[col_of[cell]] | boxes[box_of[cell]])
            if not mask:
                return i, 0, 0
            n = popcount[mask]
            if n < best_count:
                best_i, best_mask, best_count = i, mask, n
                if n == 1:
                    break
        return best_i, best_mask, best_count

    def _place(self, cell: int, bit: int) -> None:
        geo = self.geo
        self.rows[geo.row_of[cell]] ^= bit
        self.cols[geo.col_of[cell]] ^= bit
        self.boxes[geo.box_of[cell]] ^= bit

    def count(self, k: int, limit: int) -> int:
        """Count completions of the first ``k`` blanks, stopping once ``limit`` are found.

        The hot loop of carving. Each pass scans the blanks once: a blank with
        no candidate ends the branch; every blank with a single candidate is
        placed in that same pass (re-checked against the placements before it);
        only when there is none does the search branch on the blank with the
        fewest candidates. Tables are bound to locals once per call.
        """
        geo = self.geo
        rows, cols, boxes, empties = self.rows, self.cols, self.boxes, self.empties
        row_of, col_of, box_of, popcount, full = geo.row_of, geo.col_of, geo.box_of, geo.popcount, geo.full
        trail: list[tuple[int, int, int]] = []  # forced placements: (index, position, bit)
        found = 0
        dead = False
        while not dead:
            if k == 0:
                found = 1
                break
            best_i, best_mask, best_count = -1, 0, 99
            singles: list[tuple[int, int]] = []
            for i in range(k):
                cell = empties[i]
                mask = full & ~(rows[row_of[cell]] | cols[col_of[cell]] | boxes[box_of[cell]])
                if not mask:
                    dead = True
                    break
                if not mask & (mask - 1):
                    singles.append((i, mask))
                elif not singles:
                    n = popcount[mask]
                    if n < best_count:
                        best_i, best_mask, best_count = i, mask, n
            if dead:
                break
            if singles:
                # highest index first: each swap then leaves the other singles where the scan saw them
                for i, mask in reversed(singles):
                    cell = empties[i]
                    r, c, b = row_of[cell], col_of[cell], box_of[cell]
                    if (rows[r] | cols[c] | boxes[b]) & mask:
                        dead = True  # an earlier single of this pass took the digit
                        break
                    k -= 1
                    empties[i], empties[k] = empties[k], cell
                    rows[r] |= mask
                    cols[c] |= mask
                    boxes[b] |= mask
                    trail.append((i, k, mask))
                continue
            k -= 1
            cell = empties[best_i]
            empties[best_i], empties[k] = empties[k], cell
            r, c, b = row_of[cell], col_of[cell], box_of[cell]
            mask = best_mask
            while mask and found < limit:
                bit = mask & -mask
                mask ^= bit
                rows[r] |= bit
                cols[c] |= bit
                boxes[b] |= bit
                found += self.count(k, limit - found)
                rows[r] ^= bit
                cols[c] ^= bit
                boxes[b] ^= bit
            empties[best_i], empties[k] = empties[k], empties[best_i]
            break
        for i, position, bit in reversed(trail):
            cell = empties[position]
            rows[row_of[cell]] ^= bit
            cols[col_of[cell]] ^= bit
            boxes[box_of[cell]] ^= bit
            empties[i], empties[position] = empties[position], empties[i]
        return found

    def fill(self, k: int, order: Sequence[Sequence[int]] | None = None) -> bool:
        """Fill the first ``k`` blanks with the first solution found; ``False`` if there is none.

        ``order[cell]`` lists the digit bits to try at ``cell`` (a random order
        makes random grids); without it digits are tried from 1 upwards. On
        success the digits are in ``values``; on failure everything is undone.
        """
        empties, place, digit_of_bit = self.empties, self._place, self.geo.digit_of_bit
        trail: list[tuple[int, int, int]] = []
        solved = False
        while True:
            if k == 0:
                solved = True
                break
            i, mask, n = self._choose(k)
            if n == 0:
                break
            k -= 1
            cell = empties[i]
            empties[i], empties[k] = empties[k], cell
            if n == 1:
                place(cell, mask)
                trail.append((i, k, mask))
                continue
            if order is None:
                bits = [1 << d for d in range(self.geo.size) if mask >> d & 1]
            else:
                bits = [bit for bit in order[cell] if mask & bit]
            for bit in bits:
                place(cell, bit)
                if self.fill(k, order):
                    self.values[cell] = digit_of_bit[bit]
                    solved = True
                    break
                place(cell, bit)
            if not solved:
                empties[i], empties[k] = empties[k], empties[i]
            break
        if solved:
            for _, position, bit in trail:
                self.values[empties[position]] = digit_of_bit[bit]
            return True
        for i, position, bit in reversed(trail):
            place(empties[position], bit)
            empties[i], empties[position] = empties[position], empties[i]
        return False


def count_solutions(puzzle: Sequence[int], box: Box, limit: int = 2) -> int:
    """The number of solutions of ``puzzle``, counted up to ``limit``.

    ``count_solutions(p, box) == 1`` proves that ``p`` has exactly one solution.
    A puzzle whose givens already clash has none.

    Example:
        >>> count_solutions([0] * 16, (2, 2), limit=5)
        5
    """
    search = _Search(puzzle, geometry(box))
    if not search.consistent:
        return 0
    return search.count(len(search.empties), limit)


def solve(puzzle: Sequence[int], box: Box) -> list[int] | None:
    """The first solution of ``puzzle`` (digits tried in increasing order), or ``None``."""
    search = _Search(puzzle, geometry(box))
    if not search.consistent or not search.fill(len(search.empties)):
        return None
    return search.values


def random_grid(box: Box, digit_orders: Sequence[Sequence[int]]) -> list[int]:
    """A complete valid grid; ``digit_orders[cell]`` is the order in which to try digits there.

    The boxes on the diagonal share no row or column, so they are filled
    directly, box ``i`` with ``digit_orders[i]``; the search then completes the
    rest. The caller draws the orders from its own random generator, so the
    grid is a pure function of them.
    """
    geo = geometry(box)
    size = geo.size
    puzzle = [0] * geo.cells
    for i in range(min(size // geo.box_rows, size // geo.box_cols)):
        top, left = i * geo.box_rows, i * geo.box_cols
        cells = [(top + r) * size + left + c for r in range(geo.box_rows) for c in range(geo.box_cols)]
        for cell, digit in zip(cells, digit_orders[i]):
            puzzle[cell] = digit
    orders = [[1 << (d - 1) for d in order] for order in digit_orders]
    for start in (puzzle, [0] * geo.cells):  # the empty start is a safety net; diagonal starts complete
        search = _Search(start, geo)
        if search.fill(len(search.empties), orders):
            return search.values
    raise AssertionError("an empty grid has a solution")  # pragma: no cover


def transform_grid(grid: Sequence[int], box: Box, keys: Sequence[float]) -> list[int]:
    """Apply a validity-preserving shuffle to ``grid``, chosen by ``4 * size`` sort keys.

    Rows are reordered by band, then within their band; columns by stack, then
    within their stack; digits are relabelled. Every such shuffle maps a valid
    grid to a valid grid, and costs a few list operations instead of a search.
    Keys ``[0, size)`` order bands and stacks, ``[size, 2 size)`` rows,
    ``[2 size, 3 size)`` columns and ``[3 size, 4 size)`` digits.
    """
    geo = geometry(box)
    size, box_rows, box_cols = geo.size, geo.box_rows, geo.box_cols
    if len(keys) < 4 * size:
        raise ValueError(f"transform_grid needs {4 * size} keys, got {len(keys)}.")
    stacks = size // box_cols  # band keys start at 0, stack keys end at size: they never overlap
    rows = sorted(range(size), key=lambda r: (keys[r // box_rows], keys[size + r]))
    cols = sorted(range(size), key=lambda c: (keys[size - stacks + c // box_cols], keys[2 * size + c]))
    digits = sorted(range(1, size + 1), key=lambda d: keys[3 * size + d - 1])
    relabel = [0, *digits]
    return [relabel[grid[r * size + c]] for r in rows for c in cols]


def carve(solution: Sequence[int], order: Sequence[int], blanks: int, box: Box) -> list[int]:
    """Blank cells of ``solution`` in ``order`` while the puzzle stays uniquely solvable.

    A cell is skipped when blanking it would allow a second solution. Carving
    stops once ``blanks`` cells are blank, or when ``order`` runs out; the
    caller counts the blanks of the result.

    Why no count to two is needed: every other solution of the puzzle with
    ``cell`` blanked would put a digit other than ``solution[cell]`` there
    (with that digit it is a solution of the previous, unique puzzle). So the
    removal is safe exactly when no solution exists with that digit banned from
    ``cell``: one search per other candidate of the cell, each stopping at its
    first solution; none at all when that digit is the cell's only candidate.
    The unit masks are updated in place from one removal to the next.
    """
    geo = geometry(box)
    search = _Search(solution, geo)
    if not search.consistent or 0 in solution:
        raise ValueError("carve() needs a complete, valid solution grid.")
    rows, cols, boxes, empties = search.rows, search.cols, search.boxes, search.empties
    puzzle = list(solution)
    full = geo.full
    for cell in order:
        if len(empties) >= blanks:
            break
        bit = 1 << (solution[cell] - 1)
        r, c, b = geo.row_of[cell], geo.col_of[cell], geo.box_of[cell]
        rows[r] ^= bit
        cols[c] ^= bit
        boxes[b] ^= bit
        others = full & ~(rows[r] | cols[c] | boxes[b]) & ~bit
        unique = True
        while others and unique:  # try every other digit in the cell: none may complete the grid
            other = others & -others
            others ^= other
            search._place(cell, other)
            unique = search.count(len(empties), 1) == 0
            search._place(cell, other)
        if unique:
            empties.append(cell)
            puzzle[cell] = 0
        else:
            rows[r] |= bit
            cols[c] |= bit
            boxes[b] |= bit
    return puzzle
