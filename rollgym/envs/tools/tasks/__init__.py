"""Task templates of the tool world, grouped by app; importing this package registers all of them."""

from rollgym.envs.tools.tasks import (  # noqa: F401  (each module registers its templates)
    calendar_payments,
    contacts_email,
    cross_app,
    notes_shopping,
)
from rollgym.envs.tools.tasks.base import TEMPLATES, TaskTemplate
from rollgym.envs.tools.tasks.source import ToolTaskSource, task_world

__all__ = ["TEMPLATES", "TaskTemplate", "ToolTaskSource", "task_world"]
