"""Robot world models: a tabletop simulator, its cameras, fidelity metrics and ``WorldModel-v0``.

Importing this package registers ``WorldModel-v0``; it imports numpy only
(torch is needed by the reference neural model and its training script alone).
See :class:`rollgym.envs.worldmodel.env.WorldModelEnv` for the env's contract.
"""

from rollgym.core.registration import register_env

register_env(
    "WorldModel-v0",
    "rollgym.envs.worldmodel.env:WorldModelEnv",
    description="Predict a robot's multi-view camera frames from its actions; scored by SSIM/PSNR over copy-last.",
    family="worldmodel",
    private_state="rollgym.core.private:no_private_state",
    grader="pure",
)
