"""rollgym: Gymnasium environments with verifiable rewards for language-model agents.

``import rollgym`` registers every env id, so ``gym.make("Countdown-v0")`` works;
``gym.make("rollgym:Countdown-v0")`` works without the import.
"""

from rollgym import envs as _envs  # noqa: F401  (registers every env id)
from rollgym import vector as _vector  # noqa: F401  (TextSpace observations through AsyncVectorEnv's shared memory)
from rollgym.core import (
    SPLITS,
    Agent,
    ConfigError,
    DataNotFoundError,
    EnvInfo,
    MissingDependencyError,
    RollgymError,
    Score,
    SingleTurnEnv,
    Task,
    TextEnv,
    TextSpace,
    UnknownEnvError,
    env_info,
    extract_boxed,
    extract_tag,
    list_envs,
    make,
)
from rollgym.core.registration import SupersededEnvWarning


def _installed_version() -> str:
    """The version pip installed (pyproject.toml's); ``0+unknown`` for a checkout that was never installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rollgym")
    except PackageNotFoundError:
        return "0+unknown"


__version__ = _installed_version()

__all__ = [
    "SPLITS",
    "Agent",
    "ConfigError",
    "DataNotFoundError",
    "EnvInfo",
    "MissingDependencyError",
    "RollgymError",
    "Score",
    "SingleTurnEnv",
    "SupersededEnvWarning",
    "Task",
    "TextEnv",
    "TextSpace",
    "UnknownEnvError",
    "__version__",
    "env_info",
    "extract_boxed",
    "extract_tag",
    "list_envs",
    "make",
]
