"""What the benches that run a real model on the CPU share: the pulled-model check, the torch setup, the clock.

Imported by ``bench_prefix_cache``, ``bench_real_model``, ``bench_dtype_threads``, ``bench_quantized`` and
``bench_speculative`` (``bench/`` is on ``sys.path`` when a bench runs as a script).
"""

from __future__ import annotations

import argparse
import gc
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """Wall and CPU seconds of ``fn()`` (after a garbage collection), and its result."""
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def model_is_pulled(model: str) -> bool:
    """Whether the catalog model ``model`` is on disk; if not, say how to pull it (the bench then exits 0)."""
    from rollgym.agents.backends.catalog import KNOWN_MODELS, is_pulled, model_dir

    if is_pulled(model_dir(model), KNOWN_MODELS[model]):
        return True
    print(f"skipped: {model} is not pulled (rollgym models pull {model})")
    return False


def quick_and_threads(description: str, *, threads: int, threads_help: str) -> argparse.Namespace:
    """The command line of a one-model bench: ``--quick`` (small sizes, nothing saved) and ``--threads``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="small sizes, nothing saved")
    parser.add_argument("--threads", type=int, default=threads, help=threads_help)
    return parser.parse_args()


def start_cpu_run(threads: int) -> float:
    """Give torch ``threads`` threads, find the shared evaluation data, and return the 1-minute load average."""
    import torch

    torch.set_num_threads(threads)
    os.environ.setdefault("ROLLGYM_DATA_DIR", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    return os.getloadavg()[0]
