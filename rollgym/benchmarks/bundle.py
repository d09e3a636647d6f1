"""Deprecated: moved to :mod:`rollgym.bundles.format` (this path goes in rollgym 0.3.0).

Each name below still imports from here, with a deprecation warning, and is the object from its new home.
"""

from rollgym.core.deprecation import moved_to

__getattr__ = moved_to(__name__, dict.fromkeys([
    "BUNDLE_FORMAT", "DEFAULT_LIMITS", "MANIFEST", "SUMMARY", "TRANSCRIPTS", "MAX_LABEL_CHARS", "Bundle",
    "BundleError", "BundleLimits", "check_manifest", "clean_json", "open_bundle", "pack_bundle", "public_task",
    "read_json", "strip_answers", "strip_results_file", "strip_transcript_answers", "write_json",
], "rollgym.bundles.format"))
