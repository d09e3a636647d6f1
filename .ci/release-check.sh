#!/usr/bin/env bash
# Release check: build the sdist and the wheel as a user's pip would get them, and use the wheel.
#  1. `python -m build` (in a throwaway venv) builds the sdist, then the wheel from the sdist, from a
#     copy of the checkout's files.
#  2. Every file git tracks under rollgym/ and rollgym_verifiers/ must be in the sdist and the wheel
#     (a data file left out of [tool.setuptools.package-data] fails here), and the version of both
#     must be pyproject.toml's.
#  3. The wheel goes into a clean venv with no extra; .ci/release_smoke.py (run outside the
#     repository) checks rollgym.__version__, makes and resets one id of every env family (those
#     that need an extra must refuse in one sentence) and runs the README's first example.
#  4. [all]: the same wheel in a second venv that borrows the packages of the test venv ($VENV,
#     default .venv: `make test` builds it with [all,dev]); every requirement of the wheel's [all]
#     extra must be satisfied there, and every family must work. Installing [all] from the
#     registry into a fresh venv takes longer than CI's budget (torch alone is gigabytes).
# Prints what it checked and the time each step took.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
PYTHON="${PYTHON:-python3}"
VENV="${VENV:-.venv}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
export ROLLGYM_DATA_DIR="${ROLLGYM_DATA_DIR:-$(cd .. && pwd)/shared/data}"
pip_q() { "$@" -q --disable-pip-version-check 2>&1 | { grep -v "^WARNING: Location" || true; }; }
step() { echo "release-check: $1 ($((SECONDS - started))s)"; }
started=$SECONDS
version="$(sed -n 's/^version = "\([^"]*\)".*/\1/p' pyproject.toml | head -n 1)"
[ -n "$version" ] || { echo "release-check: no version in pyproject.toml." >&2; exit 1; }

# Build from a copy of the files git knows (tracked, or new and not ignored): a stale *.egg-info in the
# checkout would otherwise carry its old file list into the sdist.
mkdir "$WORK/src"
git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$WORK/src" 2>/dev/null || true
"$PYTHON" -m venv "$WORK/build-venv"
pip_q "$WORK/build-venv/bin/python" -m pip install build
"$WORK/build-venv/bin/python" -m build --outdir "$WORK/dist" "$WORK/src" >"$WORK/build.log" 2>&1 \
  || { tail -n 30 "$WORK/build.log"; echo "release-check: the build failed." >&2; exit 1; }
sdist="$WORK/dist/rollgym-$version.tar.gz"
wheel="$WORK/dist/rollgym-$version-py3-none-any.whl"
[ -f "$sdist" ] && [ -f "$wheel" ] || {
  ls "$WORK/dist"; echo "release-check: expected rollgym-$version sdist and wheel." >&2; exit 1; }
step "built $(basename "$sdist") and $(basename "$wheel")"

git ls-files rollgym rollgym_verifiers >"$WORK/tracked"
"$PYTHON" - "$sdist" "$wheel" "$WORK/tracked" "$version" <<'EOF'
import sys, tarfile, zipfile
sdist, wheel, tracked, version = sys.argv[1:]
want = {line.strip() for line in open(tracked) if line.strip()}
prefix = f"rollgym-{version}/"
in_sdist = {n[len(prefix):] for n in tarfile.open(sdist).getnames() if n.startswith(prefix)}
in_wheel = set(zipfile.ZipFile(wheel).namelist())
bad = False
for where, have in (("sdist", in_sdist), ("wheel", in_wheel)):
    missing = sorted(want - have)
    for name in missing:
        print(f"release-check: {name} is tracked but not in the {where}")
    bad |= bool(missing)
data = sorted(n for n in want if not n.endswith(".py"))
print(f"release-check: {len(want)} tracked package files in both, {len(data)} of them data: "
      + ", ".join(sorted({n.rsplit('.', 1)[-1] for n in data})))
sys.exit(1 if bad else 0)
EOF
step "package files checked"

cd "$WORK"  # from here on, `import rollgym` must find the installed wheel, never the checkout
"$PYTHON" -m venv "$WORK/bare"
pip_q "$WORK/bare/bin/python" -m pip install "$wheel"
step "installed the wheel without extras"
env -u PYTHONPATH -u CI "$WORK/bare/bin/python" "$ROOT/.ci/release_smoke.py" "$version" "$ROOT/README.md" bare
step "no extras: ok"

borrowed="$("$ROOT/$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null)" \
  || borrowed="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
"$PYTHON" -m venv "$WORK/all"
pip_q "$WORK/all/bin/python" -m pip install --no-deps "$wheel"
own="$("$WORK/all/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "$borrowed" >"$own/zz-borrowed-test-venv.pth"  # after the venv's own packages: the wheel's rollgym wins
env -u PYTHONPATH "$WORK/all/bin/python" - <<'EOF'
import importlib.metadata as md, sys
from packaging.requirements import Requirement
def needs(extra, seen):
    for text in md.requires("rollgym") or []:
        req = Requirement(text)
        if req.marker is not None and req.marker.evaluate({"extra": extra}) and (req.name, extra) not in seen:
            seen.add((req.name, extra))
            if req.name == "rollgym":
                for sub in req.extras:
                    yield from needs(sub, seen)
            else:
                yield req
missing = []
for req in needs("all", set()):
    try:
        have = md.version(req.name)
    except md.PackageNotFoundError:
        missing.append(f"{req} (not installed)")
        continue
    if have not in req.specifier:
        missing.append(f"{req} (have {have})")
for line in missing:
    print(f"release-check: [all] needs {line}")
print(f"release-check: every requirement of [all] is met" if not missing else "")
sys.exit(1 if missing else 0)
EOF
env -u PYTHONPATH "$WORK/all/bin/python" "$ROOT/.ci/release_smoke.py" "$version" "$ROOT/README.md" all
step "[all]: ok"
