"""GRPO on an easy Countdown with a tiny model on a CPU, and a small external-rollout study.

Run: nice python examples/grpo_countdown_demo.py [--quick] [--doc docs/training.md]

The same as ``python -m rollgym.train.demo``: it builds a tiny model, warms it up
on oracle answers, trains it with rollgym's reference GRPO trainer, and writes
docs/img/grpo_demo.json, docs/img/grpo_demo.png and docs/img/grpo_external.png
(and the table in --doc). ``--quick`` is a seconds-long smoke run.
"""

from __future__ import annotations

import sys

from rollgym.train.demo import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
