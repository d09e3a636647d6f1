"""``CodeRunner.run_stages``: work that unlocks more work, on kept sandboxes, heaviest stage first."""

from __future__ import annotations

import os

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


AFFINITY = Job.python("import os\nprint(sorted(os.sched_getaffinity(0)))")


def test_a_session_can_keep_its_supervisor_and_jobs_on_given_cpus() -> None:
    require_binary("bwrap")
    cpus = sorted(os.sched_getaffinity(0))
    runner = CodeRunner(Limits(wall_s=10), workers=1, backend="bwrap")
    with runner.sandbox.session(cpus=(cpus[-1],)) as pinned, runner.sandbox.session() as free:
        assert pinned.run(AFFINITY).stdout == f"[{cpus[-1]}]\n"
        assert pinned.run(Job.command(["cat", "/proc/1/status"])).stdout.count(f"Cpus_allowed_list:\t{cpus[-1]}\n") == 1
        assert free.run(AFFINITY).stdout == f"{cpus}\n"


def test_a_runner_pins_each_sandbox_to_a_cpu_of_its_own_when_there_are_as_many_as_cpus() -> None:
    """``pin=None``: one CPU per sandbox exactly when the sandboxes are as many as the CPUs this process
    may use (none can then sit idle while another waits); fewer sandboxes are left to the scheduler.
    A CPU whose sandbox died goes to the next one."""
    require_binary("bwrap")
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("pinning needs two CPUs or more")
    runner = CodeRunner(Limits(wall_s=10), workers=len(cpus), backend="bwrap")
    assert runner.pin and not CodeRunner(Limits(wall_s=10), workers=len(cpus) - 1, backend="bwrap").pin
    assert not CodeRunner(Limits(wall_s=10), workers=len(cpus), backend="bwrap", pin=False).pin
    sessions = [runner._take() for _ in cpus]
    try:
        seen = [s.run(AFFINITY).stdout for s in sessions]
        assert sorted(seen) == sorted(f"[{c}]\n" for c in cpus)  # each on its own CPU
        sessions[0].close()  # its CPU is free again
        sessions[0] = runner._take()
        assert sessions[0].run(AFFINITY).stdout == seen[0]
    finally:
        for s in sessions:
            s.close()
