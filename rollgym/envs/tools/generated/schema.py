"""App schemas: entities, typed fields with constraints, relations and domain actions, drawn from a seed.

An :class:`AppSchema` is everything a generated app is: its entities (a *party*, an
optional *item* catalogue, a *record* that links them and an optional *child* of the
record), each a list of :class:`Field` s with a type (text, email, int, money, date,
enum, bool or a reference to another entity), constraints (required, unique, editable,
bounds, allowed values) and the operations its tools offer; and the record's domain
:class:`Action` s, each moving the record's status with preconditions (a flag on the
record, a flag on its party, enough stock in a counter of its item) and effects (a date
stamp, a counter drawn down or given back).

:func:`generate_schema` draws one schema from a :class:`~rollgym.envs.tools.generated.domains.Domain`
and a variant number; which fields, constraints, operations, actions and preconditions
are in varies with the variant. :meth:`AppSchema.digest` hashes the structure only
(not the app's name), so two apps that differ only by name count as one: the app pool
keeps schemas distinct by it, and ``test_unseen`` apps are disjoint from ``train`` by it.

Example:
    >>> from rollgym.envs.tools.generated.domains import DOMAINS
    >>> schema = generate_schema(DOMAINS[0], 0)
    >>> schema.record.table, schema.actions[0].verb
    ('loans', 'check_out')
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from rollgym.core.seeding import stable_int
from rollgym.envs.genworld.schema import EntityRole, ValueKind, words
from rollgym.envs.tools.generated.domains import AUTHORS, BRANDS, CITIES, METHODS, TIERS, Domain

FieldKind = Literal["text", "email", "int", "money", "date", "enum", "bool", "ref"]
"""ToolGen's value kinds: the generated-world core's :data:`~rollgym.envs.genworld.schema.ValueKind` but
``rating``. :data:`EntityRole` is the core's."""
OPS = ("search", "get", "create", "update", "delete", "stats")


@dataclass(frozen=True)
class Field:
    """One column of an entity.

    Attributes:
        name: The column and argument name.
        kind: Its type; money is stored in cents and shown in dollars, dates as ``YYYY-MM-DD``.
        required: Creating a row needs it (otherwise it may be left out and stays empty).
        unique: No two rows share a value.
        editable: The update tool may change it (codes, references, statuses and stamps are not).
        values: The allowed values of an enum.
        low, high: Bounds a value must keep (ints: the value; money: cents).
        spread: The range generated rows draw from (ints and money in whole units; dates in days from today).
        ref: For references, the entity referred to.
        role: What the field means to the workflow: ``label`` (how people name a row), ``code``, ``status``,
            ``flag`` (an action's precondition), ``quantity``, ``counter``, ``amount``, ``stamp`` or ``""``.
    """

    name: str
    kind: FieldKind
    required: bool = True
    unique: bool = False
    editable: bool = True
    values: tuple[str, ...] = ()
    low: int = 0
    high: int = 0
    spread: tuple[int, int] = (0, 0)
    ref: str = ""
    role: str = ""

    @property
    def words(self) -> str:
        """The field's name as words (``due_on`` -> ``due on``)."""
        return words(self.name)

    @property
    def value_kind(self) -> ValueKind:
        """Its type (a :class:`~rollgym.envs.genworld.schema.WorldField`'s)."""
        return self.kind

    def structure(self) -> list[Any]:
        """What the field is, JSON-ready (for the schema digest)."""
        return [self.name, self.kind, self.required, self.unique, self.editable, list(self.values), self.low,
                self.high, list(self.spread), self.ref, self.role]


@dataclass(frozen=True)
class Entity:
    """A table of the app, its fields and the tool operations it offers."""

    name: str
    table: str
    role: EntityRole
    fields: tuple[Field, ...]
    label: str
    ops: frozenset[str]

    def field(self, name: str) -> Field:
        """The field called ``name``."""
        return next(f for f in self.fields if f.name == name)

    def has(self, name: str) -> bool:
        """Whether the entity has a field called ``name``."""
        return any(f.name == name for f in self.fields)

    @property
    def words(self) -> str:
        """The entity's name as words (``repair_job`` -> ``repair job``)."""
        return words(self.name)

    @property
    def plural_words(self) -> str:
        """The table's name as words."""
        return words(self.table)

    def with_role(self, role: str) -> list[Field]:
        """The fields that play ``role``."""
        return [f for f in self.fields if f.role == role]

    def structure(self) -> list[Any]:
        """What the entity is, JSON-ready."""
        return [self.name, self.table, self.role, self.label, sorted(self.ops), [f.structure() for f in self.fields]]


@dataclass(frozen=True)
class Action:
    """A domain action on the record entity: ``verb`` moves a record from one of ``sources`` to ``target``.

    Attributes:
        verb: The tool's verb (``check_out``) and the prompt's (``check out``).
        sources: Statuses it may start from.
        target: The status it sets.
        stamp: A date field set to today's date.
        flag: A bool field of the record that must be true first (``paid``), or ``None``.
        party_flag: A bool field of the record's party that must be true first (``active``), or ``None``.
        counter: ``-1`` draws the item's counter down by the record's quantity (it must be large enough),
            ``+1`` gives it back, ``0`` leaves it; only when the record was in one of ``counted`` statuses.
        counted: The source statuses in which ``counter`` applies.
    """

    verb: str
    sources: tuple[str, ...]
    target: str
    stamp: str
    flag: str | None = None
    party_flag: str | None = None
    counter: int = 0
    counted: tuple[str, ...] = ()

    @property
    def words(self) -> str:
        """The verb as words (``check_out`` -> ``check out``)."""
        return words(self.verb)

    def structure(self) -> list[Any]:
        """What the action is, JSON-ready."""
        return [self.verb, list(self.sources), self.target, self.stamp, self.flag, self.party_flag, self.counter,
                list(self.counted)]


@dataclass(frozen=True)
class AppSchema:
    """A generated app: its name, its entities and the record's domain actions."""

    app_id: str
    title: str
    domain: str
    entities: tuple[Entity, ...]
    actions: tuple[Action, ...]
    code_prefix: str
    counter: str | None = None
    _digest: list[str] = field(default_factory=list, repr=False, compare=False)

    def entity(self, name: str) -> Entity:
        """The entity called ``name``."""
        return next(e for e in self.entities if e.name == name)

    def _by_role(self, role: str) -> Entity | None:
        return next((e for e in self.entities if e.role == role), None)

    @property
    def party(self) -> Entity:
        """The party entity (people: members, patients, guests)."""
        found = self._by_role("party")
        assert found is not None
        return found

    @property
    def record(self) -> Entity:
        """The record entity (loans, appointments, bookings)."""
        found = self._by_role("record")
        assert found is not None
        return found

    @property
    def item(self) -> Entity | None:
        """The catalogue entity, when the app has one."""
        return self._by_role("item")

    @property
    def child(self) -> Entity | None:
        """The child entity of the record (payments or comments), when the app has one."""
        return self._by_role("child")

    def action(self, verb: str) -> Action:
        """The action called ``verb``."""
        return next(a for a in self.actions if a.verb == verb)

    @property
    def statuses(self) -> tuple[str, ...]:
        """The record's statuses, initial first."""
        return self.record.field("status").values

    def structure(self) -> dict[str, Any]:
        """The schema without its name: entities, fields, constraints, operations and actions."""
        return {"entities": [e.structure() for e in self.entities], "actions": [a.structure() for a in self.actions],
                "code_prefix": self.code_prefix, "counter": self.counter}

    def digest(self) -> str:
        """A 16-hex-digit content hash of :meth:`structure` (the same on every machine)."""
        if not self._digest:
            text = json.dumps(self.structure(), sort_keys=True)
            self._digest.append(hashlib.sha256(text.encode("utf-8")).hexdigest()[:16])
        return self._digest[0]


# -- drawing a schema ------------------------------------------------------------------------------------


def _money(name: str, low: int, high: int, *, required: bool = True, role: str = "") -> Field:
    return Field(name, "money", required, low=0, high=high * 1000, spread=(low, high), role=role)


def _int(name: str, low: int, high: int, *, required: bool = True, role: str = "", editable: bool = True) -> Field:
    return Field(name, "int", required, editable=editable, low=0, high=max(high * 10, 10), spread=(low, high),
                 role=role)


def _enum(name: str, values: tuple[str, ...], *, required: bool = True, role: str = "",
          editable: bool = True) -> Field:
    return Field(name, "enum", required, editable=editable, values=values, role=role)


def _number(spec: tuple[str, str, int, int], **kwargs: Any) -> Field:
    name, kind, low, high = spec
    return _money(name, low, high, **kwargs) if kind == "money" else _int(name, low, high, **kwargs)


def _subset(rng: np.random.Generator, values: tuple[str, ...], least: int) -> tuple[str, ...]:
    """At least ``least`` of ``values``, in their original order."""
    k = int(rng.integers(min(least, len(values)), len(values) + 1))
    keep = sorted(int(i) for i in rng.choice(len(values), size=k, replace=False))
    return tuple(values[i] for i in keep)


def _ops(rng: np.random.Generator, *optional: tuple[str, float]) -> frozenset[str]:
    base = {"search", "get", "create"}
    return frozenset(base | {op for op, p in optional if rng.random() < p})


def _party(domain: Domain, rng: np.random.Generator, needs_active: bool) -> Entity:
    # a new party needs only a name and an email: the rest may stay empty
    pool = [Field("phone", "text", False), _enum("city", _subset(rng, CITIES, 4), required=False),
            _enum("tier", TIERS, required=False), _money("credit_limit", 50, 2000, required=False),
            Field("active", "bool", False), Field("joined_on", "date", False, spread=(-900, -1)),
            _int("points", 0, 900, required=False)]
    chosen = sorted(int(i) for i in rng.choice(len(pool), size=int(rng.integers(2, 5)), replace=False))
    extras = [pool[i] for i in chosen]
    if needs_active and not any(f.name == "active" for f in extras):
        extras.append(pool[4])
    fields = (Field("name", "text", unique=True, role="label"), Field("email", "email", unique=True), *extras)
    name, table = domain.party
    ops = _ops(rng, ("update", 1.0), ("delete", 0.6), ("stats", 0.3))
    return Entity(name, table, "party", fields, "name", ops)


def _item(domain: Domain, rng: np.random.Generator, counter: str | None) -> Entity:
    name, table, label = domain.item
    category, values = domain.category
    numbers = [spec for spec in domain.item_numbers if spec[0] == counter or rng.random() < 0.8]
    if not numbers:
        numbers = [domain.item_numbers[-1]]
    fields = [Field(label, "text", unique=True, role="label"), _enum(category, _subset(rng, values, 3))]
    fields += [_number(spec, role="counter" if spec[0] == counter else "") for spec in numbers]
    ops = _ops(rng, ("update", 1.0), ("delete", 0.5), ("stats", 0.5))
    return Entity(name, table, "item", tuple(fields), label, ops)


def _record(domain: Domain, rng: np.random.Generator, party: Entity, item: Entity | None, flag: bool,
            counter: bool, actions: list[Action]) -> Entity:
    name, table, _ = domain.record
    fields = [Field("code", "text", unique=True, editable=False, role="code"),
              Field(f"{party.name}_id", "ref", editable=False, ref=party.name)]
    if item is not None:
        fields.append(Field(f"{item.name}_id", "ref", editable=False, ref=item.name))
    fields.append(_enum("status", domain.statuses, editable=False, role="status"))
    if counter:
        fields.append(_int(domain.quantity, 1, 3, role="quantity", editable=False))
    first, *rest = domain.record_numbers
    fields.append(_number(first, role="amount"))
    fields += [_number(spec, required=False) for spec in rest if rng.random() < 0.6]
    if rng.random() < 0.8:
        fields.append(Field(domain.date, "date", spread=(-40, 40)))
    if rng.random() < 0.75:
        fields.append(Field(domain.text, "text", False))
    if rng.random() < 0.75:
        kind, values = domain.kind
        fields.append(_enum(kind, _subset(rng, values, 3), required=False))
    if flag or rng.random() < 0.5:
        fields.append(Field(domain.flag, "bool", False, role="flag"))
    fields += [Field(a.stamp, "date", False, editable=False, role="stamp") for a in actions]
    ops = _ops(rng, ("update", 1.0), ("delete", 0.6), ("stats", 0.8))
    return Entity(name, table, "record", tuple(fields), "code", ops)


def _child(record: Entity, rng: np.random.Generator) -> Entity:
    ref = Field(f"{record.name}_id", "ref", editable=False, ref=record.name)
    if rng.random() < 0.5:
        fields = (ref, _money("amount", 5, 200, role="amount"), _enum("method", METHODS),
                  Field("paid_on", "date", spread=(-30, 0)))
        name, table = "payment", "payments"
    else:
        fields = (ref, _enum("author", AUTHORS), Field("body", "text"), Field("posted_on", "date", spread=(-30, 0)))
        name, table = "comment", "comments"
    ops = _ops(rng, ("update", 0.4), ("delete", 0.7))
    return Entity(name, table, "child", fields, "", ops)


def generate_schema(domain: Domain, variant: int, attempt: int = 0) -> AppSchema:
    """Draw variant ``variant`` of ``domain`` (a pure function of its arguments).

    ``attempt`` redraws a variant whose structure another variant already has (see
    :mod:`rollgym.envs.tools.generated.catalog`).
    """
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(
        [stable_int(f"toolgen-schema:{domain.key}") % 2**63, int(variant), int(attempt)])))
    brands = [BRANDS[int(i)] for i in np.random.Generator(np.random.PCG64(
        stable_int(f"toolgen-brands:{domain.key}") % 2**63)).permutation(len(BRANDS))]
    brand = brands[variant % len(brands)]
    s0, s1, s2, sx = domain.statuses
    v1, v2, vx = domain.verbs
    has_item = rng.random() < 0.85
    counter = domain.counter if has_item and domain.counter is not None and rng.random() < 0.7 else None
    flag = rng.random() < 0.75
    party_flag = rng.random() < 0.35
    actions = [Action(v1, (s0,), s1, f"{s1}_on", domain.flag if flag else None, "active" if party_flag else None,
                      -1 if counter else 0, (s0,) if counter else ())]
    if rng.random() < 0.85:
        actions.append(Action(v2, (s1,), s2, f"{s2}_on"))
    if rng.random() < 0.85:
        actions.append(Action(vx, (s0, s1), sx, f"{sx}_on", counter=1 if counter else 0,
                              counted=(s1,) if counter else ()))
    party = _party(domain, rng, party_flag)
    item = _item(domain, rng, counter) if has_item else None
    record = _record(domain, rng, party, item, flag, counter is not None, actions)
    entities = [party, *([item] if item else []), record]
    if rng.random() < 0.35:
        entities.append(_child(record, rng))
    for entity in entities:
        names = [f.name for f in entity.fields]
        assert len(names) == len(set(names)), (domain.key, entity.name, names)
    return AppSchema(f"{brand.lower()}_{domain.key}", f"{brand} {domain.noun}", domain.key, tuple(entities),
                     tuple(actions), domain.record[2], counter)


def renamed(schema: AppSchema, app_id: str, title: str) -> AppSchema:
    """The same schema under another name (its digest does not change)."""
    return replace(schema, app_id=app_id, title=title, _digest=[])
