"""Verifiers: one module per task family, pure functions ``verify(task, response) -> Score``.

They import only ``rollgym.core`` and are usable without an env.
"""
