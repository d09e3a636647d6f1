"""Run every benchmark in bench/ one after another (``make bench``); each prints its own table."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

if __name__ == "__main__":
    load, cpus = os.getloadavg()[0], os.cpu_count() or 1
    if load > cpus / 2:
        print(f"warning: load average {load:.1f} on {cpus} CPUs; other work skews these figures, and every "
              "result file records the load it was measured under", flush=True)
    failed = []
    for script in sorted(Path(__file__).parent.glob("bench_*.py")):
        print(f"\n## {script.stem}\n", flush=True)
        if subprocess.run([sys.executable, str(script)]).returncode != 0:
            failed.append(script.name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    sys.exit(1 if failed else 0)
