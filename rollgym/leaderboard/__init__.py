"""The leaderboard: a database of verified submissions, a web server, and a static export.

``rollgym leaderboard serve`` starts the server (FastAPI + uvicorn, the
``leaderboard`` extra); ``rollgym leaderboard verify BUNDLE`` checks a bundle
locally; ``rollgym leaderboard export`` writes a static site. Submodules import
their dependencies themselves, so this package is cheap to import.
"""
