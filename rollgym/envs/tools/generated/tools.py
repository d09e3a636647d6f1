"""Typed tools generated from a schema: CRUD, search, aggregates and domain actions with preconditions.

Every tool is a real Python function with a signature and a Google-style docstring
made from the schema (enum fields become ``Literal`` types, optional ones ``X | None``),
so that :func:`rollgym.core.toolschema.function_schema` derives its OpenAI schema exactly
as it does for the hand-written ToolWorld apps, and :func:`call` validates arguments with
:func:`~rollgym.core.toolschema.check_arguments` before anything runs. Per entity:

* ``<app>_<entity>_search``: text query, a filter per enum, flag and reference field,
  ranges for numbers and dates, sorting and pages;
* ``<app>_<entity>_get``, ``_create``, ``_update``, ``_delete``: with the schema's
  constraints (required, unique, bounds, allowed values, existing references, and no
  deleting a row that others still refer to);
* ``<app>_<entity>_stats``: count, sum, min, max and average of a number, grouped by a field;
* ``<app>_<record>_<verb>``: a domain action, refused with ``precondition_failed`` unless
  the record's status, flag, party and item stock allow it.

Failures come back as ``{"error": {"type", "message"}}`` with one sentence; no SQL or
traceback reaches the agent. All SQL is parameterised; identifiers come from the schema.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal

from rollgym.core.toolschema import function_schema
from rollgym.envs.tools.api import Session, ToolError, ToolSpec, call_tool, like, page_of
from rollgym.envs.tools.generated.schema import Action, AppSchema, Entity, Field
from rollgym.envs.tools.generated.store import TODAY, quote

Impl = Callable[[Session, dict[str, Any]], dict[str, Any]]
Param = tuple[str, Any, Any, str]
"""A tool parameter: ``(name, annotation, default, description)``."""
_EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]{1,120}\.[A-Za-z]{2,24}$")
MAX_TEXT = 300


def make_tool(name: str, description: str, params: list[Param], impl: Impl,
              app: str, writes: bool) -> ToolSpec:
    """A tool from its parts: ``params`` are ``(name, annotation, default, description)``, with
    ``inspect.Parameter.empty`` as the default of a required one. The function gets a real signature and
    docstring, and its schema comes from :func:`~rollgym.core.toolschema.function_schema`."""
    defaults = {p: d for p, _, d, _ in params if d is not inspect.Parameter.empty}

    def tool_function(session: Session, **arguments: Any) -> dict[str, Any]:
        return impl(session, {**defaults, **arguments})

    signature = [inspect.Parameter("session", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Session)]
    signature += [inspect.Parameter(p, inspect.Parameter.KEYWORD_ONLY, default=d, annotation=a)
                  for p, a, d, _ in params]
    tool_function.__name__ = tool_function.__qualname__ = name
    tool_function.__signature__ = inspect.Signature(signature)  # type: ignore[attr-defined]
    tool_function.__annotations__ = {"session": Session, **{p: a for p, a, _, _ in params}, "return": dict}
    lines = [description]
    if params:
        lines += ["", "Args:", *(f"    {p}: {doc}" for p, _, _, doc in params)]
    tool_function.__doc__ = "\n".join(lines)
    return ToolSpec(name, app, writes, tool_function, function_schema(tool_function, skip=("session",)))


def call(session: Session, tools: dict[str, ToolSpec], name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Run one tool of ``tools`` for the agent; never raises and never shows internals."""
    return call_tool(session, name, arguments, tools)


# -- values in and out -------------------------------------------------------------------------------------


def annotation(f: Field, optional: bool = False) -> Any:
    """The Python type of a field's argument."""
    types = {"text": str, "email": str, "date": str, "int": int, "money": float, "bool": bool, "ref": int}
    base: Any = types.get(f.kind)
    if f.kind == "enum":
        base = Literal[f.values]
    return base | None if optional else base


def describe(f: Field, entity: Entity) -> str:
    """One line on what a field holds and which values it takes."""
    if f.kind == "ref":
        return f"The id of the {f.ref.replace('_', ' ')}."
    text = f"The {f.words}"
    if f.kind == "money":
        text += f" in dollars (0 to {f.high // 100})"
    elif f.kind == "int":
        text += f" ({f.low} to {f.high})"
    elif f.kind == "date":
        text += " as YYYY-MM-DD"
    elif f.kind == "email":
        text += " (an email address)"
    elif f.kind == "bool":
        text += " (true or false)"
    if f.unique:
        text += f"; no two {entity.plural_words} share it"
    return text + "."


def to_db(f: Field, value: Any) -> Any:
    """An argument's value as stored, after checking the field's constraints; raises a clear ToolError."""
    if f.kind in ("text", "email"):
        text = " ".join(str(value).split())
        if not text:
            raise ToolError("invalid_arguments", f"{f.name} must not be empty.")
        if len(text) > MAX_TEXT:
            raise ToolError("invalid_arguments", f"{f.name} must be at most {MAX_TEXT} characters.")
        if f.kind == "email":
            if not _EMAIL.match(text):
                raise ToolError("invalid_arguments", f"{f.name} must be an email address like ana@example.com.")
            return text.lower()
        return text
    if f.kind == "int":
        if not f.low <= value <= f.high:
            raise ToolError("invalid_arguments", f"{f.name} must be between {f.low} and {f.high}.")
        return int(value)
    if f.kind == "money":
        cents = round(value * 100)
        if abs(cents - value * 100) > 1e-6 or not f.low <= cents <= f.high:
            raise ToolError("invalid_arguments", f"{f.name} must be an amount in dollars between {f.low // 100} and "
                                                 f"{f.high // 100}, with at most 2 decimals.")
        return int(cents)
    if f.kind == "date":
        return parse_day(value, f.name)
    if f.kind == "bool":
        return int(bool(value))
    return value


def parse_day(value: str, name: str) -> str:
    """A ``YYYY-MM-DD`` argument, normalised, or a clear ToolError."""
    try:
        parsed = datetime.strptime(str(value).strip()[:10], "%Y-%m-%d")
    except ValueError:
        raise ToolError("invalid_arguments",
                        f"{name} must be a date like 2025-06-04, got {str(value)[:40]!r}.") from None
    if not 1990 <= parsed.year <= 2100:
        raise ToolError("invalid_arguments", f"{name} must be a date between 1990 and 2100.")
    return parsed.strftime("%Y-%m-%d")


def from_db(f: Field, value: Any) -> Any:
    """A stored value as the agent sees it (money in dollars, flags as true or false)."""
    if value is None:
        return None
    if f.kind == "money":
        return round(value / 100, 2)
    if f.kind == "bool":
        return bool(value)
    return value


# -- per-entity tools ----------------------------------------------------------------------------------


class EntityTools:
    """The tools of one entity of one app."""

    def __init__(self, schema: AppSchema, entity: Entity) -> None:
        self.schema = schema
        self.entity = entity
        self.app = schema.app_id
        self.prefix = f"{schema.app_id}_{entity.name}"
        self.key = f"{entity.name}_id"
        self.columns = ", ".join(["id", *(quote(f.name) for f in entity.fields)])
        self.select = f"SELECT {self.columns} FROM {quote(entity.table)}"
        self.children = [(e, f) for e in schema.entities for f in e.fields if f.kind == "ref" and f.ref == entity.name]

    def row(self, r: Any) -> dict[str, Any]:
        """One stored row as the agent sees it."""
        out = {self.key: r[0]}
        for f, value in zip(self.entity.fields, r[1:]):
            out[f.name] = from_db(f, value)
        return out

    def fetch(self, session: Session, row_id: int) -> Any:
        """The stored row with this id, or a ``not_found`` error."""
        found = session.db(self.app).execute(f"{self.select} WHERE id = ?", (row_id,)).fetchone()
        if found is None:
            raise ToolError("not_found", f"There is no {self.entity.words} with {self.key} {row_id}.")
        return found

    def name_of(self, r: Any) -> str:
        """How a row is named in messages: its label, or its id."""
        if self.entity.label:
            return f"{self.entity.words} {r[1 + [f.name for f in self.entity.fields].index(self.entity.label)]}"
        return f"{self.entity.words} {r[0]}"

    def check_refs(self, session: Session, values: dict[str, Any]) -> None:
        for f in self.entity.fields:
            if f.kind == "ref" and f.name in values:
                target = self.schema.entity(f.ref)
                if session.db(self.app).execute(f"SELECT 1 FROM {quote(target.table)} WHERE id = ?",
                                                (values[f.name],)).fetchone() is None:
                    raise ToolError("not_found", f"There is no {target.words} with {f.name} {values[f.name]}.")

    def check_unique(self, session: Session, values: dict[str, Any], row_id: int | None) -> None:
        for f in self.entity.fields:
            if f.unique and f.name in values:
                clash = session.db(self.app).execute(
                    f"SELECT id FROM {quote(self.entity.table)} WHERE {quote(f.name)} = ? AND id != ?",
                    (values[f.name], -1 if row_id is None else row_id)).fetchone()
                if clash is not None:
                    raise ToolError("conflict", f"Another {self.entity.words} already has {f.name} "
                                                f"{values[f.name]!r}.")

    # -- the tools ---------------------------------------------------------------------------------------
    def filters(self) -> list[tuple[str, Any, Any, str, Field, str]]:
        """Filter arguments shared by search and stats: ``(name, type, default, doc, field, op)``."""
        out: list[tuple[str, Any, Any, str, Field, str]] = []
        for f in self.entity.fields:
            if f.kind in ("enum", "bool"):
                out.append((f.name, annotation(f, True), None, f"Only {self.entity.plural_words} with this {f.words}.",
                            f, "="))
            elif f.kind == "ref":
                out.append((f.name, int | None, None, f"Only {self.entity.plural_words} of this "
                                                      f"{f.ref.replace('_', ' ')}.", f, "="))
            elif f.kind in ("int", "money"):
                kind = float if f.kind == "money" else int
                unit = " in dollars" if f.kind == "money" else ""
                out.append((f"min_{f.name}", kind | None, None, f"Only {f.words} at least this{unit}.", f, ">="))
                out.append((f"max_{f.name}", kind | None, None, f"Only {f.words} at most this{unit}.", f, "<="))
            elif f.kind == "date" and f.role != "stamp":
                out.append((f"{f.name}_from", str | None, None, f"Only {f.words} on or after this date (YYYY-MM-DD).",
                            f, ">="))
                out.append((f"{f.name}_to", str | None, None, f"Only {f.words} on or before this date (YYYY-MM-DD).",
                            f, "<="))
        return out

    def where(self, arguments: dict[str, Any], query: str | None) -> tuple[str, list[Any]]:
        clauses: list[str] = ["1 = 1"]
        params: list[Any] = []
        texts = [f for f in self.entity.fields if f.kind in ("text", "email")]
        if query:
            clauses.append("(" + " OR ".join(f"{quote(f.name)} LIKE ? ESCAPE '\\'" for f in texts) + ")")
            params += [like(query)] * len(texts)
        for name, _, _, _, f, op in self.filters():
            value = arguments.get(name)
            if value is None:
                continue
            if f.kind == "money":
                value = round(min(max(float(value), -1e12), 1e12) * 100)
            elif f.kind == "date":
                value = parse_day(value, name)
            elif f.kind == "bool":
                value = int(value)
            clauses.append(f"{quote(f.name)} {op} ?")
            params.append(value)
        return " AND ".join(clauses), params

    def search_tool(self) -> ToolSpec:
        e = self.entity
        has_text = any(f.kind in ("text", "email") for f in e.fields)
        sortable = tuple(["id", *(f.name for f in e.fields if f.kind not in ("ref", "bool"))])
        params: list[Param] = []
        if has_text:
            texts = ", ".join(f.words for f in e.fields if f.kind in ("text", "email"))
            params.append(("query", str, "", f"Text to look for in the {texts} (case does not matter)."))
        params += [(n, a, d, doc) for n, a, d, doc, _, _ in self.filters()]
        params += [("sort", Literal[sortable], e.label or "id", "The field to sort by."),
                   ("descending", bool, False, "Sort from largest to smallest."),
                   ("page", int, 1, "Page number, starting at 1."),
                   ("page_size", int, 10, "Results per page (1-50).")]

        def impl(session: Session, a: dict[str, Any]) -> dict[str, Any]:
            if len(a.get("query") or "") > MAX_TEXT:
                raise ToolError("invalid_arguments", f"query must be at most {MAX_TEXT} characters.")
            where, values = self.where(a, a.get("query"))
            order = "DESC" if a["descending"] else "ASC"
            sql = f"{self.select} WHERE {where} ORDER BY {quote(a['sort'])} {order}, id {order}"
            return page_of(session.db(self.app), sql, values, a["page"], a["page_size"], self.row)

        return make_tool(f"{self.prefix}_search", f"Search the {e.plural_words} of {self.schema.title}; every "
                         "filter is optional and they combine.", params, impl, self.app, writes=False)

    def get_tool(self) -> ToolSpec:
        def impl(session: Session, a: dict[str, Any]) -> dict[str, Any]:
            return self.row(self.fetch(session, a[self.key]))

        return make_tool(f"{self.prefix}_get", f"Show one {self.entity.words} of {self.schema.title} with every field.",
                         [(self.key, int, inspect.Parameter.empty, f"The {self.entity.words}'s id.")], impl, self.app,
                         writes=False)

    def creatable(self) -> list[Field]:
        """The fields the create tool takes (the code, status and stamps are set by the app)."""
        return [f for f in self.entity.fields if f.role not in ("code", "status", "stamp")]

    def create_tool(self) -> ToolSpec:
        e = self.entity
        fields = self.creatable()
        params: list[Param] = [(f.name, annotation(f), inspect.Parameter.empty, describe(f, e))
                               for f in fields if f.required]
        params += [(f.name, annotation(f, True), None, describe(f, e)) for f in fields if not f.required]
        status = e.field("status").values[0] if e.has("status") else None

        def impl(session: Session, a: dict[str, Any]) -> dict[str, Any]:
            values = {f.name: to_db(f, a[f.name]) for f in fields if a.get(f.name) is not None}
            for f in fields:
                if f.kind == "bool" and f.name not in values:
                    values[f.name] = 0
            self.check_refs(session, values)
            self.check_unique(session, values, None)
            db = session.db(self.app)
            new_id = int(db.execute(f"SELECT COALESCE(MAX(id), 0) + 1 FROM {quote(e.table)}").fetchone()[0])
            values["id"] = new_id
            if status is not None:
                values["status"] = status
            if e.has("code"):
                values["code"] = f"{self.schema.code_prefix}-{9000 + new_id}"
            names = list(values)
            db.execute(f"INSERT INTO {quote(e.table)} ({', '.join(quote(n) for n in names)}) VALUES "
                       f"({', '.join('?' for _ in names)})", [values[n] for n in names])
            return self.row(self.fetch(session, new_id))

        words = f" It starts as {status}; its code is assigned." if status else ""
        return make_tool(f"{self.prefix}_create", f"Create a {e.words} in {self.schema.title}.{words}", params, impl,
                         self.app, writes=True)

    def update_tool(self) -> ToolSpec:
        e = self.entity
        fields = [f for f in e.fields if f.editable and f.role not in ("code", "status", "stamp")]
        params: list[Param] = [(self.key, int, inspect.Parameter.empty, f"The {e.words} to change.")]
        params += [(f.name, annotation(f, True), None, f"New value (leave out to keep). {describe(f, e)}")
                   for f in fields]

        def impl(session: Session, a: dict[str, Any]) -> dict[str, Any]:
            self.fetch(session, a[self.key])
            values = {f.name: to_db(f, a[f.name]) for f in fields if a.get(f.name) is not None}
            if not values:
                raise ToolError("invalid_arguments", f"Give at least one field to change: "
                                                     f"{', '.join(f.name for f in fields)}.")
            self.check_unique(session, values, a[self.key])
            sets = ", ".join(f"{quote(n)} = ?" for n in values)
            session.db(self.app).execute(f"UPDATE {quote(e.table)} SET {sets} WHERE id = ?",
                                         [*values.values(), a[self.key]])
            return self.row(self.fetch(session, a[self.key]))

        return make_tool(f"{self.prefix}_update", f"Change fields of one {e.words} of {self.schema.title}; fields "
                         "left out keep their value.", params, impl, self.app, writes=True)

    def delete_tool(self) -> ToolSpec:
        def impl(session: Session, a: dict[str, Any]) -> dict[str, Any]:
            found = self.fetch(session, a[self.key])
            db = session.db(self.app)
            for child, f in self.children:
                n = db.execute(f"SELECT COUNT(*) FROM {quote(child.table)} WHERE {quote(f.name)} = ?",
                               (a[self.key],)).fetchone()[0]
                if n:
                    raise ToolError("conflict", f"{self.name_of(found).capitalize()} still has {n} "
                                                f"{child.plural_words if n > 1 else child.words}; delete "
                                                f"{'them' if n > 1 else 'it'} first.")
            db.execute(f"DELETE FROM {quote(self.entity.table)} WHERE id = ?", (a[self.key],))
            return {"deleted": True, self.key: a[self.key]}

        refs = ", ".join(c.plural_words for c, _ in self.children)
        note = f" Refused while {refs} still refer to it." if refs else ""
        return make_tool(f"{self.prefix}_delete", f"Delete one {self.entity.words} of {self.schema.title} for good."
                         f"{note}", [(self.key, int, inspect.Parameter.empty, f"The {self.entity.words} to delete.")],
                         impl, self.app, writes=True)

    def stats_tool(self) -> ToolSpec | None:
        e = self.entity
        numbers = tuple(f.name for f in e.fields if f.kind in ("int", "money"))
        groups = tuple(f.name for f in e.fields if f.kind in ("enum", "ref", "bool"))
        if not numbers and not groups:
            return None
        params: list[Param] = []
        if groups:
            params.append(("group_by", Literal[groups] | None, None, "Give one result per value of this field."))
        if numbers:
            params.append(("field", Literal[numbers] | None, None,
                           "The number to add up (sum, min, max, average); leave out to only count."))
        params += [(n, a, d, doc) for n, a, d, doc, _, _ in self.filters()]

        def impl(session: Session, a: dict[str, Any]) -> dict[str, Any]:
            where, values = self.where(a, None)
            by, what = a.get("group_by"), a.get("field")
            target = e.field(what) if what else None
            measure = (f", SUM({quote(what)}), MIN({quote(what)}), MAX({quote(what)}), AVG({quote(what)})"
                       if what else "")
            key = quote(by) if by else "NULL"
            grouped = f" GROUP BY {key} ORDER BY {key}" if by else ""
            sql = f"SELECT {key}, COUNT(*){measure} FROM {quote(e.table)} WHERE {where}{grouped}"
            out = []
            for r in session.db(self.app).execute(sql, values).fetchall():
                group: dict[str, Any] = {"count": r[1]}
                if by:
                    group = {by: from_db(e.field(by), r[0]), **group}
                if target is not None:
                    scale = 100 if target.kind == "money" else 1
                    group.update({"sum": _scaled(r[2], scale), "min": _scaled(r[3], scale),
                                  "max": _scaled(r[4], scale), "average": _scaled(r[5], scale)})
                out.append(group)
            return {"groups": out, "group_by": by, "field": what}

        return make_tool(f"{self.prefix}_stats", f"Count {e.plural_words} of {self.schema.title} and add up a number, "
                         "over all of them or per value of a field; filters as in search.", params, impl, self.app,
                         writes=False)

    def tools(self) -> list[ToolSpec]:
        """This entity's tools, in a fixed order."""
        makers = {"search": self.search_tool, "get": self.get_tool, "create": self.create_tool,
                  "update": self.update_tool, "delete": self.delete_tool, "stats": self.stats_tool}
        built = [makers[op]() for op in ("search", "get", "create", "update", "delete", "stats")
                 if op in self.entity.ops]
        return [t for t in built if t is not None]


def _scaled(value: Any, scale: int) -> Any:
    return None if value is None else round(value / scale, 2)


def action_tool(schema: AppSchema, action: Action) -> ToolSpec:
    """The tool of one domain action: it checks every precondition, then moves the record."""
    record, party, item = schema.record, schema.party, schema.item
    tools = EntityTools(schema, record)
    key = tools.key
    app = schema.app_id
    columns = [f.name for f in record.fields]
    quantity = next((f.name for f in record.fields if f.role == "quantity"), None)

    def impl(session: Session, a: dict[str, Any]) -> dict[str, Any]:
        found = tools.fetch(session, a[key])
        row = dict(zip(columns, found[1:]))
        name = f"{record.words.capitalize()} {row['code']}"
        db = session.db(app)
        if row["status"] not in action.sources:
            raise ToolError("precondition_failed", f"Cannot {action.words} {name}: it is {row['status']}, and "
                                                   f"{action.words} needs it {' or '.join(action.sources)}.")
        if action.flag and not row.get(action.flag):
            raise ToolError("precondition_failed", f"Cannot {action.words} {name} while its "
                                                   f"{action.flag.replace('_', ' ')} is false.")
        if action.party_flag:
            owner = db.execute(f"SELECT name, {quote(action.party_flag)} FROM {quote(party.table)} WHERE id = ?",
                               (row[f"{party.name}_id"],)).fetchone()
            if owner is not None and not owner[1]:
                raise ToolError("precondition_failed", f"Cannot {action.words} {name}: {party.words} {owner[0]} is "
                                                       f"not {action.party_flag.replace('_', ' ')}.")
        moved = 0
        if action.counter and row["status"] in action.counted and item is not None and schema.counter and quantity:
            item_id = row[f"{item.name}_id"]
            stock = db.execute(f"SELECT {quote(item.label)}, {quote(schema.counter)} FROM {quote(item.table)} "
                               "WHERE id = ?", (item_id,)).fetchone()
            moved = action.counter * int(row[quantity])
            if stock is not None and stock[1] + moved < 0:
                raise ToolError("precondition_failed", f"Cannot {action.words} {name}: only {stock[1]} "
                                                       f"{schema.counter.replace('_', ' ')} of {stock[0]!r} left, "
                                                       f"and it needs {row[quantity]}.")
            db.execute(f"UPDATE {quote(item.table)} SET {quote(schema.counter)} = {quote(schema.counter)} + ? "
                       "WHERE id = ?", (moved, item_id))
        db.execute(f"UPDATE {quote(record.table)} SET status = ?, {quote(action.stamp)} = ? WHERE id = ?",
                   (action.target, TODAY, a[key]))
        return tools.row(tools.fetch(session, a[key]))

    needs = [f"it is {' or '.join(action.sources)}"]
    if action.flag:
        needs.append(f"{action.flag} is true")
    if action.party_flag:
        needs.append(f"its {party.words} is {action.party_flag.replace('_', ' ')}")
    effect = f"sets status to {action.target} and {action.stamp} to today"
    if action.counter and item is not None and schema.counter:
        verb = "takes" if action.counter < 0 else "gives back"
        effect += (f"; {verb} its {quantity} {'from' if action.counter < 0 else 'to'} the {item.words}'s "
                   f"{schema.counter.replace('_', ' ')}")
        if action.counter < 0:
            needs.append(f"the {item.words} has enough {schema.counter.replace('_', ' ')}")
    description = (f"{action.words.capitalize()} a {record.words} of {schema.title}: {effect}. Only when "
                   f"{', '.join(needs)}.")
    return make_tool(f"{app}_{record.name}_{action.verb}", description,
                     [(key, int, inspect.Parameter.empty, f"The {record.words}.")], impl, app, writes=True)


def build_tools(schema: AppSchema) -> dict[str, ToolSpec]:
    """Every tool of an app, by name, in a fixed order."""
    out: dict[str, ToolSpec] = {}
    for entity in schema.entities:
        for spec in EntityTools(schema, entity).tools():
            out[spec.name] = spec
    for action in schema.actions:
        spec = action_tool(schema, action)
        out[spec.name] = spec
    return out


def tool_names(schema: AppSchema) -> list[str]:
    """The names of an app's tools, without building them (for counting)."""
    names = []
    for entity in schema.entities:
        for op in ("search", "get", "create", "update", "delete", "stats"):
            if op not in entity.ops:
                continue
            if op == "stats" and not any(f.kind in ("int", "money", "enum", "ref", "bool") for f in entity.fields):
                continue
            names.append(f"{schema.app_id}_{entity.name}_{op}")
    return names + [f"{schema.app_id}_{schema.record.name}_{a.verb}" for a in schema.actions]
