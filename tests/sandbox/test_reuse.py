"""``run_many(reuse=True)`` and ``Job.fresh``: jobs in a reused sandbox see none of the previous job's files."""

from __future__ import annotations

import pytest

from rollgym.sandbox import Job, Sandbox

pytestmark = pytest.mark.timeout(300)

LEAVE_TRACES = (
    "import os\n"
    "print(sorted(os.listdir('.')), sorted(os.listdir('/tmp')), sorted(os.listdir('/dev/shm')))\n"
    "open('left.txt', 'w').write('x'); open('/tmp/t', 'w').write('x'); open('/dev/shm/s', 'w').write('x')\n"
    "os.makedirs('locked/inner'); os.symlink('/etc/passwd', 'link')\n"
    "os.chmod('locked', 0); os.chmod('/tmp', 0); os.chmod('.', 0)\n"
)


def test_reused_sandboxes_start_every_job_empty(box: Sandbox) -> None:
    jobs = [Job.python(LEAVE_TRACES, files={"in.txt": "a"}) for _ in range(6)]
    results = box.run_many(jobs, reuse=True, concurrency=2)
    assert all(r.error is None for r in results), [r.error for r in results]
    assert {r.stdout for r in results} == {"['in.txt'] [] []\n"}
    assert box.stats["runs"] >= 6


def test_a_session_keeps_files_unless_a_job_asks_for_fresh(box: Sandbox) -> None:
    with box.session() as session:
        session.run_python("open('kept.txt', 'w').write('x')")
        assert session.run_python("import os\nprint(os.listdir('.'))").stdout == "['kept.txt']\n"
        fresh = session.run(Job.python("import os\nprint(os.listdir('.'))", fresh=True))
        assert fresh.stdout == "[]\n"
