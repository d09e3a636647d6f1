"""UserSim: conversations with a simulated user (tau2-bench style) over ToolWorld's apps.

Importing this package registers ``UserSim-v1`` and ``UserSim-v0`` (v0's confirmations are not bound to
the action; kept to reproduce its results); the env, the user and the scenarios are imported only when an
env is made, so ``import rollgym`` stays cheap.
"""

from rollgym.core.registration import register_env

_SUPERSEDED = " Superseded by -v1: a yes confirms the next irreversible call, whatever the request named."
for _rules, _note in (("v1", ""), ("v0", _SUPERSEDED)):
    register_env(f"UserSim-{_rules}", "rollgym.envs.usersim.env:UserSimEnv", family="conversation",
                 components=["rollgym.envs.usersim.policies"], kwargs={"rules": _rules},
                 description="Customer service for a simulated user (tau2-style): ask for private facts, confirm "
                             "the exact call, refuse what policy forbids, dual control; graded by state diff and "
                             "conversation checks. Split test_unseen holds the calendar domain." + _note,
                 oracle="rollgym.envs.usersim.policies:oracle_policy",
                 random_policy="rollgym.envs.usersim.policies:random_policy",
                 private_state="rollgym.core.private:task_answer", grader="pure",
                 superseded_by="UserSim-v1" if _rules == "v0" else None)
