"""The sub-commands of the ``rollgym`` CLI, one module each; :mod:`rollgym.cli` is only the parser.

Each module named in :data:`COMMAND_MODULES` exposes ``register(subparsers)``,
which adds its sub-command to the ``argparse`` parser and points ``func`` at
the command's body; ``rollgym.cli`` imports them when it builds the parser.
Nothing else in rollgym imports this package (an import-linter contract).
"""

COMMAND_MODULES: list[str] = [
    "rollgym.commands.list",
    "rollgym.commands.play",
    "rollgym.commands.eval",
    "rollgym.commands.demo",
    "rollgym.commands.serve_model",
    "rollgym.commands.rate",
    "rollgym.commands.web",
    "rollgym.commands.bench",
    "rollgym.commands.leaderboard",
    "rollgym.commands.experiment",
    "rollgym.commands.serve_env",
    "rollgym.commands.models",
    "rollgym.commands.export",
    "rollgym.commands.data",
    "rollgym.commands.distill_diagnostic",
]
