"""Full sweep of the generated websites: the reference solution on every template and every site, every split.

Run: ``python bench/sweep_websites.py [--splits train,test,test_unseen] [--per-template 1] [--every-site]
[--check-env] [--concurrency 3] [--json out.json]``

For each split, plays (in real Chromium, with the vectorised runner) ``--per-template``
tasks of every template, and with ``--every-site`` one task on every site the split
plays on; prints success per split and every failure, and writes a JSON summary. The
oracle must solve 100% on every split, ``test_unseen`` included; the CI tests play a
sample of this (``tests/envs/web/gen/test_gen_oracle.py``). With ``--check-env`` it
first runs Gymnasium's ``check_env`` (warnings are errors) on an env of every site alone.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from rollgym.core.task import Task
from rollgym.envs.web.browser import shutdown_runtime
from rollgym.envs.web.gen.kinds import KINDS
from rollgym.envs.web.gen.reference import reference_policy
from rollgym.envs.web.gen.tasks import TEMPLATES, GenTaskSource, split_sites
from rollgym.rollout.web import collect_web_episodes


def sweep_tasks(split: str, per_template: int, every_site: bool) -> list[Task]:
    """The tasks of one split's sweep: each template ``per_template`` times, and one task per site."""
    tasks = []
    for name in sorted(TEMPLATES):
        source = GenTaskSource("WebGen-v0", templates=(name,))
        tasks += [source.task(i, split) for i in range(per_template)]
    if every_site:
        for key in split_sites(split, tuple(KINDS)):
            tasks.append(GenTaskSource("WebGen-v0", sites=(key,)).task(0, split))
    return tasks


def check_every_site() -> list[str]:
    """``check_env`` on ``WebGen-v0`` restricted to each site in turn; returns the sites that failed, with why."""
    import warnings

    import gymnasium as gym
    from gymnasium.utils.env_checker import check_env

    import rollgym  # noqa: F401

    failed = []
    for split in ("train", "test_unseen"):
        for key in split_sites(split, tuple(KINDS)):
            env = gym.make("WebGen-v0", sites=(key,), split=split)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("error")
                    check_env(env.unwrapped, skip_render_check=True)
            except Exception as exc:
                failed.append(f"{key}: {type(exc).__name__}: {exc}")
            finally:
                env.close()
    return failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", default="train,test,test_unseen")
    parser.add_argument("--per-template", type=int, default=1)
    parser.add_argument("--every-site", action="store_true")
    parser.add_argument("--check-env", action="store_true")
    parser.add_argument("--concurrency", type=int, default=3)
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    summary: dict[str, Any] = {}
    try:
        if args.check_env:
            t0 = time.perf_counter()
            failed = check_every_site()
            sites = sum(len(split_sites(s, tuple(KINDS))) for s in ("train", "test_unseen"))
            summary["check_env"] = {"sites": sites, "failed": failed, "seconds": round(time.perf_counter() - t0, 1)}
            print(f"check_env: {sites - len(failed)}/{sites} sites pass in {summary['check_env']['seconds']} s")
            for failure in failed:
                print("  FAIL", failure)
        for split in args.splits.split(","):
            tasks = sweep_tasks(split, args.per_template, args.every_site)
            t0 = time.perf_counter()
            results = collect_web_episodes(reference_policy, tasks, concurrency=args.concurrency, max_steps=45)
            failures = [{"task": r.task.id, "status": r.status, "error": r.error, "reasons": r.details.get("reasons"),
                         "last": r.transcript[-1][0] if r.transcript else None} for r in results if not r.success]
            solved = sum(r.success for r in results)
            summary[split] = {"episodes": len(results), "solved": solved, "rate": solved / max(1, len(results)),
                              "seconds": round(time.perf_counter() - t0, 1), "failures": failures,
                              "sites": len({t.meta["site"] for t in tasks}),
                              "templates": len({t.meta["template"] for t in tasks})}
            print(f"{split}: oracle solved {solved}/{len(results)} ({summary[split]['sites']} sites, "
                  f"{summary[split]['templates']} templates) in {summary[split]['seconds']} s")
            for failure in failures:
                print("  FAIL", json.dumps(failure)[:400])
    finally:
        shutdown_runtime()
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(summary, fh, indent=2)


if __name__ == "__main__":
    main()
