"""Results bundles: the one format ``rollgym bench`` writes and ``rollgym leaderboard`` reads.

A bundle is a folder (or a ``.tar.gz`` of it) with ``manifest.json``, ``summary.json`` and one results file
(JSON lines, one episode a line) per suite entry under ``transcripts/``:

- :mod:`rollgym.bundles.format`: write, read, pack and open a bundle; check its manifest; strip the
  tasks' hidden answers from its results files;
- :mod:`rollgym.bundles.archive`: read an untrusted archive as a stream within :class:`BundleLimits
  <rollgym.bundles.archive.BundleLimits>` before anything is unpacked.

Re-verifying a bundle from its results files (``rollgym leaderboard verify``) needs the suites and the
summary code of :mod:`rollgym.benchmarks`, so it lives above them, in :mod:`rollgym.leaderboard.verify`.
This package imports only :mod:`rollgym.core`.
"""
