"""``CodeGen-v0``: generated programming tasks in six families (see :mod:`.families`, :mod:`.source`, :mod:`.env`)."""
