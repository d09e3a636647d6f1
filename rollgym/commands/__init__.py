"""Sub-commands of the ``rollgym`` CLI that live beside the code they drive.

Each module named in :data:`COMMAND_MODULES` exposes ``register(subparsers)``,
which adds its sub-command to the ``argparse`` parser; ``rollgym.cli`` imports
them lazily when it builds the parser.
"""

COMMAND_MODULES: list[str] = [
    "rollgym.commands.serve_model",
    "rollgym.commands.rate",
    "rollgym.commands.web",
    "rollgym.commands.bench",
    "rollgym.commands.leaderboard",
    "rollgym.commands.serve_env",
]
