"""``TerminalGen-v0``: thousands of generated shell tasks over 21 kinds (see :mod:`.source`, :mod:`.env`)."""
