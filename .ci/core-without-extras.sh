#!/usr/bin/env bash
# The core tests in an install without any extra: a missing optional package must make tests skip,
# never error. Creates a throwaway venv with rollgym's base dependencies plus pytest, runs the core,
# Countdown and Sudoku tests with CI unset (so missing extras skip instead of failing), and fails on
# any error or failure. About a minute, most of it pip. Other test paths may be given as arguments,
# e.g. `.ci/core-without-extras.sh tests/envs/math tests/envs/search tests/verifiers`.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
VENV="$(mktemp -d)/core-venv"
trap 'rm -rf "$(dirname "$VENV")"' EXIT
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -e . pytest pytest-timeout 2>&1 \
  | { grep -v "^WARNING: Location" || true; }
for extra_module in sympy math_verify bm25s chess torch hypothesis; do
  if "$VENV/bin/python" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$extra_module') is None)"; then
    echo "core-without-extras: $extra_module is installed in the bare venv; the check would prove nothing." >&2
    exit 1
  fi
done
if [ "$#" -eq 0 ]; then set -- tests/core tests/envs/countdown tests/envs/sudoku; fi
env -u CI "$VENV/bin/python" -m pytest "$@" -q -p no:cacheprovider -rs \
  | tee "$(dirname "$VENV")/pytest.log" | tail -n 25
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
  echo "core-without-extras: pytest exited with $status (errors or failures without the extras)." >&2
  exit "$status"
fi
grep -q "skipped" "$(dirname "$VENV")/pytest.log" || {
  echo "core-without-extras: nothing was skipped, so no test needing an extra was exercised." >&2; exit 1; }
echo "core-without-extras: passed, with skips for the missing extras."
