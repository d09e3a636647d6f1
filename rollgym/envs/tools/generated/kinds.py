"""Every single-app template kind, and the templates of one app."""

from __future__ import annotations

from rollgym.envs.tools.generated.actions import ActionBatch, DoAction, FixThenAct
from rollgym.envs.tools.generated.chains import Owner, RemoveParty, UpdateOwner
from rollgym.envs.tools.generated.edits import CreateChild, CreateItem, CreateParty, CreateRecord, Delete, Update
from rollgym.envs.tools.generated.lookups import FilterList, Lookup, TopParty, Total
from rollgym.envs.tools.generated.schema import AppSchema
from rollgym.envs.tools.generated.templates import AppTemplate

KINDS: dict[str, type[AppTemplate]] = {cls.kind: cls for cls in (
    Lookup, FilterList, Total, TopParty, Update, CreateRecord, CreateParty, CreateItem, Delete, CreateChild,
    DoAction, FixThenAct, ActionBatch, Owner, UpdateOwner, RemoveParty)}
"""Every single-app template kind by name."""


def app_templates(schema: AppSchema) -> dict[str, AppTemplate]:
    """Every template of one app, by name, in a fixed order."""
    out: dict[str, AppTemplate] = {}
    for cls in KINDS.values():
        for target in cls.targets(schema):
            template = cls(schema, target)
            out[template.name] = template
    return out
