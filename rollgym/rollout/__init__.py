"""Rollouts: the data types trainers consume, the collector that produces them, the results file.

``from rollgym.rollout import collect`` runs an agent on an env for groups of
episodes; :func:`load_results` reads a results file back. Every collector is a driver of one
engine (:mod:`rollgym.rollout.engine`) over a :class:`RunSpec`; :func:`run_spec` picks the driver.
"""

from rollgym.rollout.collector import agent_seed, collect, episode_seed
from rollgym.rollout.drivers import run_spec
from rollgym.rollout.engine import Engine, EpisodePlayer
from rollgym.rollout.episode import DEFAULT_MAX_STEPS, EpisodeLimits, EpisodeRecorder, arun_episode, run_episode
from rollgym.rollout.partial import PartialRollouts
from rollgym.rollout.pool import EnvPool
from rollgym.rollout.spec import RunSpec
from rollgym.rollout.store import EpisodeRecord, Results, ResultsWriter, load_results
from rollgym.rollout.stream import collect_async, stream
from rollgym.rollout.types import RolloutGroup, Trajectory, Turn, to_jsonable

__all__ = [
    "DEFAULT_MAX_STEPS",
    "Engine",
    "EnvPool",
    "EpisodeLimits",
    "EpisodePlayer",
    "EpisodeRecord",
    "EpisodeRecorder",
    "PartialRollouts",
    "Results",
    "ResultsWriter",
    "RolloutGroup",
    "RunSpec",
    "Trajectory",
    "Turn",
    "agent_seed",
    "arun_episode",
    "collect",
    "collect_async",
    "episode_seed",
    "load_results",
    "run_episode",
    "run_spec",
    "stream",
    "to_jsonable",
]
