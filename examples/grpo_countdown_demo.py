"""GRPO on an easy Countdown with a tiny model on a CPU: the whole pipeline, with its gain and 95% interval.

Run: nice python examples/grpo_countdown_demo.py [--quick] [--out DIR | --doc]

The same as ``python -m rollgym.train.demo``: it builds a tiny model, warms it up
on oracle answers, trains it with rollgym's reference GRPO trainer once per seed,
and writes grpo_demo.json and grpo_demo.png to a new temporary folder (or --out).
Only --doc writes docs/img/grpo_demo.* and the table in docs/training.md.
``--quick`` is a seconds-long smoke run. The strategy comparisons are
``python -m research``.
"""

from __future__ import annotations

import sys

from rollgym.train.demo import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
