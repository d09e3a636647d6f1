"""The apps of the tool world, one module each: schema, seeded population and API operations.

Importing this package registers every app's operations in :data:`rollgym.envs.tools.api.REGISTRY`.
"""

from rollgym.envs.tools.apps import calendar, contacts, email, notes, payments, shopping, supervisor

__all__ = ["calendar", "contacts", "email", "notes", "payments", "shopping", "supervisor"]
