"""The schema vocabulary of a generated world: entity roles, value kinds, fields, and how values are worded.

Every generated world is a few tables around one workflow: *parties* (the people: members, patients, a
site's users), an optional *item* catalogue (books, products, wiki pages), *records* that link a party to an
item (loans, orders, replies) and, in ToolGen, an optional *child* of a record (payments, comments). Each
table has typed fields; money is stored in whole cents everywhere.

ToolGen (:mod:`rollgym.envs.tools.generated.schema`) draws :class:`~rollgym.envs.tools.generated.schema.Field`
and :class:`~rollgym.envs.tools.generated.schema.Entity` per app; WebGen (:mod:`rollgym.envs.web.gen.schema`)
declares :class:`~rollgym.envs.web.gen.schema.FieldSpec` per domain kind, over the fixed tables ``users``
(parties), ``items`` and ``records``. Both kinds of field are a :class:`WorldField`.

Example:
    >>> words("due_on"), money_text(123456), money_text(123456, grouped=True), money_input(5), dollars(1999)
    ('due on', '$1234.56', '$1,234.56', '0.05', 19.99)
"""

from __future__ import annotations

from typing import Literal, Protocol

EntityRole = Literal["party", "item", "record", "child"]
"""What a table is to the world's workflow (see the module docstring)."""

ENTITY_ROLES: tuple[EntityRole, ...] = ("party", "item", "record", "child")

ValueKind = Literal["text", "email", "int", "money", "rating", "enum", "date", "bool", "ref"]
"""Every type a generated field may have: money in cents, ``rating`` one decimal (1.0 to 5.0), dates as
``YYYY-MM-DD``, ``ref`` the id of a row of another entity. ToolGen uses all but ``rating``; WebGen uses
``money``, ``int``, ``rating``, ``enum``, ``date`` and ``text``."""


class WorldField(Protocol):
    """One typed column of a generated world, as both families describe it."""

    @property
    def name(self) -> str:
        """The column's name."""
        ...

    @property
    def value_kind(self) -> ValueKind:
        """Its type."""
        ...

    @property
    def editable(self) -> bool:
        """Whether a task may ask to change it."""
        ...


def words(name: str) -> str:
    """A column's, table's or verb's name as words (``due_on`` -> ``due on``)."""
    return name.replace("_", " ")


def dollars(cents: int) -> float:
    """Stored cents as a dollar amount (the number an answer or a tool argument carries)."""
    return round(cents / 100, 2)


def money_text(cents: int, *, grouped: bool = False) -> str:
    """Stored cents as a prompt states them: ``$1234.56`` (ToolGen), or ``$1,234.56`` with ``grouped`` (WebGen)."""
    if grouped:
        return f"${cents // 100:,}.{cents % 100:02d}"
    return f"${cents / 100:.2f}"


def money_input(cents: int) -> str:
    """Stored cents as a form field takes them: ``1234.56``."""
    return f"{cents // 100}.{cents % 100:02d}"


__all__ = ["ENTITY_ROLES", "EntityRole", "ValueKind", "WorldField", "dollars", "money_input", "money_text", "words"]
