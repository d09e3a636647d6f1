"""Harbor's task-directory format: export rollgym's terminal tasks (:mod:`.export`), read and play Harbor tasks
that need no container image in rollgym's sandbox (:mod:`.taskdir`, :mod:`.env`)."""
