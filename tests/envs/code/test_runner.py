"""``CodeRunner.run_stages``: work that unlocks more work, on kept sandboxes, heaviest stage first."""

from __future__ import annotations

import pytest

from rollgym.envs.code.runner import CodeRunner, Stage
from rollgym.sandbox import Job, Limits, RunResult
from tests.conftest import require_binary

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def runner():
    require_binary("bwrap")
    runner = CodeRunner(Limits(wall_s=10), workers=1, backend="bwrap")
    yield runner
    runner.close()


def printing(text: str) -> Job:
    return Job.python(f"print({text!r})")


def test_stages_unlock_more_stages_and_the_heaviest_waiting_goes_first(runner: CodeRunner) -> None:
    seen: list[str] = []

    def record(results: list[RunResult]) -> list[Stage]:
        seen.extend(r.stdout.strip() for r in results)
        return []

    def unlock(results: list[RunResult]) -> list[Stage]:
        record(results)
        # queued after "light" and "medium": the weight, not the order of arrival, decides
        return [Stage([printing("late heavy")], record, 5.0), Stage([printing("late light")], record, 0.5)]

    runner.run_stages([
        Stage([printing("light")], record, 1.0),
        Stage([printing("first"), printing("second")], unlock, 10.0),
        Stage([printing("medium")], record, 2.0),
    ])
    assert seen == ["first", "second", "late heavy", "medium", "light", "late light"]


def test_each_job_of_a_stage_starts_in_an_emptied_sandbox(runner: CodeRunner) -> None:
    writes = Job.python("n = open('left.txt', 'w').write('x')")
    looks = Job.python("import os\nprint(sorted(os.listdir('.')))")
    out: list[str] = []
    runner.run_stages([Stage([writes, looks], lambda rs: out.extend(r.stdout.strip() for r in rs) or [])])
    assert out == ["", "[]"]


def test_an_error_in_a_stage_function_ends_the_run_and_is_raised(runner: CodeRunner) -> None:
    def fail(results: list[RunResult]) -> list[Stage]:
        raise RuntimeError("the record run failed")

    with pytest.raises(RuntimeError, match="the record run failed"):
        runner.run_stages([Stage([printing("a")], fail, 1.0), Stage([printing("b")], lambda rs: [], 0.0)])
    assert runner.run([printing("after")])[0].stdout == "after\n"  # the runner still works
