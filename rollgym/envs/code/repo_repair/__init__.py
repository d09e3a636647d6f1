"""``RepoRepair-v0``: fix an injected bug in a small generated Python repository (see :mod:`.source`, :mod:`.env`)."""
