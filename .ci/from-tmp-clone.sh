#!/usr/bin/env bash
# The sandbox and RepoRepairReal tests from a clone under /tmp, run by a Python that lives under /tmp too
# (issue #41: the sandbox's private /tmp once hid such an interpreter, so jobs ran without its packages,
# `python` was missing (exit 127) and RepoRepairReal's oracle fixes scored 0). The interpreter is a venv
# made under /tmp from the test venv's Python, reaching the test venv's packages through a .pth file; the
# clone comes first on PYTHONPATH. About two minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-.venv/bin/python}"
WORK="$(mktemp -d /tmp/rollgym-ci-XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
chmod 755 "$WORK"  # the unprivileged-user test runs the clone's code as uid 65534
git clone --quiet . "$WORK/rollgym"
"$PYTHON" -m venv --without-pip "$WORK/venv"
site_dirs="$("$PYTHON" -c 'import sys; print("\n".join(p for p in sys.path if p.endswith("site-packages")))')"
purelib="$("$WORK/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
echo "$site_dirs" > "$purelib/rollgym-ci-host-packages.pth"
cd "$WORK/rollgym"
PYTHONPATH="$WORK/rollgym" "$WORK/venv/bin/python" -c 'import rollgym, sys; assert rollgym.__file__.startswith(sys.argv[1]), rollgym.__file__' "$WORK/rollgym"
PYTHONPATH="$WORK/rollgym" "$WORK/venv/bin/python" -m pytest -q -p no:cacheprovider \
  tests/sandbox/test_sandbox.py tests/sandbox/test_interpreter_placement.py \
  tests/envs/code/test_repo_real.py -k "test_sandbox or interpreter or oracle or installed_copy or configuration"
