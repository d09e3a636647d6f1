"""Deprecated: moved to :mod:`rollgym.leaderboard.verify` (this path goes in rollgym 0.3.0).

Each name below still imports from here, with a deprecation warning, and is the object from its new home.
"""

from rollgym.core.deprecation import moved_to

__getattr__ = moved_to(__name__, dict.fromkeys([
    "MAX_REASONS", "MAX_REASON_CHARS", "ReplayAgent", "VerificationReport", "claimed_builtin_suite",
    "finished_suite", "hidden_seed", "read_results_file", "read_transcript", "suite_mismatch", "verify_bundle",
], "rollgym.leaderboard.verify"))
