"""Run every benchmark in bench/ one after another (``make bench``); each prints its own table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

if __name__ == "__main__":
    failed = []
    for script in sorted(Path(__file__).parent.glob("bench_*.py")):
        print(f"\n## {script.stem}\n", flush=True)
        if subprocess.run([sys.executable, str(script)]).returncode != 0:
            failed.append(script.name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    sys.exit(1 if failed else 0)
