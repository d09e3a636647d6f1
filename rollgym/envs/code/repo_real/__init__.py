"""``RepoRepairReal-v0``: fix bugs injected into real Python projects, graded by their own tests."""
