"""The verifiers taskset plugin of rollgym: ``--env.taskset.id rollgym-verifiers``.

verifiers (0.4.0) resolves a taskset id to a top-level module exporting one ``Taskset`` and
one ``Env`` subclass in ``__all__``; this shim is that module. The code lives in
:mod:`rollgym.serve.adapters.verifiers_env`.
"""

from rollgym.serve.adapters.verifiers_env import (
    RollgymEnv,
    RollgymEnvConfig,
    RollgymTask,
    RollgymTaskData,
    RollgymTaskset,
    RollgymTasksetConfig,
    load_environment,
)

__all__ = ["RollgymEnv", "RollgymEnvConfig", "RollgymTask", "RollgymTaskData", "RollgymTaskset",
           "RollgymTasksetConfig", "load_environment"]
