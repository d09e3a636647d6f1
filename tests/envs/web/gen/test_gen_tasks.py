"""Generated-site tasks: determinism, splits, no free rewards for constant answers, reading answers, bad input."""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from typing import Any

import pytest

from rollgym.core.errors import ConfigError
from rollgym.envs.web.gen.domain import site_keys
from rollgym.envs.web.gen.kinds import KINDS
from rollgym.envs.web.gen.tasks import GEN_SPLITS, TEMPLATES, GenTaskSource, grade_answer, rubric_of
from rollgym.envs.web.server import fresh_copy
from rollgym.verifiers.rubric import GradeContext
from rollgym.verifiers.statediff import StateDiff
from rollgym.verifiers.web import CONSTANT_ANSWERS, matches, read_date, read_int, read_money

SOURCE = GenTaskSource("WebGen-v0")
OTHER_CONSTANTS = ("11", "12", "20", "25", "50", "100", "42", "1.00", "$0.00", "0 USD", "2026-03-01", "today",
                   "maybe", "I don't know", "N/A", "None", "True")


def test_tasks_are_deterministic_and_keep_the_answer_out_of_the_meta() -> None:
    for split in GEN_SPLITS:
        for i in range(20):
            a, b = SOURCE.task(i, split), GenTaskSource("WebGen-v0").task(i, split)
            assert a == b
            assert a.meta["template"] in TEMPLATES and a.meta["gen_site"] is True
            if isinstance(a.answer, str):
                assert a.answer not in repr(a.meta["params"]) or a.meta["mechanism"] == "lookup"


def test_test_shares_the_sites_of_train_but_none_of_its_tasks() -> None:
    tasks = {split: [SOURCE.task(i, split) for i in range(600 if split == "train" else 200)] for split in GEN_SPLITS}
    ids = {split: {t.id for t in ts} for split, ts in tasks.items()}
    assert not ids["train"] & ids["test"] and not ids["train"] & ids["validation"]
    assert not ids["validation"] & ids["test"]
    train_sites = {key for kind in KINDS for key in site_keys(kind, False)}
    held_sites = {key for kind in KINDS for key in site_keys(kind, True)}
    for split in ("train", "validation", "test"):
        assert {t.meta["site"] for t in tasks[split]} <= train_sites
    assert {t.meta["site"] for t in tasks["test_unseen"]} <= held_sites
    assert len({t.meta["site"] for t in tasks["test"]}) > 80  # the same sites, many of them
    assert {t.meta["theme"] for t in tasks["test_unseen"]} == {"quartz", "meadow"}
    assert not {t.meta["theme"] for t in tasks["train"]} & {"quartz", "meadow"}
    assert len(ids["train"]) > 590  # distinct tasks


@pytest.mark.parametrize("split", ["train", "test_unseen"])
def test_every_template_can_be_drawn_on_every_kind_of_split(split: str) -> None:
    for name in TEMPLATES:
        task = GenTaskSource("WebGen-v0", templates=(name,)).task(0, split)
        assert task.meta["template"] == name


def _free_wins(source: GenTaskSource, n: int) -> tuple[Counter[str], Counter[str]]:
    """Per constant, how many of the first ``n`` test tasks it solves at once (the site untouched); and how often
    each answer of a question occurs."""
    wins: Counter[str] = Counter()
    answers: Counter[str] = Counter()
    untouched = GradeContext(answer=None, diff=StateDiff())  # the site as it was: nothing was done
    for i in range(n):
        task = source.task(i, "test")
        rubric = rubric_of(task)
        if task.meta["kind"] == "info":
            answers[str(task.answer)] += 1
        # a change task cannot be met by an answer: its required rows are missing whatever it says
        constants = (None, *CONSTANT_ANSWERS, *OTHER_CONSTANTS) if task.meta["kind"] == "info" else (None, "done")
        for constant in constants:
            if rubric.grade(dataclasses.replace(untouched, answer=constant)).correct:
                wins[repr(constant)] += 1
    return wins, answers


def test_a_constant_answer_solves_at_most_one_percent_of_the_env() -> None:
    """An agent that answers a constant at once solves at most 1% of WebGen-v0's test tasks; no answer is so common
    that guessing it would do better."""
    n = 1500
    wins, answers = _free_wins(SOURCE, n)
    assert max(wins.values(), default=0) <= n // 100, wins.most_common(5)
    assert answers.most_common(1)[0][1] <= n // 100, answers.most_common(3)


#: Kinds whose constant answers CI checks (about 14 s each); ``ROLLGYM_WEBGEN_EVERY_KIND=1`` checks all 11.
CHECKED_KINDS = sorted(KINDS) if os.environ.get("ROLLGYM_WEBGEN_EVERY_KIND") else ["forum", "rentals", "wiki"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", CHECKED_KINDS)
def test_a_constant_answer_solves_at_most_one_percent_of_each_kind(kind: str) -> None:
    """The same within one kind (``kinds=(kind,)``), over 2,000 test tasks (the commonest answers of a kind are
    0.6-0.8% of its tasks: fewer draws would measure the noise)."""
    n = 2000
    wins, answers = _free_wins(GenTaskSource("WebGen-v0", kinds=(kind,)), n)
    assert max(wins.values(), default=0) <= n // 100, wins.most_common(5)
    assert answers.most_common(1)[0][1] <= n // 100, answers.most_common(3)


def test_constant_answers_score_zero_through_the_grader_of_an_episode() -> None:
    """The same with the episode grader on a real database copy: a constant answer and no change scores 0."""
    for i in range(12):
        task = SOURCE.task(i, "test")
        conn = fresh_copy(task.meta["site"])

        def db(sql: str, params: tuple = (), conn: Any = conn) -> list[Any]:
            return conn.execute(sql, params).fetchall()

        for constant in ("", "0", "done", "yes", "1"):
            score = grade_answer(task, constant, db)
            assert score.reward == 0.0 and not score.correct, (task.id, constant)


def test_answers_are_read_by_type_in_every_theme_format() -> None:
    assert read_money("$1,234.50") == read_money("1,234.50 USD") == read_money("1234.5") == 123450
    assert read_money("12 or 13") is None and read_money("$12.345") is None
    assert read_int("3,442 words", "words") == read_int("3442") == 3442 and read_int("3442 pages", "words") is None
    for text in ("2026-03-14", "14 Mar 2026", "March 14, 2026", "14 March 2026", "mar 14, 2026"):
        assert read_date(text) is not None and read_date(text).isoformat() == "2026-03-14", text
    assert read_date("14/03/2026") is None  # day and month order would be a guess
    assert matches("name", "Brelon Eco Kettle", ' "brelon eco  kettle". ')
    assert not matches("name", "Brelon Eco Kettle", "Brelon Eco Kettle, Brelon Pro Kettle")


def test_bad_arguments_get_one_clear_sentence() -> None:
    with pytest.raises(ConfigError, match="Unknown site kind"):
        GenTaskSource("WebGen-v0", kinds=("mall",))
    with pytest.raises(ConfigError, match="Unknown template"):
        GenTaskSource("WebGen-v0", templates=("shop.nope",))
    with pytest.raises(ConfigError, match="Unknown split"):
        SOURCE.task(0, "holdout")
    with pytest.raises(ConfigError, match="belongs to split"):
        GenTaskSource("WebGen-v0", sites=("gen-shop-h0",)).task(0, "train")
    with pytest.raises(ConfigError, match="not a generated site"):
        GenTaskSource("WebGen-v0", sites=("gen-shop-77",))
    assert SOURCE.size("test_unseen") is None and SOURCE.size("train") is None and SOURCE.size("holdout") == 0
    assert SOURCE.extra_splits == ("test_unseen",)
