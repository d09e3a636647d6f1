"""Task templates generated per schema: the base classes and the helpers every kind shares.

A template kind (an :class:`AppTemplate` subclass in :mod:`.lookups`, :mod:`.edits`,
:mod:`.actions` or :mod:`.chains`; all listed in :mod:`.kinds`) lists the *targets* it can
take in a schema (``lookup`` takes a field of an entity, ``action`` a domain action, ...);
one template is one kind on one target of one app, named ``<app>:<kind>:<target>``. Like
ToolWorld's hand-written templates, each has four short methods: ``sample`` draws public
parameters from the app's base database, ``prompt`` words them, ``solve`` is the reference
solution through the same tools an agent calls (it sees only the parameters and the tool
results), and ``expect`` states the required end state from the base database, graded by
the shared state-diff grader with the whole-world gate.

Questions ask for a value, a name or a list of names, never a bare count, and the task
source redraws any instance that a constant answer would solve.

Every kind is a template kind of the generated-world core (:class:`rollgym.envs.genworld.templates.TemplateKind`:
its ``operation`` is the ``kind``; it ``asks`` when it has an answer); the kinds WebGen has too (``lookup``,
``create_record``, ``create_item``, ``update``) subclass the core's shared kind.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, ClassVar

import numpy as np

from rollgym.envs.genworld.schema import EntityRole, dollars, money_text
from rollgym.envs.genworld.templates import TemplateKind, WorldTemplate
from rollgym.envs.tools.generated.domains import PHRASES
from rollgym.envs.tools.generated.schema import Action, AppSchema, Entity, Field
from rollgym.envs.tools.generated.store import TODAY, GenApp, day
from rollgym.envs.tools.tasks.base import Call, Template, call, every
from rollgym.verifiers.tools import AnswerKind

Apps = dict[str, GenApp]
Row = dict[str, Any]
Step = Generator[Call, Any, Any]

GROUPS = ("lookup", "edit", "action", "chain", "cross_app")
"""Scenario groups of templates (one env id each)."""


class GenTemplate(Template[Apps], TemplateKind, WorldTemplate):
    """One kind of generated task on one target; subclasses set ``kind``, ``group`` and the four methods
    (:class:`~rollgym.envs.tools.tasks.base.Template`'s, over the built apps by id)."""

    kind: ClassVar[str]
    group: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "kind" in vars(cls):
            cls.operation = cls.kind
        if isinstance(vars(cls).get("answer_kind"), str):
            cls.asks = cls.answer_kind != "none"

    @property
    def template_kind(self) -> TemplateKind:
        """The template itself: each kind is a class."""
        return self

    def __init__(self, name: str, apps: tuple[str, ...], target: str) -> None:
        self.name = name
        self.apps = apps
        self.target = target


# -- words and values ------------------------------------------------------------------------------------


def shown(f: Field, value: Any) -> str:
    """A stored value as a prompt states it."""
    if f.kind == "money":
        return money_text(value)
    if f.kind == "bool":
        return "true" if value else "false"
    return str(value)


def answer_of(f: Field, value: Any) -> tuple[Any, AnswerKind]:
    """The expected answer of a question about a stored value, and its kind."""
    if f.kind == "money":
        return dollars(value), "number"
    if f.kind == "int":
        return int(value), "number"
    return str(value), "text"


def fresh_value(f: Field, old: Any, rng: np.random.Generator) -> Any:
    """A stored value for ``f`` different from ``old``, drawn from the field's spread."""
    for _ in range(20):
        low, high = f.spread
        if f.kind == "enum":
            value: Any = f.values[int(rng.integers(len(f.values)))]
        elif f.kind == "bool":
            value = 0 if old else 1
        elif f.kind == "int":
            value = int(rng.integers(low, high + 1))
        elif f.kind == "money":
            value = int(rng.integers(low, high + 1)) * 100 + int(rng.choice([0, 25, 50, 75, 90]))
        elif f.kind == "date":
            value = day(int(rng.integers(1, 60)))
        elif f.kind == "email":
            value = f"contact{int(rng.integers(100, 1000))}@mail.example.org"
        elif f.name == "phone":
            value = f"+1-555-{int(rng.integers(100, 1000))}-{int(rng.integers(1000, 10000))}"
        else:
            a, b = (PHRASES[int(i)] for i in rng.choice(len(PHRASES), size=2, replace=False))
            value = f"{a}, {b} #{int(rng.integers(100, 1000))}"
        if value != old:
            return value
    return None


def as_argument(f: Field, value: Any) -> Any:
    """A stored value as a tool argument (money in dollars, flags as booleans)."""
    if f.kind == "money":
        return dollars(value)
    if f.kind == "bool":
        return bool(value)
    return value


def arguments(entity: Entity, values: dict[str, Any]) -> dict[str, Any]:
    """Stored values of ``entity``'s fields as tool arguments (see :func:`as_argument`)."""
    return {k: as_argument(entity.field(k), v) for k, v in values.items()}


def listable(labels: list[str]) -> bool:
    """Whether names can be answered as a comma-separated list (no commas, semicolons or 'and' inside)."""
    return all("," not in x and ";" not in x and " and " not in f" {x.lower()} " for x in labels)


# -- reading the base database ---------------------------------------------------------------------------


def handle(entity: Entity, row: Row) -> str:
    """How a prompt names a row: the record's code, the item's or party's label."""
    return str(row[entity.label])


def ref_of(schema: AppSchema, role: str) -> str:
    """The record's reference field to its party or item (``member_id``)."""
    target = schema.party if role == "party" else schema.item
    assert target is not None
    return f"{target.name}_id"


def tool(schema: AppSchema, entity: Entity, op: str) -> str:
    """A tool's name."""
    return f"{schema.app_id}_{entity.name}_{op}"


def eligible(app: GenApp, action: Action, rows: list[Row], stock: dict[int, int] | None = None,
             ignore_flag: bool = False) -> bool:
    """Whether ``action`` succeeds on every one of ``rows`` in turn (stock drawn down as it goes)."""
    schema = app.schema
    parties = {r["id"]: r for r in app.table(schema.party)}
    item = schema.item
    left = dict(stock) if stock is not None else (
        {r["id"]: r[schema.counter] for r in app.table(item)} if item is not None and schema.counter else {})
    quantity = next((f.name for f in schema.record.fields if f.role == "quantity"), None)
    for row in rows:
        if row["status"] not in action.sources:
            return False
        if action.flag and not row.get(action.flag) and not ignore_flag:
            return False
        if action.party_flag and not parties[row[ref_of(schema, "party")]].get(action.party_flag):
            return False
        if action.counter and row["status"] in action.counted and item is not None and quantity:
            key = row[ref_of(schema, "item")]
            left[key] += action.counter * row[quantity]
            if left[key] < 0:
                return False
    return True


def action_changes(app: GenApp, action: Action, rows: list[Row], extra: Row | None = None
                   ) -> dict[tuple[str, str, int], Row]:
    """The updates ``action`` makes on ``rows`` (status and stamp, item counters), as Expectation updates."""
    schema = app.schema
    out: dict[tuple[str, str, int], Row] = {}
    item = schema.item
    stock = {r["id"]: r[schema.counter] for r in app.table(item)} if item is not None and schema.counter else {}
    quantity = next((f.name for f in schema.record.fields if f.role == "quantity"), None)
    for row in rows:
        out[(schema.app_id, schema.record.table, row["id"])] = {**(extra or {}), "status": action.target,
                                                                action.stamp: TODAY}
        if action.counter and row["status"] in action.counted and item is not None and quantity and schema.counter:
            key = row[ref_of(schema, "item")]
            stock[key] += action.counter * row[quantity]
            out[(schema.app_id, item.table, key)] = {schema.counter: stock[key]}
    return out


# -- reference-solution steps ----------------------------------------------------------------------------


def find(schema: AppSchema, entity: Entity, label: str) -> Step:
    """Look a row up by its label through the search tool and return it."""
    found = yield from every(tool(schema, entity, "search"), query=label)
    return next(r for r in found if str(r.get(entity.label)) == label)


def get(schema: AppSchema, entity: Entity, row_id: int) -> Step:
    """Fetch one row by id."""
    result = yield from call(tool(schema, entity, "get"), **{f"{entity.name}_id": row_id})
    return result


def owner_of(schema: AppSchema, code: str) -> Step:
    """The party row that holds the record with this code."""
    record = yield from find(schema, schema.record, code)
    party = yield from get(schema, schema.party, record[ref_of(schema, "party")])
    return party


class AppTemplate(GenTemplate):
    """A template over one app; ``self.schema`` is public (the tools document it)."""

    def __init__(self, schema: AppSchema, target: str) -> None:
        super().__init__(f"{schema.app_id}:{self.kind}:{target}", (schema.app_id,), target)
        self.schema = schema

    @classmethod
    def targets(cls, schema: AppSchema) -> list[str]:
        """The targets this kind can take in ``schema`` (empty: the kind does not apply)."""
        raise NotImplementedError

    def app(self, apps: Apps) -> GenApp:
        """The template's app."""
        return apps[self.schema.app_id]

    def entity_field(self) -> tuple[Entity, Field]:
        """The ``entity.field`` target."""
        entity, name = self.target.split(".")
        e = self.schema.entity(entity)
        return e, e.field(name)

    @property
    def field(self) -> Field:
        """The field of an ``entity.field`` target."""
        return self.entity_field()[1]

    def entity_of(self, role: EntityRole) -> Entity:
        """The app's entity that plays ``role`` (a kind that needs the optional item or child targets only
        apps that have it)."""
        found = {"party": self.schema.party, "item": self.schema.item, "record": self.schema.record,
                 "child": self.schema.child}[role]
        assert found is not None, (self.name, role)
        return found


# -- new records ------------------------------------------------------------------------------------


def record_values(schema: AppSchema, rng: np.random.Generator) -> dict[str, Any]:
    """Values of the record's required plain fields for a new record."""
    values: dict[str, Any] = {}
    for f in schema.record.fields:
        if f.required and f.kind in ("money", "int", "date", "text") and f.role not in ("code", "status", "stamp"):
            values[f.name] = 1 if f.role == "quantity" else fresh_value(f, None, rng)
    return values


def values_text(entity: Entity, values: dict[str, Any]) -> str:
    parts = [f"{entity.field(k).words} {shown(entity.field(k), v)}" for k, v in values.items()]
    return ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1] if parts else ""


def create_record(schema: AppSchema, party: str, item: str | None, values: dict[str, Any]) -> Step:
    """Reference step: look up the party (and item) and create the record."""
    owner = yield from find(schema, schema.party, party)
    arguments = {ref_of(schema, "party"): owner[f"{schema.party.name}_id"]}
    if item is not None and schema.item is not None:
        found = yield from find(schema, schema.item, item)
        arguments[ref_of(schema, "item")] = found[f"{schema.item.name}_id"]
    for k, v in values.items():
        arguments[k] = as_argument(schema.record.field(k), v)
    created = yield from call(tool(schema, schema.record, "create"), **arguments)
    return created


def record_insert(app: GenApp, party: str, item: str | None, values: dict[str, Any]) -> dict[str, Any]:
    schema = app.schema
    row: dict[str, Any] = {ref_of(schema, "party"): next(r["id"] for r in app.table(schema.party)
                                                         if r["name"] == party),
                           "status": schema.statuses[0], **values}
    if item is not None and schema.item is not None:
        row[ref_of(schema, "item")] = next(r["id"] for r in app.table(schema.item) if handle(schema.item, r) == item)
    return row
