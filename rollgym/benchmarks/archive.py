"""Deprecated: moved to :mod:`rollgym.bundles.archive` (this path goes in rollgym 0.3.0).

Each name below still imports from here, with a deprecation warning, and is the object from its new home.
"""

from rollgym.core.deprecation import moved_to

__getattr__ = moved_to(__name__, dict.fromkeys([
    "MANIFEST", "SUMMARY", "TRANSCRIPTS", "TRANSCRIPT_PATH", "DEFAULT_LIMITS", "BundleError", "BundleLimits",
    "Member", "check_archive", "extract_archive", "read_member",
], "rollgym.bundles.archive"))
