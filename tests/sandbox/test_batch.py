"""``Session.run_batch`` and ``Job.prelude``/``Job.data``: many jobs per round trip, each still its own process.

A batch is how graders run thousands of candidates: the supervisor reads each job's output itself,
so the limits on output must hold there as they do for a single run, and one job's state (its
prelude globals, its output, a flood or a crash) must not reach the next.
"""

from __future__ import annotations

import pytest

from rollgym.core.errors import ConfigError
from rollgym.sandbox import Job, Limits, Sandbox

pytestmark = pytest.mark.timeout(300)


def test_a_batch_returns_each_jobs_own_output_and_status(box: Sandbox) -> None:
    jobs = [
        Job.python("import sys\nprint('out', 1)\nprint('err', 2, file=sys.stderr)"),
        Job.python("raise ValueError('bad')"),
        Job.command(["bash", "-c", "echo $((6 * 7)); exit 3"], limits=Limits(nproc=8)),
        Job.python("import os\nwhile True:\n    os.write(1, b'x' * 65536)", limits=Limits(max_output_bytes=1000)),
        Job.python("while True:\n    pass", limits=Limits(wall_s=1, cpu_s=5)),
        Job.python("print('still here')"),
    ]
    with box.session() as session:
        out, raised, shell, flood, loop, after = session.run_batch(jobs)
    assert (out.stdout, out.stderr, out.ok) == ("out 1\n", "err 2\n", True)
    assert raised.exit_code == 1 and raised.exception == "ValueError" and "bad" in raised.stderr
    assert (shell.stdout, shell.exit_code) == ("42\n", 3)
    assert len(flood.stdout) == 1000 and flood.truncated and "output" in flood.limits_hit and not flood.ok
    assert loop.timed_out and loop.label == "timeout"
    assert after.ok and after.stdout == "still here\n"  # the flood and the loop did not reach it


def test_a_prelude_runs_once_and_jobs_cannot_change_it_for_each_other(box: Sandbox) -> None:
    prelude = "import os\nSTATE = {'loads': 0}\nSTATE['loads'] += 1\nLOADED_IN = os.getpid()\n"
    job = "STATE['loads'] += 100\nprint(STATE['loads'], LOADED_IN == os.getpid(), job_data['n'])"
    with box.session() as session:
        results = session.run_batch([Job.python(job, prelude=prelude, data={"n": n}) for n in range(3)])
        broken = session.run_batch([Job.python("print(1)", prelude="raise RuntimeError('no')")])[0]
    # loaded once, in the supervisor (not in the job's process); each job starts from its globals
    assert [r.stdout for r in results] == ["101 False 0\n", "101 False 1\n", "101 False 2\n"]
    assert broken.error == "prelude: RuntimeError: no"


def test_bad_jobs_in_a_batch_get_their_own_error(box: Sandbox) -> None:
    with box.session() as session:
        good, bad = session.run_batch([Job.python("print(1)"), Job.python("print(2)", files={"x": object()})])
    assert good.stdout == "1\n" and bad.error is not None and bad.error.startswith("bad_job:")


def test_job_data_must_be_json() -> None:
    from rollgym.core.errors import ConfigError
    from rollgym.sandbox.job import encode

    job = Job.python("print(job_data)", data={"x": object()})
    with pytest.raises(ConfigError, match="JSON value"):
        encode(job, Limits(), {}, 1 << 20)


def test_echo_prints_a_final_expression_and_can_be_turned_off(box: Sandbox) -> None:
    """A final expression's value is printed as in a notebook cell; ``echo=False`` runs the code as a
    plain module (nothing printed), with errors and exit statuses reported the same."""
    code = "x = 6\nx * 7"
    with box.session() as session:
        shown, quiet, broken, exited = session.run_batch([
            Job.python(code), Job.python(code, echo=False), Job.python("def f(:\n", echo=False),
            Job.python("import sys\nprint('bye')\nsys.exit(3)", echo=False),
        ])
    assert (shown.stdout, quiet.stdout, quiet.ok) == ("42\n", "", True)
    assert broken.exception == "SyntaxError" and broken.exit_code == 1
    assert (exited.stdout, exited.exit_code) == ("bye\n", 3)


def test_a_prelude_jobs_code_compiled_once_still_runs_fresh_and_reports_its_errors(box: Sandbox) -> None:
    """The supervisor compiles a prelude job's code once (``echo=False``: the host's one-line call into its
    harness); each job still runs it in a fresh copy of the prelude's globals, as ``__main__``, and code
    that does not compile fails in the job as any code would."""
    prelude = "COUNT = 0\n"
    job = "COUNT += 1\nseen = globals().get('seen', 0) + 1\nprint(COUNT, seen, __name__)\n"
    broken = "print('never'\n"
    with box.session() as session:
        results = session.run_batch([Job.python(job, prelude=prelude, echo=False) for _ in range(3)]
                                    + [Job.python(broken, prelude=prelude, echo=False),
                                       Job.python(job, prelude=prelude, echo=False)])
    assert [r.stdout for r in results[:3]] == ["1 1 __main__\n"] * 3
    assert results[3].exception == "SyntaxError" and results[3].exit_code == 1 and "never" in results[3].stderr
    assert results[4].stdout == "1 1 __main__\n"


def test_a_prelude_is_sent_once_while_the_sandbox_keeps_it(box: Sandbox) -> None:
    """The host sends a prelude's source with the first job that names it, then only its key, for as long
    as the supervisor keeps it (the last eight; a ninth makes both sides forget the others). Early failures
    (bad input files) still keep it."""
    from rollgym.sandbox import box as box_module
    from rollgym.sandbox.inside import supervisor

    assert box_module.PRELUDES_KEPT == supervisor.PRELUDES_KEPT
    sent: list[int] = []
    with box.session() as session:
        original = session.box._send

        def counting(*frames: bytes) -> None:
            sent.append(sum(len(f) for f in frames))
            original(*frames)

        session.box._send = counting  # type: ignore[method-assign]
        preludes = [f"NAME = {n}\n" + "# padding\n" * 2000 for n in range(10)]
        session.run_python("import os\nos.mkdir('d')")
        first = session.run(Job.python("print(NAME)", prelude=preludes[0], files={"d": "x"}))
        assert first.error is not None and first.error.startswith("input_files")  # failed, prelude kept
        assert session.run(Job.python("print(NAME)", prelude=preludes[0])).stdout == "0\n"
        assert sent[2] < 1000 < sent[1]  # the second time: no source
        batch = session.run_batch([Job.python("print(NAME)", prelude=p) for p in preludes + preludes[:2]])
    assert [r.stdout for r in batch] == [f"{n}\n" for n in [*range(10), 0, 1]]


def test_open_files_are_ready_before_the_code_and_need_no_audited_open(box: Sandbox) -> None:
    """``Job.open_files``: the job's process opens them for writing (made, emptied, folders created)
    before the audit hook starts; the code writes through ``job_files`` even where the hook would refuse
    nothing, and the files come back like any other."""
    code = ("import os, sys\n"
            "events = []\n"
            "sys.addaudithook(lambda event, args: events.append(event) if event == 'open' else None)\n"
            "for name, fd in sorted(job_files.items()):\n"
            "    os.write(fd, name.encode())\n"
            "print(sorted(job_files), events)")
    with box.session() as session:
        session.run_python("open('out.txt', 'w').write('old content, longer')")
        result = session.run(Job.python(code, open_files=("out.txt", "deep/er/log.txt"),
                                        return_files=("out.txt", "deep/er/log.txt")))
    assert result.stdout == "['deep/er/log.txt', 'out.txt'] []\n", result.stderr
    assert result.files == {"out.txt": b"out.txt", "deep/er/log.txt": b"deep/er/log.txt"}
    with pytest.raises(ConfigError, match="open_files"):
        Job(argv=("true",), open_files=("x",))
    with pytest.raises(ConfigError, match="stay inside"):
        Job.python("pass", open_files=("../x",))
