"""Run by .ci/release-check.sh inside a venv that has the built wheel: does the installed package work?

Usage: python release_smoke.py VERSION README.md {bare|all}

Checks that ``rollgym.__version__`` is the built version, makes and resets one id of every env
family, and runs the README's first Python example. ``bare`` (no extras): the families listed in
BARE must work, and every other family must refuse with rollgym's one-sentence
``MissingDependencyError``; ``all``: every family must work. Run it from outside the repository,
so that ``import rollgym`` can only find the installed wheel.
"""

from __future__ import annotations

import re
import sys
import traceback
from pathlib import Path

# One id per family, made and reset. Without extras: Chess needs python-chess ([games]), MATH
# math-verify and sympy ([math]) and the data folder, Search bm25s ([search]), the web envs Playwright ([web]).
FAMILIES = {
    "puzzles": "Countdown-v0",
    "sudoku": "Sudoku4x4-v0",
    "code": "CodeGen-v0",
    "games": "ConnectFour-v0",
    "games/chess": "Chess-v1",
    "math": "MATH500-v1",
    "search": "Search-v1",
    "tools": "ToolWorld-v1",
    "tools/generated": "ToolGen-v0",
    "web": "WebGen-v0",
    "worldmodel": "WorldModel-v0",
}
# The families an install without any extra must run.
BARE = {"puzzles", "sudoku", "code", "games", "tools", "tools/generated", "worldmodel"}


def first_python_block(readme: Path) -> str:
    match = re.search(r"```python\n(.*?)```", readme.read_text(encoding="utf-8"), re.S)
    if match is None:
        raise SystemExit(f"release-smoke: {readme} has no python block.")
    return match.group(1)


def main() -> int:
    version, readme, mode = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    import importlib.metadata

    import gymnasium as gym

    import rollgym
    from rollgym.core.errors import MissingDependencyError

    here = Path(rollgym.__file__).resolve()
    if not here.is_relative_to(Path(sys.prefix).resolve()):
        print(f"release-smoke: rollgym was imported from {here}, not from the installed wheel.")
        return 1
    failures = []
    if not (rollgym.__version__ == importlib.metadata.version("rollgym") == version):
        failures.append(f"version: rollgym.__version__ {rollgym.__version__!r}, metadata "
                        f"{importlib.metadata.version('rollgym')!r}, built {version!r}")
    for family, env_id in FAMILIES.items():
        expected = mode == "all" or family in BARE
        try:
            env = gym.make(env_id)
            obs, _ = env.reset(seed=0)
            env.close()
        except MissingDependencyError as exc:
            if expected:
                failures.append(f"{family} ({env_id}): {exc}")
            print(f"  {family:16} {env_id:16} needs an extra: {exc}")
            continue
        except Exception:  # any other error is a packaging failure to report
            failures.append(f"{family} ({env_id}): {traceback.format_exc(limit=3)}")
            continue
        if not expected:
            failures.append(f"{family} ({env_id}) worked without extras: BARE in release_smoke.py is out of date")
        print(f"  {family:16} {env_id:16} ok ({len(str(obs))} characters of observation)")
    try:
        exec(compile(first_python_block(readme), f"{readme}: first python block", "exec"), {})
        print("  README's first example ok")
    except Exception:
        failures.append(f"README's first example: {traceback.format_exc(limit=3)}")
    for failure in failures:
        print(f"release-smoke ({mode}): FAILED {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
