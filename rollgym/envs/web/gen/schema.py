"""The vocabulary a domain kind is written in: item fields, per-user records, templates, and the kind itself.

:mod:`rollgym.envs.web.gen.kinds` writes the eleven kinds in these terms. A site is the generated-world core's
world (:mod:`rollgym.envs.genworld.schema`) over fixed tables: ``users`` are its parties, ``items`` its item
catalogue and ``records`` what users keep about items; a :class:`FieldSpec` is a
:class:`~rollgym.envs.genworld.schema.WorldField`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from rollgym.envs.genworld.schema import ValueKind

FieldType = Literal["money", "int", "rating", "enum", "date", "text"]
"""WebGen's value kinds: six of the generated-world core's :data:`~rollgym.envs.genworld.schema.ValueKind`."""


@dataclass(frozen=True)
class FieldSpec:
    """One column of a kind's items.

    Attributes:
        key: Column name, e.g. ``"price"``.
        label: What pages call it, e.g. ``"Price"``.
        type: ``money`` (stored in cents), ``int``, ``rating`` (one decimal, 1.0 to 5.0), ``enum``, ``date``
            (ISO) or ``text``.
        lo, hi: Range of numbers (dollars for money), or of day offsets for dates.
        choices: Values of an ``enum``; ``("{P}",)`` draws them from proper words, ``("{PERSON}",)`` from names.
        unit: Shown after int values, e.g. ``"min"``.
        sort: Listings can be sorted by it.
        filter: Listings can be filtered by it (enums).
        editable: Editors can change it on the item page.
        lookup: Varied enough to be the answer of a lookup task.
        create: The new-item form asks for it (editable, money, enum and text fields are always asked).
        words: The superlatives of sorting by it, ``(lowest first, highest first)``, e.g. ``("cheapest", ...)``.
    """

    key: str
    label: str
    type: FieldType
    lo: int = 0
    hi: int = 0
    choices: tuple[str, ...] = ()
    unit: str = ""
    sort: bool = False
    filter: bool = False
    editable: bool = False
    lookup: bool = False
    words: tuple[str, str] = ("lowest", "highest")
    create: bool = False

    @property
    def name(self) -> str:
        """The column's name (its ``key``, as a :class:`~rollgym.envs.genworld.schema.WorldField` names it)."""
        return self.key

    @property
    def value_kind(self) -> ValueKind:
        """Its type (its ``type``)."""
        return self.type


@dataclass(frozen=True)
class RecordSpec:
    """What users keep on a site about items: orders, replies, reservations, loans, ...

    Attributes:
        table_label: ``(singular, plural)``, e.g. ``("order", "orders")``.
        verb: The button that creates one on an item's page, e.g. ``"Buy now"``.
        phrase: How a goal says it, e.g. ``"order"`` in "order 2 of X".
        fields: Extra columns the creation form asks for (int, date or text fields).
        total: ``(item money field, record int field or "")``: the record's total is their product.
        initial: Status of a new record; ``cancelled``: status after cancelling; ``history``: other seeded statuses.
        cancel: The button that cancels one.
        public: Records are shown on the item's page (replies, reviews, comments).
        update: The record field an owner can change afterwards, if any.
        consumes: ``(item int field, record int field or "")``: a new record takes that many from the item's
            field (one when the record field is ``""``) and cancelling gives them back (shop stock, library copies).
    """

    table_label: tuple[str, str]
    verb: str
    phrase: str
    fields: tuple[FieldSpec, ...] = ()
    total: tuple[str, str] | None = None
    initial: str = "active"
    cancelled: str = "cancelled"
    history: tuple[str, ...] = ()
    cancel: str = "Cancel"
    public: bool = False
    update: str | None = None
    consumes: tuple[str, str] | None = None


@dataclass(frozen=True)
class TemplateSpec:
    """A task template of a kind: a mechanism with its options, e.g. ``("cheapest", "extreme", field="price")``."""

    name: str
    mechanism: str
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Kind:
    """A domain kind; see the module docstring."""

    key: str
    site_words: tuple[str, ...]
    item: tuple[str, str]
    category_label: str
    categories: dict[str, tuple[str, ...]]
    name_patterns: tuple[str, ...]
    adjectives: tuple[str, ...]
    code_label: str
    code_prefix: str
    fields: tuple[FieldSpec, ...]
    record: RecordSpec
    favorites: tuple[str, str, str]
    roles: tuple[str, str]
    editor_can: tuple[str, ...] = ("edit", "archive", "create")
    members_create: bool = False
    tagline: str = ""
    templates: tuple[TemplateSpec, ...] = ()

    def field(self, key: str) -> FieldSpec:
        """The item field ``key``."""
        for f in self.fields:
            if f.key == key:
                return f
        raise KeyError(f"{self.key} items have no field {key!r}")

    def record_field(self, key: str) -> FieldSpec:
        """The record field ``key``."""
        for f in self.record.fields:
            if f.key == key:
                return f
        raise KeyError(f"{self.key} records have no field {key!r}")

    @property
    def singular(self) -> str:
        """The item noun, e.g. ``"product"``."""
        return self.item[0]

    @property
    def plural(self) -> str:
        """The item noun in the plural, e.g. ``"products"``."""
        return self.item[1]


def T(name: str, mechanism: str, **options: Any) -> TemplateSpec:
    """A :class:`TemplateSpec`."""
    return TemplateSpec(name, mechanism, options)


