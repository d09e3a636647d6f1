"""The kinds of generated task, whatever the medium, and the base of a generated world's template.

A *template kind* is what a task does to a world: ask the value of one field of a named row (:class:`Lookup`),
create a record for a party on an item (:class:`CreateRecord`), add an item to the catalogue
(:class:`CreateItem`), change one field of a row (:class:`UpdateField`), and each family's own kinds beside
them. A kind says its ``operation`` (its name) and whether it ``asks`` a question, graded by the answer, or
changes the world, graded by the rows it requires (:mod:`.diff`).

ToolGen's templates (:class:`rollgym.envs.tools.generated.templates.GenTemplate`, one class per kind, worded as
tool calls) and WebGen's mechanisms (:class:`rollgym.envs.web.gen.mechanisms.Mechanism`, worded as browser
actions) are template kinds; each family's ``GenTemplate`` is a :class:`WorldTemplate`, a named template whose
``template_kind`` is one of them.

Example:
    >>> class AskPrice(Lookup):
    ...     pass
    >>> AskPrice.operation, AskPrice.asks, CreateRecord.asks, CreateRecord.role
    ('lookup', True, False, 'record')
"""

from __future__ import annotations

from typing import ClassVar

from rollgym.envs.genworld.schema import EntityRole


class TemplateKind:
    """One kind of generated task: its ``operation``, whether it ``asks`` a question, and the entity ``role`` it
    creates or reads (``None`` when any).

    A family's own kind subclasses this directly; a kind both families have subclasses :class:`Lookup`,
    :class:`CreateRecord`, :class:`CreateItem` or :class:`UpdateField`.
    """

    operation: ClassVar[str] = ""
    asks: ClassVar[bool] = False
    role: ClassVar[EntityRole | None] = None


class Lookup(TemplateKind):
    """Ask the value of one field of a row named by its label; graded by the answer, nothing may change."""

    operation, asks = "lookup", True


class CreateRecord(TemplateKind):
    """Create a record that links a party to an item, with given values; graded by the new row."""

    operation, role = "create_record", "record"


class CreateItem(TemplateKind):
    """Add an item to the catalogue with given values; graded by the new row."""

    operation, role = "create_item", "item"


class UpdateField(TemplateKind):
    """Change one field of one named row to a given value; graded by the changed row."""

    operation = "update"


SHARED_KINDS: tuple[type[TemplateKind], ...] = (Lookup, CreateRecord, CreateItem, UpdateField)
"""The template kinds both ToolGen and WebGen have."""


class WorldTemplate:
    """A template of a generated world: one template kind over a world (its instances are tasks)."""

    @property
    def template_kind(self) -> TemplateKind:
        """The kind of task the template makes."""
        raise NotImplementedError


__all__ = ["SHARED_KINDS", "CreateItem", "CreateRecord", "Lookup", "TemplateKind", "UpdateField", "WorldTemplate"]
