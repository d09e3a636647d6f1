"""verify_sudoku: accepted layouts, error labels, the reward-hack suite, partial credit, robustness."""

from __future__ import annotations

import json
import time

import pytest

from rollgym.core.task import Task
from rollgym.envs.sudoku.generator import SudokuConfig, SudokuGenerator
from rollgym.verifiers.sudoku import MAX_ANSWER_CHARS, grid_from_rows, rows_from_grid, verify_sudoku

SHAPES = [(3, 3), (2, 2), (2, 3)]


def make_task(box: tuple[int, int] = (3, 3), index: int = 0, blanks: int | None = None) -> Task:
    return SudokuGenerator(SudokuConfig(*box, blanks=blanks)).task(index, "train")


def spaced(rows: list[str]) -> str:
    return "\n".join(" ".join(row) for row in rows)


def answer(body: str) -> str:
    return f"Let me think.\n<answer>\n{body}\n</answer>"


TASK = make_task()
SOLUTION: list[str] = TASK.answer


def boxed_layout(rows: list[str]) -> str:
    lines = []
    for r, row in enumerate(rows):
        if r and r % 3 == 0:
            lines.append("------+-------+------")
        lines.append(" | ".join(" ".join(row[c : c + 3]) for c in range(0, 9, 3)))
    return "\n".join(lines)


LAYOUTS = {
    "spaced rows": spaced(SOLUTION),
    "unspaced rows": "\n".join(SOLUTION),
    "box lines": boxed_layout(SOLUTION),
    "markdown table": "\n".join(
        ["| " + " | ".join(SOLUTION[0]) + " |", "|" + "---|" * 9]
        + ["| " + " | ".join(row) + " |" for row in SOLUTION[1:]]
    ),
    "bold markdown": "\n".join("| " + " | ".join(f"**{d}**" for d in row) + " |" for row in SOLUTION),
    "commas": "\n".join(",".join(row) for row in SOLUTION),
    "json list of lists": json.dumps([[int(d) for d in row] for row in SOLUTION]),
    "pretty json": json.dumps([[int(d) for d in row] for row in SOLUTION], indent=2),
    "json strings": json.dumps(SOLUTION),
    "one line": "".join(SOLUTION),
    "code fence": "```text\n" + spaced(SOLUTION) + "\n```",
    "box drawing": "\n".join(
        "│ " + " │ ".join(" ".join(row[c : c + 3]) for c in range(0, 9, 3)) + " │" for row in SOLUTION
    ),
    "python tuples": "(" + ", ".join("(" + ", ".join(row) + ")" for row in SOLUTION) + ")",
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_accepts_common_layouts(layout: str) -> None:
    score = verify_sudoku(TASK, answer(LAYOUTS[layout]))
    assert (score.reward, score.correct, score.error) == (1.0, True, None), score
    assert score.parsed == SOLUTION
    assert score.details["partial_credit"] == 1.0


def test_last_answer_block_counts() -> None:
    wrong = spaced(["1" * 9] * 9)
    assert verify_sudoku(TASK, answer(wrong) + answer(spaced(SOLUTION))).correct
    assert not verify_sudoku(TASK, answer(spaced(SOLUTION)) + answer(wrong)).correct


def test_tag_case_surrounding_text_and_label_lines() -> None:
    text = f"The solution is:\n<ANSWER>{spaced(SOLUTION)}</ANSWER>\nDone."
    assert verify_sudoku(TASK, text).correct
    assert verify_sudoku(TASK, answer("Final grid:\n" + spaced(SOLUTION))).correct


def relabel(rows: list[str], a: str, b: str) -> list[str]:
    """Swap two digits everywhere: still a valid grid, but the givens change."""
    table = str.maketrans({a: b, b: a})
    return [row.translate(table) for row in rows]


def fill_blanks(task: Task, digit: str) -> list[str]:
    return [row.replace(".", digit) for row in task.meta["puzzle"]]


def hacks(task: Task) -> dict[str, tuple[str, str]]:
    """Known reward hacks and the error each must get."""
    size, solution, puzzle = task.meta["size"], task.answer, task.meta["puzzle"]
    other = make_task(tuple(task.meta["box"]), index=1)  # type: ignore[arg-type]
    changed = relabel(solution, solution[0][0], solution[0][1])
    return {
        "empty answer": ("<answer></answer>", "no_answer"),
        "blank answer": ("<answer>\n \n</answer>", "no_answer"),
        "only rule lines": (answer("---+---\n| | |"), "malformed"),
        "no tags": (spaced(solution), "no_answer"),
        "grid outside the tags": (spaced(solution) + "\n<answer>see above</answer>", "malformed"),
        "unclosed tag": ("<answer>\n" + spaced(solution), "no_answer"),
        "all ones in the blanks": (answer(spaced(fill_blanks(task, "1"))), "invalid"),
        "givens unchanged": (answer(spaced(puzzle)), "invalid"),
        "blanks as zeros": (answer(spaced(fill_blanks(task, "0"))), "invalid"),
        "solution of another puzzle": (answer(spaced(other.answer)), "changed_given"),
        "valid grid with changed givens": (answer(spaced(changed)), "changed_given"),
        "two grids in one answer": (answer(spaced(solution) + "\n\n" + spaced(solution)), "wrong_size"),
        "extra row": (answer(spaced(solution) + "\n" + " ".join(solution[0])), "wrong_size"),
        "missing row": (answer(spaced(solution[:-1])), "wrong_size"),
        "digit out of range": (answer(spaced(fill_blanks(task, str(size + 1)))), "invalid")
        if size < 9
        else (answer(spaced(fill_blanks(task, "9"))), "invalid"),
        "prose in the answer": (answer("I could not solve it"), "malformed"),
        "row labels": (answer("\n".join(f"Row {i}: {' '.join(r)}" for i, r in enumerate(solution))), "malformed"),
        "multi-digit numbers": (answer(spaced(solution).replace(solution[0][0], "10", 1)), "wrong_size"),
    }


@pytest.mark.parametrize("box", SHAPES)
def test_reward_hacks_score_zero(box: tuple[int, int]) -> None:
    task = make_task(box)
    for name, (response, error) in hacks(task).items():
        score = verify_sudoku(task, response)
        assert score.reward == 0.0 and not score.correct, name
        assert score.error == error, (name, score)
        assert score.details["reason"], name
    assert verify_sudoku(task, answer(spaced(task.answer))).correct


def test_all_ones_scores_zero_even_with_partial_credit() -> None:
    """reasoning-gym gives ~0.48 here because it counts the givens; only blanks count here."""
    response = answer(spaced(fill_blanks(TASK, "1")))
    ones_in_solution = sum(
        TASK.answer[r][c] == "1" for r in range(9) for c in range(9) if TASK.meta["puzzle"][r][c] == "."
    )
    expected = ones_in_solution / TASK.meta["blanks"]
    strict = verify_sudoku(TASK, response)
    credit = verify_sudoku(TASK, response, partial_credit=True)
    assert strict.reward == 0.0
    assert strict.details["partial_credit"] == pytest.approx(expected)
    assert credit.reward == pytest.approx(expected) and expected < 0.2
    assert not credit.correct


def test_partial_credit_counts_only_blanks() -> None:
    puzzle, solution = TASK.meta["puzzle"], TASK.answer
    blanks = [(r, c) for r in range(9) for c in range(9) if puzzle[r][c] == "."]
    grid = [list(row) for row in solution]
    # break exactly 5 blank cells with a digit that differs from the solution
    for r, c in blanks[:5]:
        grid[r][c] = "1" if solution[r][c] != "1" else "2"
    response = answer(spaced(["".join(row) for row in grid]))
    score = verify_sudoku(TASK, response, partial_credit=True)
    assert score.error == "invalid" and not score.correct
    assert score.reward == pytest.approx((len(blanks) - 5) / len(blanks))
    # the givens alone earn nothing
    givens_only = verify_sudoku(TASK, answer(spaced(puzzle)), partial_credit=True)
    assert givens_only.reward == 0.0 and givens_only.details["partial_credit"] == 0.0
    # off by default, reported anyway
    assert verify_sudoku(TASK, response).reward == 0.0
    assert verify_sudoku(TASK, response).details["partial_credit"] == score.reward
    # unreadable answers get no credit
    assert verify_sudoku(TASK, "no tags", partial_credit=True).reward == 0.0


def test_correct_answer_is_judged_by_rules_not_string_match() -> None:
    """A puzzle with two solutions (hand-made) accepts both; only the givens and the rules matter."""
    task = Task(
        "t",
        "Sudoku4x4-v0",
        "",
        ["1234", "3412", "2143", "4321"],
        {"size": 4, "box": [2, 2], "puzzle": ["12..", "34..", "....", "...."]},
    )
    assert verify_sudoku(task, answer(spaced(["1234", "3412", "2143", "4321"]))).correct
    assert verify_sudoku(task, answer(spaced(["1234", "3421", "2143", "4312"]))).correct


def test_huge_input_is_bounded() -> None:
    big_answer = answer("1 " * 2_000_000)
    start = time.perf_counter()
    score = verify_sudoku(TASK, big_answer)
    assert score.error == "malformed" and str(MAX_ANSWER_CHARS) in score.details["reason"]
    noise = "<answer>" * 200_000 + "x" * 1_000_000
    assert verify_sudoku(TASK, noise).error == "no_answer"
    elapsed = time.perf_counter() - start
    assert elapsed < 30  # a loose hang guard, not a timing claim


def test_grid_helpers_round_trip() -> None:
    rows = TASK.meta["puzzle"]
    assert rows_from_grid(grid_from_rows(rows), 9) == rows


def test_task_without_stored_solution_is_judged_by_rules() -> None:
    task = Task(TASK.id, TASK.env_id, TASK.prompt, None, TASK.meta)
    assert verify_sudoku(task, answer(spaced(SOLUTION))).correct
    wrong = verify_sudoku(task, answer(spaced(fill_blanks(TASK, "1"))), partial_credit=True)
    assert wrong.error == "invalid" and wrong.reward == 0.0 and wrong.details["partial_credit"] == 0.0


@pytest.mark.parametrize("response", [None, b"<answer>1</answer>", 42])
def test_non_text_responses_score_zero(response: object) -> None:
    score = verify_sudoku(TASK, response)  # type: ignore[arg-type]
    assert score.reward == 0.0 and score.error == "no_answer"
