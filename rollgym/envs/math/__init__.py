"""Competition math: MATH500, AIME24, AMC23 and your own sets, with and without a Python tool.

* :mod:`~rollgym.envs.math.prompts`: the zero-shot prompt (part of the spec hash).
* :mod:`~rollgym.envs.math.datasets`: loading from a path, ``ROLLGYM_DATA_DIR`` or the hub.
* :mod:`~rollgym.envs.math.problem_env`: what both envs share (problem set, id, grading).
* :mod:`~rollgym.envs.math.env`: :class:`MathEnv`, one boxed answer.
* :mod:`~rollgym.envs.math.tool_env`: :class:`MathToolEnv`, with a sandboxed ``python`` tool.
* :mod:`~rollgym.envs.math.evidence`: whether a tool run computed the answer from the problem (``verified``).
* :mod:`rollgym.sandbox` runs the tool's code.

The verifier is :func:`rollgym.verifiers.math.verify_math`. The oracle
(:mod:`~rollgym.envs.math.policies`) boxes the published gold answer, looked up
by task id; it checks the env and the verifier end to end.

Ids: ``-v1`` scores with the v1 rules (relations, several values, percentages,
exact decimals, a per-response time budget; see ``MathEnv``'s Version History);
the ``-v0`` ids stay registered with the v0 rules so that their results can be
reproduced.
"""

from __future__ import annotations

from rollgym.core.lazy import lazy_exports
from rollgym.core.registration import register_env

# The env classes, the verifier and the sandbox load on first use, so that
# ``import rollgym`` only registers the ids here.
__all__, __getattr__ = lazy_exports(__name__, {
    "rollgym.envs.math.datasets": ("AIME24", "AMC23", "MATH500", "DatasetSpec", "MathDataset", "load_rows"),
    "rollgym.envs.math.env": ("MathEnv",),
    "rollgym.envs.math.problem_env": ("dataset_source", "MathProblemEnv"),
    "rollgym.envs.math.tool_env": ("MathToolEnv",),
})

# The spec hash follows the entry point's imports; these run in other processes or inside the
# sandbox, started by module name or from the file's text, so no import statement reaches them.
_SINGLE = ["rollgym.verifiers.math_worker"]
_TOOL = [*_SINGLE, "rollgym.sandbox.inside.pyrun", "rollgym.sandbox.inside.supervisor"]

_SETS = {
    "MATH500": ("math500", "MATH500: 500 MATH test problems (HuggingFaceH4/MATH-500)"),
    "AIME24": ("aime24", "AIME 2024 I and II: 30 problems with integer answers"),
    "AMC23": ("amc23", "AMC 2023: 40 problems with numeric answers"),
}
_ORACLE = "rollgym.envs.math.policies:oracle_policy"
_SUPERSEDED = " Superseded by -v1: accepts relations, extra values, percentages and decimal approximations."
_VERSIONS = [("v1", ""), ("v0", _SUPERSEDED)]

# (name, dataset, description of the one-answer id, description of the tool id); MATH takes any dataset
_IDS = [
    *((name, dataset, f"{what}; one answer in \\boxed{{}}, binary reward.",
       f"{what}; multi-turn with a sandboxed python tool, answer in \\boxed{{}}.")
      for name, (dataset, what) in _SETS.items()),
    ("MATH", None, "Any JSONL file or Hugging Face dataset with problem and answer fields; answer in \\boxed{}.",
     "Any problem/answer dataset, multi-turn with a sandboxed python tool; answer in \\boxed{}."),
]
_KINDS = [("", "rollgym.envs.math.env:MathEnv", _SINGLE), ("Tool", "rollgym.envs.math.tool_env:MathToolEnv", _TOOL)]

for _version, _note in _VERSIONS:
    for _name, _dataset, *_descriptions in _IDS:
        for (_suffix, _entry_point, _components), _description in zip(_KINDS, _descriptions):
            register_env(
                f"{_name}{_suffix}-{_version}",
                _entry_point,
                description=_description + _note,
                family="math",
                components=_components,
                kwargs={"dataset": _dataset, "rules": _version},
                oracle=_ORACLE,
                private_state="rollgym.core.private:task_answer",
                grader="pure",  # the reward is a verifier of the text; the python tool never grades
                superseded_by=f"{_name}{_suffix}-v1" if _version == "v0" else None,
            )
