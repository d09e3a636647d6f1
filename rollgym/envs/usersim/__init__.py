"""UserSim: conversations with a simulated user (tau2-bench style) over ToolWorld's apps.

Importing this package registers ``UserSim-v0``; the env, the user and the scenarios are imported only when an
env is made, so ``import rollgym`` stays cheap.
"""

from rollgym.core.registration import register_env

register_env("UserSim-v0", "rollgym.envs.usersim.env:UserSimEnv", family="conversation",
             components=["rollgym.envs.usersim.policies"],
             description="Customer service for a simulated user (tau2-style): ask for private facts, confirm, "
                         "refuse what policy forbids, dual control; graded by state diff and conversation checks. "
                         "Split test_unseen holds the calendar domain.",
             oracle="rollgym.envs.usersim.policies:oracle_policy",
             random_policy="rollgym.envs.usersim.policies:random_policy",
             private_state="rollgym.core.private:task_answer", grader="pure")
