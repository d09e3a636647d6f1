"""rollgym's shared contracts: tasks, scores, spaces, env bases, the agent protocol, seeding, extraction, registration.

``core`` imports nothing else from rollgym.
"""

from rollgym.core.agent import Agent
from rollgym.core.difficulty import Difficulty, Level
from rollgym.core.env import SingleTurnEnv, StepResult, TaskSource, TextEnv
from rollgym.core.errors import (
    ConfigError,
    DataNotFoundError,
    MissingDependencyError,
    RollgymError,
    UnknownEnvError,
)
from rollgym.core.extraction import count_boxed, extract_boxed, extract_tag, match_braces
from rollgym.core.registration import EnvInfo, env_info, list_envs, make, register_env
from rollgym.core.seeding import SPLITS, draw_in_split, split_of_key, task_rng, task_seed_sequence
from rollgym.core.spaces import TextSpace
from rollgym.core.task import Score, Task
from rollgym.core.toolcalls import (
    ParsedToolCalls,
    ToolCall,
    ToolCallError,
    format_tool_response,
    parse_tool_calls,
)

__all__ = [
    "SPLITS",
    "Agent",
    "ConfigError",
    "DataNotFoundError",
    "Difficulty",
    "EnvInfo",
    "Level",
    "MissingDependencyError",
    "ParsedToolCalls",
    "RollgymError",
    "Score",
    "SingleTurnEnv",
    "StepResult",
    "Task",
    "TaskSource",
    "TextEnv",
    "TextSpace",
    "ToolCall",
    "ToolCallError",
    "UnknownEnvError",
    "count_boxed",
    "draw_in_split",
    "env_info",
    "extract_boxed",
    "extract_tag",
    "format_tool_response",
    "list_envs",
    "make",
    "match_braces",
    "parse_tool_calls",
    "register_env",
    "split_of_key",
    "task_rng",
    "task_seed_sequence",
]
