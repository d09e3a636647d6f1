"""The real-model experiment's twin: TRL's ``GRPOTrainer`` on the very settings of ``realmodel``.

Same model, tasks, shaped reward, group size, learning rate, steps and held-out evaluation as
:mod:`rollgym.train.experiments.realmodel` (whose docstring describes them); the ``trl`` arm trains
through :func:`rollgym.train.adapters.trl.run_trl_grpo`. The ``base`` arm is the same untrained model,
so seed ``s`` here pairs with seed ``s`` there.
"""

from __future__ import annotations

import dataclasses

from rollgym.train.experiments import realmodel

EXPERIMENT = dataclasses.replace(
    realmodel.EXPERIMENT,
    name="realmodel-trl",
    title="The real-model experiment's twin: TRL's GRPOTrainer on the same settings",
    question="Does TRL's GRPOTrainer, driven by rollgym on the same tasks and rewards, move SmolLM2-135M-Instruct "
             "as rollgym's trainer does?",
    arms=("base", "trl"),
)
