"""``Terminal-v0``: shell tasks in the sandbox, checked on the final state (see :mod:`.source`, :mod:`.env`)."""
