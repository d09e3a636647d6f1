"""Code and terminal environments, verified by hidden tests that run in the sandbox but never with the agent's code.

* :mod:`~rollgym.envs.code.humaneval_env`: ``HumanEval-v0`` (one completion) and ``HumanEvalTool-v0``
  (run code and the docstring examples first), graded by
  :mod:`~rollgym.envs.code.humaneval_grader` (record, call, replay).
* :mod:`~rollgym.envs.code.codegen`: ``CodeGen-v0``, generated programming tasks in six families.
* :mod:`~rollgym.envs.code.repo_repair`: ``RepoRepair-v0``, fix a bug in a small generated repository.
* :mod:`~rollgym.envs.code.terminal`: ``Terminal-v0``, shell tasks checked on the final state.
* :mod:`~rollgym.envs.code.terminal_gen`: ``TerminalGen-v0``, 4,260 generated shell tasks over 21 kinds.
* :mod:`~rollgym.envs.code.harness` (typed values, the call harness), :mod:`~rollgym.envs.code.runner`
  (kept sandboxes, batch calls), :mod:`~rollgym.envs.code.policies` (oracle and random policies).

Classes load on first use, so that ``import rollgym`` only registers the ids here.
"""

from __future__ import annotations

from rollgym.core.lazy import lazy_exports
from rollgym.core.registration import register_env

__all__, __getattr__ = lazy_exports(__name__, {
    "rollgym.envs.code.humaneval_env": ("HumanEvalEnv", "HumanEvalToolEnv"),
    "rollgym.envs.code.humaneval_grader": ("HumanEvalGrader",),
    "rollgym.envs.code.humaneval_data": ("HumanEvalSource", "load_humaneval"),
    "rollgym.envs.code.runner": ("CodeRunner", "code_runner"),
    "rollgym.envs.code.codegen.env": ("CodeGenEnv",),
    "rollgym.envs.code.codegen.source": ("CodeGenSource",),
    "rollgym.envs.code.config": ("CodeGenConfig", "RepoRepairConfig", "TerminalConfig"),
    "rollgym.envs.code.repo_repair.env": ("RepoRepairEnv",),
    "rollgym.envs.code.repo_repair.source": ("RepoRepairSource",),
    "rollgym.envs.code.repo_real.env": ("RepoRepairRealEnv", "RepoRepairRealGuardedEnv"),
    "rollgym.envs.code.repo_real.source": ("RepoRepairRealSource",),
    "rollgym.envs.code.terminal.env": ("TerminalEnv",),
    "rollgym.envs.code.terminal.source": ("TerminalSource",),
    "rollgym.envs.code.terminal_gen.env": ("TerminalGenEnv",),
    "rollgym.envs.code.terminal_gen.source": ("TerminalGenSource", "TerminalGenConfig"),
})


_GRADING = [
    "rollgym.envs.code.harness",
    "rollgym.envs.code.runner",
    "rollgym.envs.code.program",
    "rollgym.sandbox.inside.pyrun",
    "rollgym.sandbox.inside.supervisor",
]
_HUMANEVAL = [*_GRADING, "rollgym.envs.code.humaneval_data", "rollgym.envs.code.checkreplay",
              "rollgym.envs.code.humaneval_grader", "rollgym.envs.code.humaneval_env"]
_POLICIES = "rollgym.envs.code.policies"


def _register(env_id: str, entry_point: str, description: str, components: list[str], oracle: str,
              random_policy: str = "code_random_policy", superseded_by: str | None = None) -> None:
    """Register a code id; ``oracle`` and ``random_policy`` name functions of :mod:`rollgym.envs.code.policies`."""
    register_env(env_id, entry_point, description=description, family="code", components=components,
                 oracle=f"{_POLICIES}:{oracle}", random_policy=f"{_POLICIES}:{random_policy}",
                 private_state="rollgym.envs.code.private:code_private", grader="sandbox",
                 cost="heavy" if env_id.startswith("RepoRepairReal-") else "light", superseded_by=superseded_by)


_register(
    "HumanEval-v0",
    "rollgym.envs.code.humaneval_env:HumanEvalEnv",
    description="HumanEval: complete a Python function; hidden tests run in the sandbox, typed answers; binary reward.",
    components=_HUMANEVAL,
    oracle="humaneval_oracle",
)
_register(
    "HumanEvalTool-v0",
    "rollgym.envs.code.humaneval_env:HumanEvalToolEnv",
    description="HumanEval, multi-turn: run code and the docstring examples in the sandbox before answering.",
    components=[*_HUMANEVAL, "rollgym.envs.code.tool_env"],
    oracle="humaneval_oracle",
)

_CODEGEN = [*_GRADING, "rollgym.envs.code.config", "rollgym.envs.code.codegen.families",
            "rollgym.envs.code.codegen.source", "rollgym.envs.code.codegen.env"]
_register(
    "CodeGen-v0",
    "rollgym.envs.code.codegen.env:CodeGenEnv",
    description="Generated Python functions (string, list, arithmetic, dict, recursion, simulation); hidden tests.",
    components=_CODEGEN,
    oracle="codegen_oracle",
)

_register(
    "RepoRepair-v0",
    "rollgym.envs.code.repo_repair.env:RepoRepairEnv",
    description="Fix the bug an issue describes in a small generated Python repo; hidden tests, test files untouched.",
    components=[*_GRADING, "rollgym.envs.code.config", "rollgym.envs.code.tool_env",
                "rollgym.envs.code.repo_repair.modules", "rollgym.envs.code.repo_repair.source",
                "rollgym.envs.code.repo_repair.env"],
    oracle="repo_repair_oracle",
    random_policy="repo_repair_random_policy",
)

_REPO_REAL = ["rollgym.envs.code.runner", "rollgym.envs.code.tool_env", "rollgym.envs.code.repo_repair.env",
              "rollgym.envs.code.repo_real.projects", "rollgym.envs.code.repo_real.mutate",
              "rollgym.envs.code.repo_real.validate", "rollgym.envs.code.repo_real.source",
              "rollgym.envs.code.repo_real.env", "rollgym.sandbox.inside.supervisor"]
_register(
    "RepoRepairReal-v0",
    "rollgym.envs.code.repo_real.env:RepoRepairRealEnv",
    description="Fix AST-injected bugs in real Python projects (sdists fetched by `rollgym data build repo-real`); "
                "graded by each project's own hidden tests; split test_unseen holds held-out projects. "
                "Superseded by -v1: a patch can fake pytest's report.",
    components=_REPO_REAL,
    oracle="repo_real_oracle",
    random_policy="repo_repair_random_policy",
    superseded_by="RepoRepairReal-v1",
)
_register(
    "RepoRepairReal-v1",
    "rollgym.envs.code.repo_real.env:RepoRepairRealGuardedEnv",
    description="RepoRepairReal over the grown task set (2,054 validated mutants of 8 projects: v0's 901 and the "
                "cheaper validator's), graded by each project's own hidden tests with a guard plugin loaded before "
                "the project's code (patching pytest's reporting scores 0); split test_unseen holds held-out projects.",
    components=[*_REPO_REAL, "rollgym.envs.code.repo_real.guard"],
    oracle="repo_real_oracle",
    random_policy="repo_repair_random_policy",
)

_register(
    "Terminal-v0",
    "rollgym.envs.code.terminal.env:TerminalEnv",
    description="Shell tasks (files, text, scripts, permissions, archives) with a bash tool; final state checked.",
    components=["rollgym.envs.code.config", "rollgym.envs.code.tool_env", "rollgym.envs.code.terminal.source",
                "rollgym.envs.code.terminal.env", "rollgym.sandbox.inside.supervisor"],
    oracle="terminal_oracle",
    random_policy="terminal_random_policy",
)

_register(
    "TerminalGen-v0",
    "rollgym.envs.code.terminal_gen.env:TerminalGenEnv",
    description="4,260 generated shell tasks, 21 kinds in 7 categories (files, text, permissions, archives, scripts, "
                "processes, localhost services); split test_unseen holds 7 held-out kinds.",
    components=["rollgym.envs.code.config", "rollgym.envs.code.tool_env", "rollgym.envs.code.terminal.source",
                "rollgym.envs.code.terminal.env", "rollgym.envs.code.terminal_gen.spec",
                "rollgym.envs.code.terminal_gen.state_kinds", "rollgym.envs.code.terminal_gen.program_kinds",
                "rollgym.envs.code.terminal_gen.source", "rollgym.envs.code.terminal_gen.checks",
                "rollgym.envs.code.terminal_gen.env", "rollgym.sandbox.inside.supervisor"],
    oracle="terminal_gen_oracle",
    random_policy="terminal_random_policy",
)
