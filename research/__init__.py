"""Powered experiments: every strategy against its baseline with paired seeds, 95% intervals, a table and a plot.

``python -m research NAME [--quick] [--seeds N] [--out DIR] [--doc]``, from the root of a checkout: research
runs, kept beside ``bench/`` and out of the installed package (rollgym never imports them; they import
rollgym). Each experiment lives in its own module and
exposes ``EXPERIMENT`` (:class:`~research.runner.Experiment`):

- ``erils``: on-policy / external joint / external per-source / length-controlled (Countdown, tiny model);
- ``t3rl``: TTRL against T^3RL test-time RL on MATHTool-style arithmetic with the real sandbox;
- ``dynamic``: no filter / filter only / DAPO refill at the same rollout budget;
- ``worldmodel``: reward fine-tune against the L1-on-own-rollouts control;
- ``april``: synchronous against partial rollouts, accuracy against wall time with re-sent prefixes charged;
- ``generalization``: a tiny model on ToolGen train vs test vs test_unseen, after a warm-up and after GRPO;
- ``realmodel``: a real model, SmolLM2-135M-Instruct, before and after GRPO on Countdown n2;
- ``realmodel-trl``: the same with TRL's ``GRPOTrainer`` driven by rollgym;
- ``realmodel-qwen``: Qwen2.5-Coder-0.5B-Instruct, GRPO on CodeGen's strict reward against a format-only control;
- ``selfplay``: SPIRAL's role-conditioned advantages against per-seat GRPO, a tabular policy in Kuhn poker self-play.
- ``branching``: independent rollouts against entropy-forked and randomly forked tree rollouts (ECHO-style) at the
  same token budget per task (Countdown, tiny model).
- ``echo``: ECHO's adaptive branch width and confidence pruning against plain entropy trees and independent
  rollouts at the same token budget per task (Countdown, tiny model).
- ``resum``: ReSum's summarize-and-continue against independent samples and in-context retries at the same
  token budget per task (Countdown with retries, tiny model).

Results go to a scratch folder by default; ``--doc`` writes ``docs/experiments/NAME.json``, the plot in
``docs/img/`` and the table in ``docs/experiments.md``.
"""

from __future__ import annotations

from research.runner import EXPERIMENTS, ArmResult, Experiment, get, render_markdown, run_experiment

__all__ = ["EXPERIMENTS", "ArmResult", "Experiment", "get", "render_markdown", "run_experiment"]
