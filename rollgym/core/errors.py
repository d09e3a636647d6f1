"""The exceptions rollgym raises for a user's mistakes.

Every error is one sentence that says what is wrong and how to fix it. They
subclass the built-in exception a caller would already catch (a bad value is a
``ValueError``, a missing package an ``ImportError``), so existing handlers keep
working.
"""

from __future__ import annotations


class RollgymError(Exception):
    """Base class of every error rollgym raises on purpose."""


class ConfigError(RollgymError, ValueError):
    """A configuration value is invalid; the message names the field and the allowed range."""


class UnknownEnvError(RollgymError, KeyError):
    """An env id is not registered; the message suggests the closest ids."""

    def __str__(self) -> str:  # KeyError would wrap the message in quotes
        return str(self.args[0]) if self.args else ""


class MissingDependencyError(RollgymError, ImportError):
    """An optional package or system binary is missing; the message says how to install it."""


class DataNotFoundError(RollgymError, FileNotFoundError):
    """A data file is missing; the message names every place that was searched."""
